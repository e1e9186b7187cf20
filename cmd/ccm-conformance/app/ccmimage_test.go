package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
)

// ccm image: bad input is exit 2 in one line naming it, found before
// anything is built or loaded (there is no go and no docker on PATH).
func TestCCMImageBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Setenv(k8sbin.EnvCacheDir, t.TempDir())
	t.Setenv("PATH", t.TempDir())
	moduleProfile := write("vsphere.yaml", vsphereModuleProfile)
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no profile", []string{"ccm", "image"}, "--provider: the provider profile is required"},
		{"a bad profile", []string{"ccm", "image", "--provider", write("bad.yaml", strings.Replace(vsphereModuleProfile, "v1.36.0\n", "latest\n", 1))}, `ccm.binary.module.version: Invalid value: "latest"`},
		{"a missing profile", []string{"ccm", "image", "--provider", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{
			"a CCM run from an image",
			[]string{"ccm", "image", "--provider", write("image.yaml", "apiVersion: ccm-conformance.dev/v1alpha1\nkind: Profile\nname: p\nccm:\n  image:\n    reference: example.com/ccm:v1\ncapabilities: [InstancesV2]\n")},
			"image.yaml: the CCM is ccm.image, not a binary: ccm image makes an image of ccm.binary.module or ccm.binary.path",
		},
		{"a bad tag", []string{"ccm", "image", "--provider", moduleProfile, "--tag", "Bad:Tag"}, `--tag "Bad:Tag": repository can only contain`},
		{"a bad revision", []string{"ccm", "image", "--provider", moduleProfile, "--revision", "v1.36.0"}, `--revision "v1.36.0": want a commit`},
		{"no Docker engine", []string{"ccm", "image", "--provider", moduleProfile}, "ccm image loads the image into Docker: the local Docker engine does not answer: docker version: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(tt.args, &stdout, &stderr)
			if code != runner.ExitHarnessError {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, runner.ExitHarnessError, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, stderr.String())
			}
			if strings.Count(stderr.String(), "\n") != 1 || stdout.Len() != 0 {
				t.Errorf("want one line on stderr and nothing on stdout; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
		})
	}
}

// taggedBinary builds a small static program in a git checkout tagged
// v1.36.0, so that its build info names a module version and a commit as a
// CCM's release build does (the go command stamps both from the tag).
func taggedBinary(t *testing.T, dir string) (binary, commit string) {
	t.Helper()
	mod := t.TempDir()
	for file, text := range map[string]string{
		"go.mod":  "module example.com/hello-ccm\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh := func(env []string, name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null"}
	sh(git, "git", "init", "-q")
	sh(git, "git", "add", ".")
	sh(git, "git", "commit", "-q", "-m", "hello")
	sh(git, "git", "tag", "v1.36.0")
	commit = sh(git, "git", "rev-parse", "HEAD")
	binary = filepath.Join(dir, "hello-ccm")
	sh([]string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + runtime.GOARCH}, "go", "build", "-buildvcs=true", "-trimpath", "-o", binary, ".")
	return binary, commit
}

// TestIntegrationCCMImage makes the image of a ccm.binary.path profile's
// CCM, loads it into the local Docker engine under a tag of its own, and
// checks what Docker says of it; then removes it.
func TestIntegrationCCMImage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Skipf("the Docker engine does not answer: %v: %s", err, out)
	}
	dir := t.TempDir()
	_, commit := taggedBinary(t, dir)
	profilePath := filepath.Join(dir, "hello.yaml")
	if err := os.WriteFile(profilePath, []byte("apiVersion: ccm-conformance.dev/v1alpha1\nkind: Profile\nname: hello\nccm:\n  binary:\n    path: ./hello-ccm\ncapabilities: [InstancesV2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("ccm-conformance/ccm-image-test:t%d", time.Now().UnixNano())
	var stdout, stderr bytes.Buffer
	code := Main([]string{"ccm", "image", "--provider", profilePath, "--tag", ref}, &stdout, &stderr)
	t.Cleanup(func() {
		if out, err := exec.Command("docker", "rmi", ref).CombinedOutput(); err != nil && code == 0 {
			t.Errorf("docker rmi %s: %v: %s", ref, err, out)
		}
	})
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if stdout.String() != ref+"\n" {
		t.Errorf("stdout = %q, want the reference alone", stdout.String())
	}
	for _, w := range []string{"images: docker load: Loaded image: " + ref, "org.opencontainers.image.version=v1.36.0", "org.opencontainers.image.revision=" + commit} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", ref, "--format",
		`{{.Config.User}} {{json .Config.Entrypoint}} {{index .Config.Labels "org.opencontainers.image.version"}} {{index .Config.Labels "org.opencontainers.image.revision"}} {{index .Config.Labels "org.opencontainers.image.source"}}`).CombinedOutput()
	if err != nil {
		t.Fatalf("docker image inspect %s: %v: %s", ref, err, out)
	}
	want := `65532:65532 ["/usr/local/bin/hello-ccm"] v1.36.0 ` + commit + ` https://example.com/hello-ccm`
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("docker image inspect %s:\n  %s\nwant\n  %s", ref, got, want)
	}
}
