package releasecheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// TestWriteToRunDir: the report lands next to metadata.json, and its
// summary is merged into metadata.json without losing the run's keys.
func TestWriteToRunDir(t *testing.T) {
	dir := t.TempDir()
	meta := filepath.Join(dir, prow.MetadataFile)
	if err := os.MkdirAll(filepath.Dir(meta), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, []byte(`{"provider": "reference", "ccm-digest": "sha256:abc"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &Report{Image: "x.tar", Digest: "sha256:def", Result: "fail", Passed: 7, Warned: 1, Failed: 1,
		Items: []Item{{ID: RuleNonRoot, Status: Fail, Evidence: "root"}}}
	if err := rep.WriteToRunDir(dir); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"provider":                  "reference",
		"ccm-digest":                "sha256:abc",
		prow.MetaReleaseCheck:       "fail: RG1 (7 passed, 1 warned, 1 failed)",
		prow.MetaReleaseCheckImage:  "x.tar",
		prow.MetaReleaseCheckDigest: "sha256:def",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("metadata.json %s = %v, want %q", k, got[k], v)
		}
	}
	var stored Report
	data, err = os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &stored); err != nil || stored.Result != "fail" || len(stored.Items) != 1 {
		t.Errorf("%s = %+v (%v)", ResultFile, stored, err)
	}
}
