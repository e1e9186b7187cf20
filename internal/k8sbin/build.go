package k8sbin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/filelock"
	"github.com/ccm-conformance/ccm-conformance/internal/gocmd"
)

// BuildError is a go command that failed. Its message carries the command
// line and the last lines of the command's output.
type BuildError = gocmd.Error

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
	req.Name = names[0] // the module to build from: etcd's or Kubernetes's
	// Kubernetes's own release binaries, where its site can be reached.
	names, err := fetchReleases(ctx, req, paths, names)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return paths, nil
	}
	req.Name = names[0]
	what := strings.Join(names, ", ")

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

// buildEnv is the environment the go command runs with, beyond the caller's
// (gocmd.BuildEnv): the flags the binaries were always built with, so builds
// share the go build cache.
func buildEnv() []string { return gocmd.BuildEnv() }

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

// moduleCommit is the git commit the proxy reports for the module, or "".
func moduleCommit(m gocmd.ModuleInfo) string {
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
	commit := moduleCommit(info)
	return preparedModule{
		goMod:   goMod,
		ldflags: kubernetesLDFlags(v, releaseTime(info.Info), commit),
		info:    &BuildInfo{Module: kubernetesModule, Version: req.Version, Commit: commit, Stamped: commit != ""},
	}, nil
}

// downloadModule runs `go mod download -json` in dir, with env added to
// the build's environment.
func downloadModule(ctx context.Context, req Request, dir, modVersion string, env ...string) (gocmd.ModuleInfo, error) {
	return gocmd.Download(ctx, req.Go, dir, modVersion, env...)
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
	return gocmd.Run(ctx, gocmd.Command{Go: req.Go, Dir: dir, Env: env, Args: args, Progress: progress, ProgressInterval: req.ProgressInterval})
}
