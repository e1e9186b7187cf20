package main_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// matrix on one version (the cached v1.37.2: another version would build
// its binaries cold) runs the suites, prints the version's row, publishes
// the run, and lkg show lists the pair.
func TestIntegrationMatrixOneVersion(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	storeDir := filepath.Join(t.TempDir(), "results")
	profile := referenceProfile(t, t.TempDir(), nil, nil)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "matrix", "--provider", profile,
		"--kubernetes", "v1.37.2", "--artifacts", artifacts, "--store", "file://"+storeDir,
		"--label-filter", "InstancesV2 && ReleaseBlocking && !NodeIPAnnotation")
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, tail(res.stderr, 80))
	}
	t.Logf("matrix printed:\n%s", res.stdout)
	// The row, printed once as the version finishes and once in the final
	// table: every selected spec passed, none failed.
	row := regexp.MustCompile(`(?m)^v1\.37\.2 +passed +([1-9]\d*) +0 +(\d+) +\S+ +\S*logs/ccm-conformance-reference/\S+$`)
	if n := len(row.FindAllString(res.stdout, -1)); n != 2 {
		t.Errorf("stdout has %d passing v1.37.2 rows naming the published build, want 2:\n%s", n, res.stdout)
	}
	if !strings.Contains(res.stdout, "\nmatrix:\n") {
		t.Errorf("no final table:\n%s", res.stdout)
	}
	if v := runHarness(t, nil, "validate-artifacts", filepath.Join(artifacts, "v1.37.2")); v.code != 0 {
		t.Errorf("validate-artifacts rejects the version's run directory (exit %d):\n%s%s", v.code, v.stdout, v.stderr)
	}
	show := runHarness(t, nil, "lkg", "show", "--store", "file://"+storeDir)
	if show.code != 0 {
		t.Fatalf("lkg show: exit %d: %s", show.code, show.stderr)
	}
	t.Logf("lkg show printed:\n%s", show.stdout)
	// The label filter makes the run partial: listed, never last-known-good.
	pair := regexp.MustCompile(`(?m)^reference +v1\.37\.2 +\S+ +sha256:\S+ +partial +1 `)
	if !pair.MatchString(show.stdout) {
		t.Errorf("lkg show does not list the reference provider's v1.37.2 pair with one run:\n%s", show.stdout)
	}
}
