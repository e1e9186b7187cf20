package k8sbin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/filelock"
)

const (
	// outputTailLines is how many of the last lines of the go command's
	// output a BuildError keeps.
	outputTailLines = 40
	// buildCancelDelay is how long a cancelled go command gets to stop after
	// an interrupt before it is killed.
	buildCancelDelay = 5 * time.Second
)

// BuildError is a go command that failed. Its message carries the command
// line and the last lines of the command's output.
type BuildError struct {
	// Command is the command line, led by the environment it set.
	Command string
	// Dir is the directory it ran in.
	Dir string
	// Output holds the last lines of its output.
	Output []string
	// Err is how it failed.
	Err error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (in %s): %v", e.Command, e.Dir, e.Err)
	if len(e.Output) > 0 {
		b.WriteString("\nlast lines of output:")
		for _, l := range e.Output {
			b.WriteString("\n  " + l)
		}
	}
	return b.String()
}

func (e *BuildError) Unwrap() error { return e.Err }

// build builds the binaries names, all of req.Version and missing from the
// cache under root, with one go command, unless another caller builds them
// first: each binary's lock is held until this build ends. It returns their
// paths.
func build(ctx context.Context, req Request, root string, names []string) (map[string]string, error) {
	// Locks are taken in one order, so that two callers never each hold
	// one the other waits for.
	names = slices.Sorted(slices.Values(names))
	paths := map[string]string{}
	var dir string
	for _, n := range names {
		p, err := BinaryPath(root, n, req.Version)
		if err != nil {
			return nil, err
		}
		paths[n], dir = p, filepath.Dir(p)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the binary cache: %w", err)
	}
	for _, n := range names {
		lockPath := filepath.Join(dir, n+".lock")
		unlock, err := filelock.Lock(ctx, lockPath, req.ProgressInterval, func(waited time.Duration) {
			fmt.Fprintf(req.Progress, "waiting for another build of %s %s to finish (lock %s), %s elapsed\n",
				n, req.Version, lockPath, waited.Round(time.Second))
		})
		if err != nil {
			return nil, fmt.Errorf("locking the cache of %s %s: %w", n, req.Version, err)
		}
		defer unlock()
	}
	// Built by another caller while this one waited for the locks.
	names = slices.DeleteFunc(names, func(n string) bool { return isFile(paths[n]) })
	if len(names) == 0 {
		return paths, nil
	}
	what := strings.Join(names, ", ")
	req.Name = names[0] // the module to build from: etcd's or Kubernetes's

	fmt.Fprintf(req.Progress, "building %s %s from the Go module proxy into %s; a cold build takes %s, later runs reuse the cache\n",
		what, req.Version, dir, coldBuildEstimate(names))
	modDir, err := os.MkdirTemp(dir, ".module-"+req.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("creating a build module for %s %s: %w", what, req.Version, err)
	}
	defer os.RemoveAll(modDir)

	prepared, err := prepareModule(ctx, req, modDir)
	if err != nil {
		return nil, fmt.Errorf("preparing the build of %s %s: %w", what, req.Version, err)
	}
	if err := os.WriteFile(filepath.Join(modDir, "go.mod"), prepared.goMod, 0o644); err != nil {
		return nil, fmt.Errorf("preparing the build of %s %s: %w", what, req.Version, err)
	}

	// The go command writes into a directory of its own beside the cache,
	// from which each binary lands in the cache by rename, complete.
	outDir, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return nil, fmt.Errorf("building %s %s: %w", what, req.Version, err)
	}
	defer os.RemoveAll(outDir)
	built := map[string]string{}
	var commands [][]string
	var mains []string
	for _, n := range names {
		built[n] = filepath.Join(outDir, n)
		if n == E2ELoadBalancers {
			// A test binary: go test -c of the package e2etest.go writes.
			pkg, err := writeE2ETestPackage(modDir)
			if err != nil {
				return nil, fmt.Errorf("building %s %s: %w", n, req.Version, err)
			}
			// go test -c names no package it compiles; a go build -v of
			// the packages the test imports first compiles them with
			// progress, and leaves go test the test package and the link.
			commands = append(commands,
				append([]string{"build", "-v", "-trimpath"}, e2eTestImports...),
				[]string{"test", "-c", "-trimpath", "-ldflags", prepared.ldflags, "-o", built[n], pkg})
			continue
		}
		mains = append(mains, n)
	}
	switch {
	case len(mains) == 1:
		// One package: -o names the file (etcd's package path ends in
		// /v3, which would not name the binary).
		commands = append([][]string{{"build", "-v", "-trimpath", "-ldflags", prepared.ldflags, "-o", built[mains[0]], mainPackage(mains[0])}}, commands...)
	case len(mains) > 1:
		// Several: -o names a directory, and each binary is named after
		// its package, k8s.io/kubernetes/cmd/<name> (and agnhost).
		args := []string{"build", "-v", "-trimpath", "-ldflags", prepared.ldflags, "-o", outDir + string(filepath.Separator)}
		for _, n := range mains {
			args = append(args, mainPackage(n))
		}
		commands = append([][]string{args}, commands...)
	}
	start := time.Now()
	compiled := 0
	for _, args := range commands {
		n, err := runGo(ctx, req, modDir, buildEnv(), args, func(n int) {
			fmt.Fprintf(req.Progress, "building %s %s: %d packages compiled, %s elapsed\n",
				what, req.Version, compiled+n, time.Since(start).Round(time.Second))
		})
		compiled += n
		if err != nil {
			return nil, fmt.Errorf("building %s %s: %w", what, req.Version, err)
		}
	}
	for _, n := range names {
		if err := os.Chmod(built[n], 0o755); err != nil {
			return nil, fmt.Errorf("building %s %s: %w", n, req.Version, err)
		}
		if prepared.info != nil {
			// Written before the binary lands, so that a cached binary
			// built here always has it.
			if err := writeBuildInfo(paths[n], *prepared.info); err != nil {
				return nil, fmt.Errorf("building %s %s: %w", n, req.Version, err)
			}
		}
		if err := os.Rename(built[n], paths[n]); err != nil {
			return nil, fmt.Errorf("building %s %s: %w", n, req.Version, err)
		}
	}
	where := dir
	if len(names) == 1 {
		where = paths[names[0]]
	}
	fmt.Fprintf(req.Progress, "built %s %s in %s (%d packages compiled): %s\n",
		what, req.Version, time.Since(start).Round(time.Second), compiled, where)
	return paths, nil
}

