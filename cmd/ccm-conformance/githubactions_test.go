package main_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// exampleRunner plays GitHub's runner for the GitHub Actions example of
// docs/providers.md: a user who is not root, in the group that owns the
// Docker socket, with a HOME and a workspace of its own. Its sudo is
// sudo's: the runner's shell expands the line, and the command runs as
// root with sudo's environment (HOME and PATH reset unless preserved).
type exampleRunner struct {
	uid, gid, dockerGID uint32
	// home, bin and work are the runner's HOME, the directory on its PATH
	// that go install would fill, and its workspace (the checkout).
	home, bin, work string
}

// sudoPath is the PATH sudo gives a command (Debian's secure_path).
const sudoPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// exampleRunLines are the `run:` lines of the GitHub Actions example in
// docs/providers.md, in order.
func exampleRunLines(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "providers.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```yaml\n(name: ccm-conformance\n.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/providers.md: no GitHub Actions example (a yaml block starting \"name: ccm-conformance\")")
	}
	var lines []string
	for _, m := range regexp.MustCompile(`(?m)^\s+- run: (.*)$`).FindAllSubmatch(block[1], -1) {
		lines = append(lines, strings.TrimSpace(string(m[1])))
	}
	if len(lines) == 0 {
		t.Fatal("docs/providers.md: the GitHub Actions example has no run steps")
	}
	return lines
}

