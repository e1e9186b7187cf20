package k8sbin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/filelock"
)

// fakeGo writes a stand-in for the go command that answers `go mod download
// -json` from the fixtures under testdata/ and fakes `go build -v`: it prints
// a few package names, then writes a tiny executable to the -o path (or,
// for an -o directory, one per package into it), or fails
// like a compile error if fail is set. Every call is appended to the returned
// log, with the environment and go.mod a build saw.
func fakeGo(t *testing.T, fail bool) (goPath, logPath string) {
	t.Helper()
	dir := t.TempDir()
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	info := filepath.Join(dir, "release.info")
	if err := os.WriteFile(info, []byte(`{"Version":"v1.37.2","Time":"2026-10-27T12:01:04Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath = filepath.Join(dir, "calls.log")
	failing := ""
	if fail {
		failing = "yes"
	}
	script := fmt.Sprintf(`#!/bin/sh
log=%q
echo "go $*" >> "$log"
case "$1" in
mod)
  mod=${4%%@*}
  ver=${4#*@}
  case "$ver" in
  v1.99.*)
    printf '{"Path":"%%s","Version":"%%s","Error":"%%s@%%s: invalid version: unknown revision %%s"}\n' "$mod" "$ver" "$mod" "$ver" "$ver"
    exit 1 ;;
  esac
  echo "env GOPROXY=$GOPROXY" >> "$log"
  origin=""
  case "$mod" in
  k8s.io/kubernetes) gomod=%q; origin=',"Origin":{"VCS":"git","URL":"https://github.com/kubernetes/kubernetes","Hash":"%s","Ref":"refs/tags/'$ver'"}' ;;
  *) gomod=%q ;;
  esac
  printf '{"Path":"%%s","Version":"%%s","Info":"%%s","GoMod":"%%s"%%s}\n' "$mod" "$ver" %q "$gomod" "$origin"
  ;;
build|test)
  echo "env CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS" >> "$log"
  [ "$1" = test ] && grep -H '^package ' e2eloadbalancers/*.go >> "$log"
  cat go.mod >> "$log"
  out=""; prev=""
  for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
  echo "go: downloading k8s.io/api v0.37.2"
  for i in 1 2 3 4 5 6; do echo "k8s.io/example/pkg$i"; sleep 0.05; done
  if [ -n %q ]; then
    echo "# k8s.io/example/pkg6"
    echo "pkg6/broken.go:3:2: undefined: foo"
    exit 1
  fi
  case "$out" in
  "") ;; # compile only
  */)
    # Several packages: a binary each, named after its package.
    for a in "$@"; do
      case "$a" in k8s.io/kubernetes/cmd/*|k8s.io/kubernetes/test/images/agnhost) printf '#!/bin/sh\necho built %%s\n' "${a##*/}" > "$out${a##*/}" ;; esac
    done ;;
  *) printf '#!/bin/sh\necho built\n' > "$out" ;;
  esac
  ;;