// buildEnv is the environment the go command runs with, beyond the caller's.
// It matches the flags the binaries were always built with, so builds share
// the go build cache. GOWORK=off keeps a go.work above the cache out of it.
func buildEnv() []string {
	return []string{"CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off"}
}

// coldBuildEstimate says how long building names takes on two cores with
// an empty go build cache (docs/local-cluster.md has the measurements).
func coldBuildEstimate(names []string) string {
	if len(names) == 1 {
		switch names[0] {
		case KubeAPIServer:
			return "about 10 minutes"
		case KubeControllerManager:
			return "about 10 minutes (3-4 once kube-apiserver is built)"
		case Kubelet:
			return "a few minutes once kube-apiserver is built"
		case KubeScheduler, KubeProxy, Kubeadm, Kubectl:
			return "a minute or two once kube-apiserver is built"
		}
		return "about a minute"
	}
	// kube-apiserver's packages are most of every other binary's.
	minutes := 0.0
	for _, n := range names {
		switch n {
		case KubeAPIServer:
			minutes += 10
		case KubeControllerManager:
			minutes += 3.5
		case Kubelet:
			minutes += 2
		default:
			minutes++
		}
	}
	if !slices.Contains(names, KubeAPIServer) {
		return fmt.Sprintf("up to %.0f minutes (less once kube-apiserver is built)", minutes+6.5)
	}
	return fmt.Sprintf("about %.0f minutes", minutes)
}

// moduleInfo is what `go mod download -json` reports about one module.
type moduleInfo struct {
	Path    string
	Version string
	Error   string
	Info    string // path of the .info file
	GoMod   string // path of the go.mod file
	// Origin is where the proxy got the module from, when it says (not
	// every proxy does, nor for every module).
	Origin *struct {
		VCS  string
		URL  string
		Hash string // the commit
		Ref  string // the tag, refs/tags/<version>
	}
}

// commit is the git commit the proxy reports for the module, or "".
func (m moduleInfo) commit() string {
	if m.Origin == nil || m.Origin.VCS != "git" || !isCommitHash(m.Origin.Hash) {
		return ""
	}
	return m.Origin.Hash
}

// preparedModule is what a build needs besides the package: the go.mod of
// the module that builds it, the linker flags, and the BuildInfo to keep.
type preparedModule struct {
	goMod   []byte
	ldflags string
	info    *BuildInfo // nil for binaries whose commit is not recorded (etcd)
}

// prepareModule downloads the module to build and returns the go.mod of the
// module that builds it, the linker flags and, for Kubernetes, the
// BuildInfo of the build.
func prepareModule(ctx context.Context, req Request, modDir string) (preparedModule, error) {
	module := etcdServerModule
	if req.Name != Etcd {
		module = kubernetesModule
	}
	// A bare go.mod makes modDir the main module, whatever lies above it.
	stub := []byte("module ccm-conformance.local/build/download\n")
	if err := os.WriteFile(filepath.Join(modDir, "go.mod"), stub, 0o644); err != nil {
		return preparedModule{}, err
	}
	info, err := downloadModule(ctx, req, modDir, module+"@"+req.Version)
	if err != nil {
		return preparedModule{}, err
	}
	upstream, err := os.ReadFile(info.GoMod)
	if err != nil {
		return preparedModule{}, fmt.Errorf("reading the go.mod of %s@%s: %w", module, req.Version, err)
	}
	if req.Name == Etcd {
		goMod, err := EtcdGoMod(upstream, req.Version)
		return preparedModule{goMod: goMod}, err
	}
	goMod, err := KubernetesGoMod(upstream, req.Version)
	if err != nil {
		return preparedModule{}, err
	}
	v, _ := parseKubernetesVersion(req.Version) // validated by withDefaults
	commit := info.commit()
	return preparedModule{
		goMod:   goMod,
		ldflags: kubernetesLDFlags(v, releaseTime(info.Info), commit),
		info:    &BuildInfo{Module: kubernetesModule, Version: req.Version, Commit: commit, Stamped: commit != ""},
	}, nil
}

