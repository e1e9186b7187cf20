package rundir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

func readJSONMap(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// A run exported into a Prow job's $ARTIFACTS: the junit files and
// records at its top, metadata merged over a deployer's, an earlier run's
// junit file of a known suite gone, kubetest2's own left alone.
func TestExportArtifacts(t *testing.T) {
	runDir, dst := t.TempDir(), t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dst, "metadata.json"), `{"kubetest-version": "v0.0.1", "job-version": "old"}`)
	write(filepath.Join(dst, "junit_runner.xml"), `<testsuites/>`)
	write(filepath.Join(dst, prow.JUnitFileName(prow.HarnessSuite)), `<testsuites><testsuite><testcase name="stale"><failure/></testcase></testsuite></testsuites>`)

	if err := SeedMetadata(filepath.Join(dst, "metadata.json"), runDir); err != nil {
		t.Fatal(err)
	}
	o := NewObserver(runDir, WithClock(func() time.Time { return t0.Add(time.Minute) }),
		WithMetadata(map[string]string{prow.MetaCCMImage: "registry.example/ccm:v1", "empty": ""}))
	if err := o.RunStarted(runInfo); err != nil {
		t.Fatal(err)
	}
	rep := report(spec("nodeaddress", "initializes nodes", []string{"InstancesV2"}, types.SpecStatePassed, time.Second))
	if err := o.RunFinished(runInfo, rep, nil, nil); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(runDir, prow.LogsDir, "ccm.log"), "ccm says hello\n")

	if err := ExportArtifacts(runDir, dst, []string{"nodeaddress", "routes"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"junit_nodeaddress_01.xml", "specs.json", "timings.json", "logs/ccm.log", "junit_runner.xml"} {
		if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{prow.JUnitFileName(prow.HarnessSuite), "artifacts", "finished.json", "started.json"} {
		if _, err := os.Stat(filepath.Join(dst, name)); err == nil {
			t.Errorf("%s is in the exported artifacts", name)
		}
	}
	meta := readJSONMap(t, filepath.Join(dst, "metadata.json"))
	want := map[string]string{
		"kubetest-version":         "v0.0.1",
		prow.MetaJobVersion:        "v1.37.2",
		prow.MetaCCMDigest:         "sha256:abcd",
		prow.MetaCCMImage:          "registry.example/ccm:v1",
		prow.MetaKubernetesVersion: "v1.37.2",
	}
	for k, v := range want {
		if meta[k] != v {
			t.Errorf("metadata.json %s = %v, want %q", k, meta[k], v)
		}
	}
	if _, ok := meta["empty"]; ok {
		t.Error("an empty WithMetadata value was written")
	}
	// The run directory's finished.json carries the deployer's keys too.
	var f prow.Finished
	data, err := os.ReadFile(filepath.Join(runDir, prow.FinishedFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.MetaString("kubetest-version") != "v0.0.1" || f.MetaString(prow.MetaCCMImage) != "registry.example/ccm:v1" {
		t.Errorf("finished.json metadata %v lacks the seeded or added keys", f.Metadata)
	}
}

func TestExportArtifactsErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, runDir string)
	}{
		{"no artifacts directory", func(t *testing.T, runDir string) {}},
		{"metadata not JSON", func(t *testing.T, runDir string) {
			if err := os.MkdirAll(filepath.Join(runDir, prow.ArtifactsDir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(runDir, prow.MetadataFile), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runDir := t.TempDir()
			tt.setup(t, runDir)
			if err := ExportArtifacts(runDir, t.TempDir(), nil); err == nil {
				t.Error("ExportArtifacts succeeded")
			}
		})
	}
}
