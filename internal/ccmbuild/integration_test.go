package ccmbuild

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/ccm-conformance/ccm-conformance/internal/gocmd"
)

// fileProxy is a Go module proxy in a directory (GOPROXY=file://dir).
type fileProxy struct {
	t   *testing.T
	dir string
}

// add serves module m with files (path relative to the module root ->
// content); files must hold its go.mod.
func (p fileProxy) add(m module.Version, files map[string]string) {
	p.t.Helper()
	src := p.t.TempDir()
	for name, content := range files {
		path := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			p.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		p.t.Fatal(err)
	}
	dir := filepath.Join(p.dir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, m, src); err != nil {
		p.t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		m.Version + ".zip":  zip.Bytes(),
		m.Version + ".mod":  []byte(files["go.mod"]),
		m.Version + ".info": []byte(`{"Version":"` + m.Version + `","Time":"2026-04-23T08:56:48Z"}`),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	list, _ := os.ReadFile(filepath.Join(dir, "list"))
	if err := os.WriteFile(filepath.Join(dir, "list"), append(list, m.Version+"\n"...), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// isolatedGo points the go command at a new file proxy, without a
// checksum database, and at a module cache of the test's own (removed
// with go clean -modcache, since the go command makes it read-only). The
// go build cache stays the shared one: the test builds a few tiny packages.
func isolatedGo(t *testing.T) fileProxy {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	p := fileProxy{t: t, dir: t.TempDir()}
	modCache := t.TempDir()
	t.Setenv("GOPROXY", "file://"+p.dir)
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GONOSUMDB", "example.com")
	t.Setenv("GOMODCACHE", modCache)
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("GOFLAGS", "-mod=mod")
	// The repository's go.work would put commands run here in workspace
	// mode, which takes no -mod=mod.
	t.Setenv("GOWORK", "off")
	t.Cleanup(func() {
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = append(os.Environ(), "GOMODCACHE="+modCache)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})
	return p
}

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

// TestIntegrationEnsure builds a tiny CCM module, whose go.mod replaces
// one of its dependencies, from a local module proxy into a fresh cache:
// the binary's build info names the module and its version and the
// replaced dependency, the go version -m file is beside it, and a second
// Ensure finds it without building. A replace the module does not have is
// refused, and a package that does not compile fails with the go command
// line and the compiler's words.
func TestIntegrationEnsure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command against a local module proxy")
	}
	p := isolatedGo(t)
	dep := "example.com/dep"
	for _, v := range []string{"v1.0.0", "v1.1.0"} {
		p.add(module.Version{Path: dep, Version: v}, map[string]string{
			"go.mod": "module " + dep + "\n\ngo 1.22\n",
			"dep.go": "package dep\n\nconst Version = \"" + v + "\"\n",
		})
	}
	ccmGoMod := "module example.com/ccm\n\ngo 1.22\n\ngodebug default=go1.22\n\nrequire example.com/dep v1.0.0\n\nreplace example.com/dep => example.com/dep v1.1.0\n"
	p.add(module.Version{Path: "example.com/ccm", Version: "v1.0.0"}, map[string]string{
		"go.mod":               ccmGoMod,
		"cmd/fake-ccm/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(\"fake-ccm with dep\", dep.Version) }\n",
		"cmd/broken/main.go":   "package main\n\nfunc main() { undefinedFunction() }\n",
	})

	cache := t.TempDir()
	var progress syncBuffer
	req := Request{
		Module:           "example.com/ccm",
		Version:          "v1.0.0",
		Package:          "example.com/ccm/cmd/fake-ccm",
		Replace:          []Replace{{Old: module.Version{Path: dep}, New: module.Version{Path: dep, Version: "v1.1.0"}}},
		CacheDir:         cache,
		Progress:         &progress,
		ProgressInterval: 100 * time.Millisecond,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := Ensure(ctx, req)
	if err != nil {
		t.Fatalf("Ensure: %v\nprogress:\n%s", err, progress.String())
	}
	want := filepath.Join(cache, "bin", "ccm", "example.com", "ccm@v1.0.0", Key(req), "fake-ccm")
	if b.Path != want || !b.Built {
		t.Errorf("Ensure = %+v, want %s built", b, want)
	}
	if out, err := exec.CommandContext(ctx, b.Path).Output(); err != nil || string(out) != "fake-ccm with dep v1.1.0\n" {
		t.Errorf("the built CCM printed %q, %v; want the replaced dependency's version", out, err)
	}

	bi, err := buildinfo.ReadFile(b.Path)
	if err != nil {
		t.Fatal(err)
	}
	// The go command names the module of the main package as the
	// binary's main module, at its version and with its sum, as for go
	// install pkg@version: the throwaway module does not show.
	if bi.Path != req.Package || bi.Main.Path != "example.com/ccm" || bi.Main.Version != "v1.0.0" || !strings.HasPrefix(bi.Main.Sum, "h1:") {
		t.Errorf("build info: path %s, main module %+v; want %s in example.com/ccm v1.0.0 with its h1: sum", bi.Path, bi.Main, req.Package)
	}
	deps := map[string]string{}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v += " => " + d.Replace.Path + " " + d.Replace.Version
		}
		deps[d.Path] = v
	}
	if deps[dep] != "v1.0.0 => example.com/dep v1.1.0" {
		t.Errorf("build info deps = %v; want the replaced dep", deps)
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" && s.Value != "0" || s.Key == "-trimpath" && s.Value != "true" {
			t.Errorf("build setting %s=%s, want the project's flags", s.Key, s.Value)
		}
	}

	text, err := os.ReadFile(b.GoVersionM)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{b.Path + ": go", "\tpath\texample.com/ccm/cmd/fake-ccm\n", "\tmod\texample.com/ccm\tv1.0.0\th1:", "\t=>\texample.com/dep\tv1.1.0\t", "\tbuild\t-trimpath=true\n", "\tbuild\tCGO_ENABLED=0\n"} {
		if !strings.Contains(string(text), w) {
			t.Errorf("%s lacks %q:\n%s", b.GoVersionM, w, text)
		}
	}
	for _, w := range []string{
		"building fake-ccm from example.com/ccm@v1.0.0, unmodified, from the Go module proxy into " + filepath.Dir(want),
		"built fake-ccm example.com/ccm@v1.0.0 in ",
	} {
		if !strings.Contains(progress.String(), w) {
			t.Errorf("progress lacks %q:\n%s", w, progress.String())
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(want))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "fake-ccm,fake-ccm.go-version-m.txt,fake-ccm.go.mod,fake-ccm.lock" {
		t.Errorf("the cache holds %v, want the binary, its go version -m, its go.mod and its lock only", names)
	}
	if info, err := os.Stat(b.GoVersionM); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("%s: %v, mode %v; want it readable by all", b.GoVersionM, err, info.Mode())
	}
	goMod, err := os.ReadFile(b.GoMod)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"module " + BuildModulePrefix + "example.com/ccm\n", "require example.com/ccm v1.0.0\n", "\texample.com/dep => example.com/dep v1.1.0\n", "godebug default=go1.22\n"} {
		if !strings.Contains(string(goMod), w) {
			t.Errorf("%s lacks %q:\n%s", b.GoMod, w, goMod)
		}
	}

	// Again: from the cache, without a go command.
	info, _ := os.Stat(b.Path)
	again := req
	again.Go = filepath.Join(t.TempDir(), "no-go-here")
	b2, err := Ensure(ctx, again)
	if err != nil || b2.Path != b.Path || b2.Built {
		t.Errorf("second Ensure = %+v, %v; want %s from the cache", b2, err, b.Path)
	}
	if info2, _ := os.Stat(b.Path); !info2.ModTime().Equal(info.ModTime()) {
		t.Error("the second Ensure rewrote the binary")
	}

	// A cached binary without its records gets them back, without a
	// build.
	for _, f := range []string{b.GoVersionM, b.GoMod} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if b3, err := Ensure(ctx, req); err != nil || b3.Built {
		t.Errorf("Ensure of a cached binary without its records = %+v, %v", b3, err)
	}
	if again, err := os.ReadFile(b.GoMod); err != nil || string(again) != string(goMod) {
		t.Errorf("the go.mod written again = %q, %v; want\n%s", again, err, goMod)
	}
	if text, err := os.ReadFile(b.GoVersionM); err != nil || !strings.HasPrefix(string(text), b.Path+": go") {
		t.Errorf("the go version -m written again = %q, %v", text, err)
	}

	// Two callers on a fresh cache: one builds, the other waits for its
	// lock and finds the binary.
	fresh := req
	fresh.CacheDir, fresh.Progress = t.TempDir(), nil
	var wg sync.WaitGroup
	results := make([]Build, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = Ensure(ctx, fresh) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || results[0].Path != results[1].Path || results[0].Built == results[1].Built {
		t.Errorf("concurrent Ensures = %+v, %v; want one build and one cache hit", results, errors.Join(errs...))
	}

	// Another replace list is another build; one the module's go.mod
	// does not have is refused before anything is built.
	added := req
	added.Replace = append(added.Replace, Replace{Old: module.Version{Path: "example.com/other"}, New: module.Version{Path: "example.com/other", Version: "v1.0.0"}})
	_, err = Ensure(ctx, added)
	if err == nil || !strings.Contains(err.Error(), "replace example.com/other => example.com/other v1.0.0 is not in the go.mod of example.com/ccm@v1.0.0") {
		t.Errorf("Ensure with a replace upstream lacks = %v, want it refused", err)
	}

	broken := req
	broken.Package = "example.com/ccm/cmd/broken"
	_, err = Ensure(ctx, broken)
	var ge *gocmd.Error
	if !errors.As(err, &ge) {
		t.Fatalf("Ensure of a package that does not compile = %v, want a *gocmd.Error", err)
	}
	for _, w := range []string{"building broken example.com/ccm@v1.0.0: ", "CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off go build -v -trimpath -o ", "example.com/ccm/cmd/broken", "last lines of output:", "undefined: undefinedFunction"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if bp, _ := BinaryPath(cache, broken); isFile(bp) {
		t.Errorf("a failed build left %s", bp)
	}
}