// downloadModule runs `go mod download -json` in dir, with env added to
// the build's environment.
func downloadModule(ctx context.Context, req Request, dir, modVersion string, env ...string) (moduleInfo, error) {
	var out strings.Builder
	cmd := exec.CommandContext(ctx, req.Go, "mod", "download", "-json", modVersion)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), buildEnv()...), env...)
	cmd.Stdout = &out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	var info moduleInfo
	if err := json.Unmarshal([]byte(out.String()), &info); err != nil || runErr != nil || info.Error != "" || info.GoMod == "" {
		if runErr == nil && info.Error != "" {
			runErr = errors.New(info.Error)
		}
		if runErr == nil {
			runErr = fmt.Errorf("unexpected output %q", out.String())
		}
		lines := tailLines(stderr.String()+out.String(), outputTailLines)
		return info, &BuildError{Command: commandLine(req.Go, buildEnv(), cmd.Args[1:]), Dir: dir, Output: lines, Err: runErr}
	}
	return info, nil
}

// releaseTime returns the time the module proxy recorded for a release, as
// Kubernetes formats its build date, or "" if it is unknown.
func releaseTime(infoPath string) string {
	data, err := os.ReadFile(infoPath)
	if err != nil {
		return ""
	}
	var info struct{ Time time.Time }
	if json.Unmarshal(data, &info) != nil || info.Time.IsZero() {
		return ""
	}
	return info.Time.UTC().Format(time.RFC3339)
}

// kubernetesLDFlags returns the -X flags that make a binary report its
// release, as Kubernetes's own build does (hack/lib/version.sh). buildDate
// is the release's time on the module proxy, which keeps builds
// reproducible; commit is the release's git commit as the proxy reports
// it, left unset when it does not (the binary then reports none, never a
// placeholder the harness would record).
func kubernetesLDFlags(v kubernetesVersion, buildDate, commit string) string {
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X "+pkg+".gitVersion="+v.full,
			"-X "+pkg+".gitMajor="+v.major,
			"-X "+pkg+".gitMinor="+v.minor,
			"-X "+pkg+".gitTreeState=clean",
		)
		if buildDate != "" {
			flags = append(flags, "-X "+pkg+".buildDate="+buildDate)
		}
		if commit != "" {
			flags = append(flags, "-X "+pkg+".gitCommit="+commit)
		}
	}
	return strings.Join(flags, " ")
}

// runGo runs the go command with args in dir, calling progress with the
// number of packages compiled so far at most every req.ProgressInterval.
// It returns the number of packages compiled.
func runGo(ctx context.Context, req Request, dir string, env, args []string, progress func(compiled int)) (int, error) {
	cmd := exec.CommandContext(ctx, req.Go, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = buildCancelDelay
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw

	var (
		mu       sync.Mutex
		compiled int
		tail     []string
	)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			if isPackageLine(line) {
				compiled++
			}
			tail = append(tail, line)
			if len(tail) > outputTailLines {
				tail = tail[len(tail)-outputTailLines:]
			}
			mu.Unlock()
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner must not block the command
	}()
	snapshot := func() (int, []string) {
		mu.Lock()
		defer mu.Unlock()
		return compiled, slices.Clone(tail)
	}

	if err := cmd.Start(); err != nil {
		pw.Close()
		<-scanned
		return 0, &BuildError{Command: commandLine(req.Go, env, args), Dir: dir, Err: err}
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		waited <- err
	}()
	ticker := time.NewTicker(req.ProgressInterval)
	defer ticker.Stop()
	for {
		select {
		case err := <-waited:
			<-scanned
			n, lines := snapshot()
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("%w (%v)", ctx.Err(), err)
				}
				return n, &BuildError{Command: commandLine(req.Go, env, args), Dir: dir, Output: lines, Err: err}
			}
			return n, nil
		case <-ticker.C:
			n, _ := snapshot()
			progress(n)
		}
	}
}

// isPackageLine reports whether a line of `go build -v` output names a
// package being compiled rather than, say, a module being downloaded.
func isPackageLine(line string) bool {
	return line != "" && !strings.HasPrefix(line, "go: ") && !strings.HasPrefix(line, "#") &&
		!strings.ContainsAny(line, " \t:")
}

func tailLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// commandLine renders a command as a shell would take it, led by its
// environment overrides.
func commandLine(name string, env, args []string) string {
	parts := make([]string, 0, len(env)+1+len(args))
	for _, e := range env {
		parts = append(parts, shellQuote(e))
	}
	parts = append(parts, shellQuote(name))
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\$`;&|<>*?()[]{}!#~") {
		return s
	}
	return strconv.Quote(s)
}
