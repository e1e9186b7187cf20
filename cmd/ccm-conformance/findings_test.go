package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// findingsCheck is what a real provider's run must show: exactly the
// findings of docs/findings.md fail (each a map entry, id to a part of its
// spec's text), and every other spec passes or is skipped for a reason
// docs/providers.md gives.
type findingsCheck struct {
	findings map[string]string
	// skipOK says whether a skip reason is one docs/providers.md gives.
	skipOK func(reason string) bool
	// labelFilter, when set, is the run's --label-filter as one label: a
	// spec without it did not run, and its skip is no finding.
	labelFilter string
	// failOK, when set, accepts a failure the findings cannot list by spec
	// (a race of the CCM's that strikes some spec or none), saying why.
	failOK func(s prow.SpecRecord) (string, bool)
	// mustPass are parts of spec texts that must have run and passed:
	// what the provider's emulator was built to carry (a skip there
	// would hide it).
	mustPass []string
}

// check reads the run's specs.json, reports every spec that breaks the
// check, and returns how many passed.
func (c findingsCheck) check(t *testing.T, artifacts string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(artifacts, prow.SpecsFile))
	if err != nil {
		t.Fatal(err)
	}
	var specs prow.SpecRecords
	if err := json.Unmarshal(data, &specs); err != nil {
		t.Fatal(err)
	}
	failing := map[string]bool{}
	passed := 0
	passedText := map[string]bool{}
	for _, s := range specs.Specs {
		for _, text := range c.mustPass {
			if s.Passed() && strings.Contains(s.Text, text) {
				passedText[text] = true
			}
		}
		finding := ""
		for id, text := range c.findings {
			if strings.Contains(s.Text, text) {
				finding = id
			}
		}
		switch {
		case s.Failed() && finding != "":
			failing[finding] = true
		case s.Failed():
			if c.failOK != nil {
				if why, ok := c.failOK(s); ok {
					t.Logf("spec %q failed by %s: %s", s.Text, why, firstLine(s.Failure))
					continue
				}
			}
			t.Errorf("spec %q failed and is no finding of docs/findings.md: triage it (harness or CCM?): %s", s.Text, firstLine(s.Failure))
		case finding != "":
			t.Errorf("finding %s no longer fails (spec %q: %s): re-check it and update docs/findings.md", finding, s.Text, s.State)
		case s.Passed():
			passed++
		case s.Skipped() && c.labelFilter != "" && !slices.Contains(s.Labels, c.labelFilter):
		case s.Skipped() && !strings.Contains(s.SkipReason, "does not declare capability") && (c.skipOK == nil || !c.skipOK(s.SkipReason)):
			t.Errorf("spec %q skipped for a reason docs/providers.md does not give: %s", s.Text, s.SkipReason)
		}
	}
	for id := range c.findings {
		if !failing[id] {
			t.Errorf("finding %s did not fail", id)
		}
	}
	for _, text := range c.mustPass {
		if !passedText[text] {
			t.Errorf("no spec %q passed", text)
		}
	}
	return passed
}

// checkMetadata checks the run's metadata.json: which module ran, and the
// skew.
func checkMetadata(t *testing.T, artifacts string, want map[string]string) {
	t.Helper()
	meta := map[string]any{}
	if data, err := os.ReadFile(filepath.Join(artifacts, prow.MetadataFile)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	for key, w := range want {
		if got, _ := meta[key].(string); got != w {
			t.Errorf("metadata %s = %q, want %q", key, got, w)
		}
	}
}
