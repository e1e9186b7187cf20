package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/internal/checkout"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// olderKubernetes is the second version of the matrix test, beside the
// pinned v1.37.2: the newest release before v1.36, so that the specs of
// RelaxedServiceNameValidation (v1.36 and later) are skipped on it. Its
// kube-apiserver and kube-controller-manager build once (4 to 13 minutes
// cold on two cores, docs/lkg.md; .ci/run prebuilds them) and stay cached.
const olderKubernetes = "v1.35.4"

// matrix on two versions runs the suites on a local cluster of each, prints
// a row per version as it finishes and the table at the end, publishes
// both runs, and lkg show lists both pairs. The spec of a Service whose
// name starts with a digit passes on v1.37.2 and is skipped on v1.35.4,
// saying the version is outside its range.
func TestIntegrationMatrixTwoVersions(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	storeDir := filepath.Join(t.TempDir(), "results")
	profile := referenceProfile(t, t.TempDir(), nil, nil)
	filter := "(InstancesV2 && ReleaseBlocking && !NodeIPAnnotation) || " + framework.RelaxedServiceNames.Label
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "matrix", "--provider", profile,
		"--kubernetes", olderKubernetes+",v1.37.2", "--artifacts", artifacts, "--store", "file://"+storeDir,
		"--label-filter", filter)
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, tail(res.stderr, 80))
	}
	t.Logf("matrix printed:\n%s", res.stdout)
	// Each row, printed once as the version finishes and once in the final
	// table: passed, failed, skipped, time, where it was published.
	rows := map[string]string{
		olderKubernetes: `passed +([1-9]\d*) +0 +1 `, // the digit-named Service's spec skipped
		"v1.37.2":       `passed +([1-9]\d*) +0 +0 `,
	}
	for version, cells := range rows {
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(version) + ` +` + cells + `+\S+ +\S*logs/ccm-conformance-reference/\S+$`)
		if n := len(row.FindAllString(res.stdout, -1)); n != 2 {
			t.Errorf("stdout has %d rows for %s matching %q, want 2:\n%s", n, version, cells, res.stdout)
		}
	}
	if !strings.Contains(res.stdout, "\nmatrix:\n") {
		t.Errorf("no final table:\n%s", res.stdout)
	}

	digitSpec := "gives a Service whose name starts with a digit"
	for version, wantState := range map[string]string{olderKubernetes: "skipped", "v1.37.2": "passed"} {
		dir := filepath.Join(artifacts, version)
		if v := runHarness(t, nil, "validate-artifacts", dir); v.code != 0 {
			t.Errorf("validate-artifacts rejects %s's run directory (exit %d):\n%s%s", version, v.code, v.stdout, v.stderr)
		}
		data, err := os.ReadFile(filepath.Join(dir, prow.SpecsFile))
		if err != nil {
			t.Fatal(err)
		}
		var recs prow.SpecRecords
		if err := json.Unmarshal(data, &recs); err != nil {
			t.Fatalf("%s's %s: %v", version, prow.SpecsFile, err)
		}
		var meta map[string]any
		if data, err := os.ReadFile(filepath.Join(dir, prow.MetadataFile)); err != nil || json.Unmarshal(data, &meta) != nil {
			t.Errorf("%s's %s: unreadable (%v)", version, prow.MetadataFile, err)
		} else if got := meta[prow.MetaKubernetesVersion]; got != version {
			t.Errorf("%s's run records Kubernetes %v", version, got)
		}
		found := false
		for _, s := range recs.Specs {
			if !strings.Contains(s.Text, digitSpec) {
				continue
			}
			found = true
			if s.State != wantState {
				t.Errorf("on %s the spec %q is %s (%s), want %s", version, s.Text, s.State, s.SkipReason, wantState)
			}
			if wantState == "skipped" && !strings.Contains(s.SkipReason, framework.OutsideVersionRange+" "+olderKubernetes+": the spec needs Kubernetes v1.36 and later (KEP-5311") {
				t.Errorf("on %s the spec was skipped for another reason: %q", version, s.SkipReason)
			}
		}
		if !found {
			t.Errorf("%s's specs.json has no spec %q", version, digitSpec)
		}
	}

	show := runHarness(t, nil, "lkg", "show", "--store", "file://"+storeDir)
	if show.code != 0 {
		t.Fatalf("lkg show: exit %d: %s", show.code, show.stderr)
	}
	t.Logf("lkg show printed:\n%s", show.stdout)
	// The label filter makes each run partial: listed, never last-known-good.
	for _, version := range []string{olderKubernetes, "v1.37.2"} {
		pair := regexp.MustCompile(`(?m)^reference +` + regexp.QuoteMeta(version) + ` +\S+ +sha256:\S+ +partial +1 `)
		if !pair.MatchString(show.stdout) {
			t.Errorf("lkg show does not list the reference provider's %s pair with one run:\n%s", version, show.stdout)
		}
	}
}

// .ci/run builds the matrix test's second version before make test, so
// that a fresh machine's test run does not spend its time building it.
func TestCIPrebuildsTheMatrixVersion(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(checkout.MustRoot(), ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "cluster prebuild --kubernetes-version " + olderKubernetes; !strings.Contains(string(ci), want) {
		t.Errorf(".ci/run does not run %q", want)
	}
}