esac
`, logPath, filepath.Join(testdata, "valid-kubernetes.mod"), fakeCommit, filepath.Join(testdata, "valid-etcd.mod"), info, failing)
	goPath = filepath.Join(dir, "go")
	if err := os.WriteFile(goPath, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return goPath, logPath
}

// fakeCommit is the commit fakeGo's module proxy reports for k8s.io/kubernetes.
const fakeCommit = "5e0d4c3b2a19f8e7d6c5b4a39281706f5e4d3c2b"

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEnsureBuildsOnceForConcurrentCallers(t *testing.T) {
	goPath, logPath := fakeGo(t, false)
	cache := t.TempDir()
	var progress syncBuffer
	req := Request{
		Name:             KubeAPIServer,
		Version:          "v1.37.2",
		CacheDir:         cache,
		Progress:         &progress,
		ProgressInterval: 20 * time.Millisecond,
		Getenv:           env(nil),
		Go:               goPath,
	}

	const callers = 4
	paths := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { paths[i], errs[i] = Ensure(context.Background(), req) })
	}
	wg.Wait()

	want := filepath.Join(cache, "bin", "kubernetes-v1.37.2", "kube-apiserver")
	for i := range callers {
		if errs[i] != nil || paths[i] != want {
			t.Errorf("caller %d: Ensure = %q, %v; want %q", i, paths[i], errs[i], want)
		}
	}
	if out, err := exec.Command(want).Output(); err != nil || string(out) != "built\n" {
		t.Errorf("cached binary ran with %q, %v", out, err)
	}

	calls, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(calls), "go build "); n != 1 {
		t.Errorf("go build ran %d times, want once:\n%s", n, calls)
	}
	for _, want := range []string{
		"go build -v -trimpath -ldflags ",
		"-X k8s.io/component-base/version.gitVersion=v1.37.2",
		"-X k8s.io/client-go/pkg/version.buildDate=2026-10-27T12:01:04Z",
		"-X k8s.io/component-base/version.gitCommit=" + fakeCommit,
		"-X k8s.io/client-go/pkg/version.gitCommit=" + fakeCommit,
		" k8s.io/kubernetes/cmd/kube-apiserver\n",
		"env CGO_ENABLED=0 GOFLAGS=-mod=mod\n",
		"require k8s.io/kubernetes v1.37.2\n",
		"k8s.io/client-go => k8s.io/client-go v0.37.2\n",
	} {
		if !strings.Contains(string(calls), want) {
			t.Errorf("the go command's log lacks %q:\n%s", want, calls)
		}
	}

	out := progress.String()
	for _, want := range []string{
		"building kube-apiserver v1.37.2 from the Go module proxy into " + filepath.Dir(want) + "; a cold build takes about 10 minutes",
		"packages compiled, ",
		"built kube-apiserver v1.37.2 in ",
		"(6 packages compiled)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}

	bi, err := ReadBuildInfo(want)
	if err != nil || bi != (BuildInfo{Module: "k8s.io/kubernetes", Version: "v1.37.2", Commit: fakeCommit, Stamped: true}) {
		t.Errorf("ReadBuildInfo = %+v, %v; want the stamped commit", bi, err)
	}

	// Nothing but the binary, its build info and its lock file is left in
	// the cache.
	entries, err := os.ReadDir(filepath.Dir(want))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "kube-apiserver,kube-apiserver.build.json,kube-apiserver.lock" {
		t.Errorf("cache holds %v, want the binary, its build info and its lock file only", names)
	}

	// A later call finds the binary without running go.
	req.Go = filepath.Join(t.TempDir(), "no-go-here")
	if path, err := Ensure(context.Background(), req); err != nil || path != want {
		t.Errorf("warm Ensure = %q, %v; want %q", path, err, want)
	}
}

// EnsureAll builds every missing binary of a release with one go command,
// and only the missing ones.
func TestEnsureAllBuildsTheMissingOnesTogether(t *testing.T) {
	goPath, logPath := fakeGo(t, false)
	cache := t.TempDir()
	var progress syncBuffer
	req := Request{Version: "v1.37.2", CacheDir: cache, Progress: &progress, Getenv: env(nil), Go: goPath}
	dir := filepath.Join(cache, "bin", "kubernetes-v1.37.2")

	// kubectl is cached already (by an earlier Ensure).
	one := req
	one.Name = Kubectl
	if _, err := Ensure(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logPath, 0); err != nil {
		t.Fatal(err)
	}

	paths, err := EnsureAll(context.Background(), req, Kubelet, KubeAPIServer, Kubectl, KubeScheduler)
	if err != nil {
		t.Fatalf("EnsureAll: %v\nprogress:\n%s", err, progress.String())
	}
	for _, n := range []string{Kubelet, KubeAPIServer, Kubectl, KubeScheduler} {
		if paths[n] != filepath.Join(dir, n) {
			t.Errorf("path of %s = %q, want %q", n, paths[n], filepath.Join(dir, n))
		}
		want := "built " + n + "\n"
		if n == Kubectl {
			want = "built\n" // from the earlier build, not rebuilt
		}
		if out, err := exec.Command(paths[n]).Output(); err != nil || string(out) != want {
			t.Errorf("%s ran with %q, %v; want %q", n, out, err, want)
		}
		if bi, err := ReadBuildInfo(paths[n]); err != nil || bi.Commit != fakeCommit {
			t.Errorf("ReadBuildInfo(%s) = %+v, %v; want the stamped commit", n, bi, err)
		}
	}
	calls, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(calls), "go build "); n != 1 {
		t.Errorf("go build ran %d times, want once:\n%s", n, calls)
	}
	wantArgs := " -o " + dir + "/.build-"
	pkgs := " k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet\n"
	if !strings.Contains(string(calls), wantArgs) || !strings.Contains(string(calls), pkgs) {
		t.Errorf("the go command's log lacks an -o directory in the cache (%q) and the packages of the missing binaries (%q):\n%s", wantArgs, pkgs, calls)
	}
	out := progress.String()
	for _, want := range []string{
		"building kube-apiserver, kube-scheduler, kubelet v1.37.2 from the Go module proxy into " + dir + "; a cold build takes about 13 minutes",
		"built kube-apiserver, kube-scheduler, kubelet v1.37.2 in ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("the build left %s in the cache", e.Name())
		}
	}
}

func TestEnsureAllRefusesToMixModules(t *testing.T) {
	_, err := EnsureAll(context.Background(), Request{Version: "v1.37.2", Getenv: env(nil)}, KubeAPIServer, Etcd)
	if err == nil || !strings.Contains(err.Error(), "different modules") {
		t.Errorf("EnsureAll(kube-apiserver, etcd) = %v, want an error saying they are different modules", err)
	}
	if _, err := EnsureAll(context.Background(), Request{Version: "v1.37.2", Getenv: env(nil)}); err == nil {
		t.Error("EnsureAll of no binary succeeded")
	}
}

func TestEnsureBuildsEtcd(t *testing.T) {
	goPath, logPath := fakeGo(t, false)
	cache := t.TempDir()
	path, err := Ensure(context.Background(), Request{Name: Etcd, CacheDir: cache, Getenv: env(nil), Go: goPath})
	if want := filepath.Join(cache, "bin", "etcd-"+DefaultEtcdVersion, "etcd"); err != nil || path != want {
		t.Fatalf("Ensure = %q, %v; want %q", path, err, want)
	}
	calls, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"go mod download -json go.etcd.io/etcd/server/v3@v3.6.16\n",
		"require go.etcd.io/etcd/server/v3 v3.6.16\n",
		" go.etcd.io/etcd/server/v3\n",
	} {
		if !strings.Contains(string(calls), want) {
			t.Errorf("the go command's log lacks %q:\n%s", want, calls)
		}
	}
}

func TestEnsureBuildFailure(t *testing.T) {
	goPath, _ := fakeGo(t, true)
	cache := t.TempDir()
	_, err := Ensure(context.Background(), Request{
		Name: KubeControllerManager, Version: "v1.37.2", CacheDir: cache, Getenv: env(nil), Go: goPath,
	})
	var buildErr *BuildError
	if !errors.As(err, &buildErr) {
		t.Fatalf("error = %v, want a *BuildError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"building kube-controller-manager v1.37.2: ",
		"CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off " + goPath + " build -v -trimpath -ldflags ",
		"k8s.io/kubernetes/cmd/kube-controller-manager",
		"exit status 1",
		"last lines of output:",
		"pkg6/broken.go:3:2: undefined: foo",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	dir := filepath.Join(cache, "bin", "kubernetes-v1.37.2")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "kube-controller-manager.lock" {
			t.Errorf("a failed build left %s in the cache", e.Name())
		}
	}
}

func TestEnsureUnknownRelease(t *testing.T) {
	goPath, _ := fakeGo(t, false)
	_, err := Ensure(context.Background(), Request{
		Name: KubeAPIServer, Version: "v1.99.0", CacheDir: t.TempDir(), Getenv: env(nil), Go: goPath,
	})
	if err == nil || !strings.Contains(err.Error(), "unknown revision v1.99.0") ||
		!strings.Contains(err.Error(), "mod download -json k8s.io/kubernetes@v1.99.0") {
		t.Errorf("error = %v, want the go command's line and its complaint", err)
	}
}

func TestEnsureWaitsForAnotherHolderOfTheLock(t *testing.T) {
	goPath, _ := fakeGo(t, false)
	cache := t.TempDir()
	dir := filepath.Join(cache, "bin", "etcd-v3.6.16")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Another "process" holds the lock.
	unlock, err := filelock.Lock(context.Background(), filepath.Join(dir, "etcd.lock"), time.Second, func(time.Duration) {})
	if err != nil {
		t.Fatal(err)
	}
	var progress syncBuffer
	req := Request{Name: Etcd, CacheDir: cache, Getenv: env(nil), Go: goPath, Progress: &progress, ProgressInterval: 50 * time.Millisecond}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Ensure(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ensure while the lock is held = %v, want the context's deadline", err)
	}
	if !strings.Contains(progress.String(), "waiting for another build of etcd v3.6.16") {
		t.Errorf("progress does not say it waits:\n%s", progress.String())
	}

	done := make(chan error, 1)
	go func() {
		_, err := Ensure(context.Background(), req)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Ensure after the lock was released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ensure did not take the released lock")
	}
}

// A binary cached before builds recorded their commit gets its build info
// from the module cache on the next Ensure, without a build; without a go
// command it stays without one, and Ensure still succeeds.
func TestEnsureRecordsTheCommitOfAnUnstampedCachedBinary(t *testing.T) {
	cache := t.TempDir()
	binary := filepath.Join(cache, "bin", "kubernetes-v1.37.2", KubeControllerManager)
	if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binary, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	req := Request{Name: KubeControllerManager, Version: "v1.37.2", CacheDir: cache, Getenv: env(nil)}

	req.Go = filepath.Join(t.TempDir(), "no-go-here")
	if path, err := Ensure(context.Background(), req); err != nil || path != binary {
		t.Fatalf("Ensure without a go command = %q, %v", path, err)
	}
	if _, err := ReadBuildInfo(binary); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadBuildInfo after a failed lookup = %v, want not exist", err)
	}

	goPath, logPath := fakeGo(t, false)
	req.Go = goPath
	if path, err := Ensure(context.Background(), req); err != nil || path != binary {
		t.Fatalf("Ensure = %q, %v", path, err)
	}
	bi, err := ReadBuildInfo(binary)
	if err != nil || bi.Commit != fakeCommit || bi.Stamped {
		t.Errorf("ReadBuildInfo = %+v, %v; want the commit, not stamped", bi, err)
	}
	calls, _ := os.ReadFile(logPath)
	if strings.Contains(string(calls), "go build") || !strings.Contains(string(calls), "env GOPROXY=off") {
		t.Errorf("the lookup must only read the module cache, never build:\n%s", calls)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(binary), ".*"))
	if len(leftovers) > 0 {
		t.Errorf("the lookup left %v", leftovers)
	}
}

func TestReadBuildInfoDropsPlaceholders(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "kube-apiserver")
	if err := os.WriteFile(BuildInfoPath(binary), []byte(`{"module":"k8s.io/kubernetes","version":"v1.37.2","commit":"$Format:%H$"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if bi, err := ReadBuildInfo(binary); err != nil || bi.Commit != "" {
		t.Errorf("ReadBuildInfo = %+v, %v; want no commit", bi, err)
	}
}

