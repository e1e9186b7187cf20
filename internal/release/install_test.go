package release

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

const modulePath = "github.com/ccm-conformance/ccm-conformance"

// TestIntegrationGoInstall installs the CLI and the kubetest2 tester the
// way the README tells users to, `go install MODULE/cmd/X@VERSION`, from a
// module proxy made of this checkout (GOPROXY=file://...), and runs them.
// The go command refuses `pkg@version` for a module whose go.mod has a
// replace directive; this is the test that the module has none and that
// what it requires is enough to build both programs outside any module.
func TestIntegrationGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and the tester from a module proxy")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command: %v", err)
	}
	proxy := t.TempDir()
	// A version of its own per run: the go command keeps what it
	// downloads in the shared module cache, and a version it has seen
	// would be served from there, not from this checkout.
	rev := "000000000000"
	if out, err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Output(); err == nil {
		rev = strings.TrimSpace(string(out))[:12]
	}
	version := "v0.0.0-" + time.Now().UTC().Format("20060102150405") + "-" + rev
	t.Cleanup(func() { forgetModule(t, version) })
	writeModuleProxy(t, "../..", proxy, version)

	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Fatal(err)
	}
	gobin := t.TempDir()
	env := append(os.Environ(),
		"GOPROXY=file://"+proxy+","+strings.TrimSpace(string(upstream)),
		// The checkout's module is in no checksum database; its
		// dependencies are checked against the module's go.sum as usual.
		"GONOSUMDB="+modulePath,
		"GOFLAGS=-mod=mod -trimpath",
		"GOWORK=off",
		"GOBIN="+gobin,
		"CGO_ENABLED=0",
	)
	for _, cmd := range []string{"ccm-conformance", "kubetest2-tester-ccm"} {
		start := time.Now()
		install := exec.Command("go", "install", modulePath+"/cmd/"+cmd+"@"+version)
		install.Dir = t.TempDir() // outside any module, as a user's shell
		install.Env = env
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("go install %s@%s: %v\n%s", cmd, version, err, out)
		}
		t.Logf("go install %s@%s: %s", cmd, version, time.Since(start).Round(time.Second))
	}
	out, err := exec.Command(filepath.Join(gobin, "ccm-conformance"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ccm-conformance "+version+" ") {
		t.Errorf("installed ccm-conformance version: %q, %v; want it to name %s", out, err, version)
	}
	out, err = exec.Command(filepath.Join(gobin, "kubetest2-tester-ccm"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--provider") {
		t.Errorf("installed kubetest2-tester-ccm --help: %v\n%s", err, out)
	}
}

// writeModuleProxy serves the checkout at dir as module version from a
// GOPROXY directory: the files git tracks (and new ones it does not
// ignore), as the release tag would hold them.
func writeModuleProxy(t *testing.T, dir, proxy, version string) {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	src := t.TempDir()
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	escaped, err := module.EscapePath(modulePath)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, escaped, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.CreateFromDir(z, module.Version{Path: modulePath, Version: version}, src); err != nil {
		t.Fatalf("module zip: %v", err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)})
	for name, data := range map[string][]byte{version + ".mod": gomod, version + ".info": info, "list": []byte(version + "\n")} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// forgetModule removes version of this module from the shared module
// cache, so that test runs leave nothing behind.
func forgetModule(t *testing.T, version string) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Logf("go env GOMODCACHE: %v", err)
		return
	}
	cache := strings.TrimSpace(string(out))
	escaped, _ := module.EscapePath(modulePath)
	extracted := filepath.Join(cache, escaped+"@"+version)
	// The go command makes extracted modules read-only.
	_ = filepath.WalkDir(extracted, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	for _, p := range []string{extracted, filepath.Join(cache, "cache", "download", escaped, "@v")} {
		matches, _ := filepath.Glob(p)
		for _, m := range matches {
			if m == extracted {
				_ = os.RemoveAll(m)
				continue
			}
			files, _ := filepath.Glob(filepath.Join(m, version+".*"))
			lists, _ := filepath.Glob(filepath.Join(m, "list*"))
			for _, f := range append(files, lists...) {
				_ = os.Remove(f)
			}
		}
	}
}
