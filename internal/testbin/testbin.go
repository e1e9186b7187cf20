// Package testbin serves the tests that run the project's executables as
// processes (the harness, the kubetest2 tester, the reference provider):
// it builds them once per test binary from this checkout, and writes copies
// of the reference profile that point at them.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ReferenceProvider are the packages of the reference provider's binaries.
var ReferenceProvider = []string{
	"./providers/reference/cmd/reference-ccm",
	"./providers/reference/cmd/reference-cloud",
	"./providers/reference/cmd/reference-cloud-driver",
}

// RepoRoot is the checkout this package is part of.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Main is a TestMain body: it builds pkgs (paths relative to the repository
// root) into a new temporary directory, stores its path in *dir, runs the
// tests, removes the directory, and returns the exit code for os.Exit.
func Main(m *testing.M, dir *string, pkgs ...string) int {
	d, err := os.MkdirTemp("", "ccm-conformance-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(d)
	for _, pkg := range pkgs {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(d, filepath.Base(pkg)), pkg)
		cmd.Dir = RepoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			return 2
		}
	}
	*dir = d
	return m.Run()
}

// ReferenceProfile writes a copy of the reference profile into dir as
// profile.yaml, with its binaries taken from binDir, extraCCMArgs appended
// to the CCM's args, and mutate (if not nil) applied to the text. It
// returns the copy's path.
func ReferenceProfile(t *testing.T, dir, binDir string, extraCCMArgs []string, mutate func(string) string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "providers", "profiles", "reference.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "../../bin/", binDir+"/")
	// Files the reference provider ships stay where they are in the tree.
	text = strings.ReplaceAll(text, "../reference/", filepath.Join(RepoRoot(), "providers", "reference")+"/")
	const anchor = "      - --cloud-provider=reference\n"
	var extra strings.Builder
	for _, a := range extraCCMArgs {
		fmt.Fprintf(&extra, "      - %s\n", a)
	}
	text = strings.Replace(text, anchor, anchor+extra.String(), 1)
	if mutate != nil {
		text = mutate(text)
	}
	path := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ShortTempDir is a temporary directory with a short path: the reference
// cloud listens on a unix socket below TMPDIR, and socket paths are limited
// to 108 bytes, which t.TempDir's long names can exceed.
func ShortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ccmc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Tail returns the last n lines of s, for failure messages.
func Tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