// agnhost is built with the other main packages; the e2e test binary by
// go test -c of the package e2etest.go writes into the build module.
func TestEnsureAllBuildsAgnhostAndTheE2ETestBinary(t *testing.T) {
	goPath, logPath := fakeGo(t, false)
	cache := t.TempDir()
	var progress syncBuffer
	req := Request{Version: "v1.37.2", CacheDir: cache, Progress: &progress, Getenv: env(nil), Go: goPath}
	dir := filepath.Join(cache, "bin", "kubernetes-v1.37.2")
	paths, err := EnsureAll(context.Background(), req, E2ELoadBalancers, Agnhost, Kubectl)
	if err != nil {
		t.Fatalf("EnsureAll: %v\nprogress:\n%s", err, progress.String())
	}
	want := map[string]string{Agnhost: "built agnhost\n", Kubectl: "built kubectl\n", E2ELoadBalancers: "built\n"}
	for n, w := range want {
		if paths[n] != filepath.Join(dir, n) {
			t.Errorf("path of %s = %q, want %q", n, paths[n], filepath.Join(dir, n))
		}
		if out, err := exec.Command(paths[n]).Output(); err != nil || string(out) != w {
			t.Errorf("%s ran with %q, %v; want %q", n, out, err, w)
		}
	}
	calls, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		" k8s.io/kubernetes/test/images/agnhost k8s.io/kubernetes/cmd/kubectl\n",
		"go build -v -trimpath k8s.io/kubernetes/test/e2e/framework k8s.io/kubernetes/test/e2e/network\n",
		"go test -c -trimpath -ldflags ",
		" -o " + dir + "/.build-",
		"/e2e-loadbalancers.test ./e2eloadbalancers\n",
		"e2eloadbalancers/e2e_test.go:package e2eloadbalancers\n",
	} {
		if !strings.Contains(string(calls), w) {
			t.Errorf("the go command's log lacks %q:\n%s", w, calls)
		}
	}
	if n := strings.Count(string(calls), "go build -v -trimpath -ldflags"); n != 1 {
		t.Errorf("go build of main packages ran %d times, want once (agnhost and kubectl together):\n%s", n, calls)
	}
}

func TestMainPackages(t *testing.T) {
	for name, want := range map[string]string{
		KubeAPIServer:    "k8s.io/kubernetes/cmd/kube-apiserver",
		Agnhost:          "k8s.io/kubernetes/test/images/agnhost",
		E2ELoadBalancers: "",
		Etcd:             "go.etcd.io/etcd/server/v3",
	} {
		if got := mainPackage(name); got != want {
			t.Errorf("mainPackage(%q) = %q, want %q", name, got, want)
		}
	}
}