// newExampleRunner makes the runner's user (a uid no account has) and its
// directories under one world-readable temporary directory, removed after
// the test; bin gets copies of the harness and the reference provider.
func newExampleRunner(t *testing.T) *exampleRunner {
	t.Helper()
	socket := "/var/run/docker.sock"
	if h, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		socket = h
	}
	st, err := os.Stat(socket)
	if err != nil {
		t.Skipf("the runner's user needs the Docker socket's group: %v", err)
	}
	r := &exampleRunner{dockerGID: st.Sys().(*syscall.Stat_t).Gid}
	for id := 2000; ; id++ {
		if _, err := user.LookupId(strconv.Itoa(id)); err != nil {
			r.uid, r.gid = uint32(id), uint32(id)
			break
		}
	}
	base, err := os.MkdirTemp("", "ccmc-gha-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	r.home, r.bin, r.work = filepath.Join(base, "home"), filepath.Join(base, "bin"), filepath.Join(base, "work")
	for _, d := range []string{r.home, r.bin, r.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{base, r.bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{r.home, r.work} {
		if err := os.Chown(d, int(r.uid), int(r.gid)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"ccm-conformance", "reference-cloud", "reference-cloud-driver"} {
		data, err := os.ReadFile(filepath.Join(binDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.bin, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// env is the runner's environment: its HOME, and setup-go's PATH with the
// directory go install fills first.
func (r *exampleRunner) env() []string {
	env := []string{"HOME=" + r.home, "PATH=" + r.bin + ":" + sudoPath, "USER=runner"}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	return env
}

// shell runs line with bash as the runner, in its workspace.
func (r *exampleRunner) shell(t *testing.T, line string) result {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir, cmd.Env = r.work, r.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: r.uid, Gid: r.gid, Groups: []uint32{r.dockerGID}}}
	return runCmd(t, cmd)
}

// sudo runs a "sudo [--preserve-env=A,B] CMD ARGS" line: the runner's
// shell expands CMD ARGS, and they run as root with sudo's environment.
// As with Ubuntu's sudoers (secure_path, as on GitHub's runners), PATH is
// always sudoPath, preserved or not, and CMD is looked up there: a CLI in
// the runner's ~/go/bin must be named through env "PATH=$PATH".
func (r *exampleRunner) sudo(t *testing.T, line string) result {
	t.Helper()
	rest := strings.TrimPrefix(line, "sudo ")
	env := map[string]string{"HOME": "/root"}
	if opt, after, ok := strings.Cut(rest, " "); ok && strings.HasPrefix(opt, "--preserve-env=") {
		for _, name := range strings.Split(strings.TrimPrefix(opt, "--preserve-env="), ",") {
			for _, kv := range r.env() {
				if v, ok := strings.CutPrefix(kv, name+"="); ok {
					env[name] = v
				}
			}
		}
		rest = after
	} else if strings.HasPrefix(rest, "-") {
		t.Fatalf("the example's %q: a sudo option this test does not play", line)
	}
	env["PATH"] = sudoPath
	if strings.ContainsAny(stripComment(rest), "|;&<>`") {
		t.Fatalf("the example's %q: a sudo line with shell operators, which this test does not play", line)
	}
	expanded := r.shell(t, `printf '%s\0' `+rest)
	if expanded.code != 0 {
		t.Fatalf("the runner's shell could not expand %q: %s", rest, expanded.stderr)
	}
	argv := strings.Split(strings.TrimSuffix(expanded.stdout, "\x00"), "\x00")
	path := argv[0]
	if !strings.Contains(path, "/") {
		var ok bool
		if path, ok = lookPathIn(argv[0], sudoPath); !ok {
			t.Fatalf("the example's %q: sudo: %s: command not found (secure_path %s)", line, argv[0], sudoPath)
		}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Dir = r.work
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return runCmd(t, cmd)
}

// stripComment drops a trailing shell comment (" # ...") from a line.
func stripComment(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		return line[:i]
	}
	return line
}

func lookPathIn(name, path string) (string, bool) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// runGitHubActionsExample runs the `run:` steps of docs/providers.md's
// GitHub Actions example as GitHub's runner would, the sudo steps as root
// and the rest as the runner's user, with the reference CCM's image as
// "your CCM image" and the reference kind profile as
// ci/my-cloud-kind.yaml. Four steps are stood in for, each logged:
// installing debootstrap (the machine has it: .ci/run installs it), go
// install (the module is not published yet: the CLI built from this
// checkout is put where it would land) and the builds of the two images
// (built from this checkout by the test). It returns the result of the
// last step, the run, and its run directory. The test must run as root.
func runGitHubActionsExample(t *testing.T, image, echo string) (result, string) {
	t.Helper()
	lines := exampleRunLines(t)
	keepSysctl(t, "net/ipv4/ip_unprivileged_port_start")
	r := newExampleRunner(t)
	// The provider's checkout holds its kind profile: here the reference
	// one, naming the reference CCM's image as "your CCM image".
	profile, err := os.ReadFile(testbin.ReferenceKindProfile(t, t.TempDir(), r.bin, image, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.work, "ci"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.work, "ci", "my-cloud-kind.yaml"), profile, 0o644); err != nil {
		t.Fatal(err)
	}
	var last result
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "sudo apt-get install"):
			t.Logf("step %d, %q: stood in for (.ci/run installs the packages)", i+1, line)
			continue
		case strings.HasPrefix(line, "go install github.com/ccm-conformance/ccm-conformance/cmd/ccm-conformance@"):
			t.Logf("step %d, %q: stood in for (the CLI built from this checkout is in %s)", i+1, line, r.bin)
			continue
		case line == "make image" || strings.HasPrefix(line, "make image "):
			t.Logf("step %d, %q: stood in for (the reference CCM image %s, named by ci/my-cloud-kind.yaml)", i+1, line, image)
			continue
		case strings.Contains(line, "images.sh --targets echo-server"):
			keepImageTag(t, framework.DefaultEchoImage)
			if out, err := exec.Command("docker", "tag", echo, framework.DefaultEchoImage).CombinedOutput(); err != nil {
				t.Fatalf("docker tag %s %s: %v: %s", echo, framework.DefaultEchoImage, err, out)
			}
			t.Logf("step %d, %q: stood in for (the echo server image built from this checkout, tagged %s)", i+1, line, framework.DefaultEchoImage)
			continue
		case strings.HasPrefix(line, "sudo "):
			last = r.sudo(t, line)
		default:
			last = r.shell(t, line)
		}
		if i == len(lines)-1 && !strings.HasPrefix(line, "ccm-conformance run ") {
			t.Fatalf("the example's last step is %q, not a ccm-conformance run", line)
		}
		if last.code != 0 && i < len(lines)-1 {
			t.Fatalf("the example's step %d, %q, exited %d\nstdout:\n%s\nstderr:\n%s", i+1, line, last.code, tail(last.stdout, 40), tail(last.stderr, 40))
		}
		t.Logf("step %d, %q: exit %d", i+1, line, last.code)
	}
	artifacts := filepath.Join(r.work, "_artifacts")
	// upload-artifact runs as the runner: what the run wrote is the
	// runner's, and nothing of root's is left in its cache.
	checkOwner(t, artifacts, r.uid)
	checkOwner(t, filepath.Join(r.home, ".cache", "ccm-conformance"), r.uid)
	return last, artifacts
}

// keepImageTag puts the Docker tag ref back on the image it names now
// once the test is done, or removes it if it names none.
func keepImageTag(t *testing.T, ref string) {
	t.Helper()
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", ref).Output()
	was := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		args := []string{"image", "rm", ref}
		if err == nil && was != "" {
			args = []string{"tag", was, ref}
		}
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			t.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
	})
}

// keepSysctl puts the sysctl at /proc/sys/<name> back as it was once the
// test is done: a step of the example sets it as root, as it would on a
// runner that is thrown away after the job.
func keepSysctl(t *testing.T, name string) {
	t.Helper()
	path := filepath.Join("/proc/sys", name)
	was, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("sysctl %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(path, was, 0o644); err != nil {
			t.Errorf("putting sysctl %s back to %s: %v", name, strings.TrimSpace(string(was)), err)
		}
	})
}

// checkOwner fails t if a file under dir is not uid's.
func checkOwner(t *testing.T, dir string, uid uint32) {
	t.Helper()
	var others []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if owner := info.Sys().(*syscall.Stat_t).Uid; owner != uid {
			others = append(others, fmt.Sprintf("%s (uid %d)", path, owner))
		}
		return nil
	})
	if err != nil {
		t.Errorf("walking %s: %v", dir, err)
	}
	if len(others) > 0 {
		t.Errorf("%d files under %s are not the runner's (uid %d): %s", len(others), dir, uid, strings.Join(others[:min(len(others), 5)], ", "))
	}
}
