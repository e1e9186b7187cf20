package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

const (
	modulePath = "github.com/ccm-conformance/ccm-conformance"
	sdkPath    = modulePath + "/driversdk"
)

// requiredVersion is the version of path that the go.mod at gomod requires.
func requiredVersion(t *testing.T, gomod, path string) string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == path {
			return r.Mod.Version
		}
	}
	t.Fatalf("%s does not require %s", gomod, path)
	return ""
}

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
	sdkVersion := requiredVersion(t, "../../go.mod", sdkPath)
	forgetModule(t, sdkPath, sdkVersion) // a copy an earlier command cached
	t.Cleanup(func() { forgetModule(t, modulePath, version); forgetModule(t, sdkPath, sdkVersion) })
	// Both modules of the repository, as a release publishes them: the
	// harness, and the cloud-driver SDK at the version go.mod requires.
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	if err := WriteModuleVersion(proxy, modulePath, version, "../..", at); err != nil {
		t.Fatal(err)
	}
	if err := WriteModuleVersion(proxy, sdkPath, sdkVersion, "../../driversdk", at); err != nil {
		t.Fatal(err)
	}

	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Fatal(err)
	}
	gobin := t.TempDir()
	env := append(os.Environ(),
		"GOPROXY=file://"+proxy+","+strings.TrimSpace(string(upstream)),
		// The checkout's modules are in no checksum database; their
		// dependencies are checked against the harness's go.sum as usual.
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

// forgetModule removes version of this module from the shared module
// cache, so that test runs leave nothing behind.
func forgetModule(t *testing.T, path, version string) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Logf("go env GOMODCACHE: %v", err)
		return
	}
	cache := strings.TrimSpace(string(out))
	escaped, _ := module.EscapePath(path)
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
