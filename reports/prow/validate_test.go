package prow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateFixtures(t *testing.T) {
	// want is the one problem each invalid fixture must be reported for,
	// as file and a substring of the message; valid fixtures have none.
	tests := map[string]struct{ file, message string }{
		"valid-passed":                               {},
		"valid-failed":                               {},
		"valid-aborted":                              {},
		"valid-no-result-field":                      {},
		"invalid-no-started":                         {StartedFile, "missing"},
		"invalid-started-not-json":                   {StartedFile, "not valid JSON"},
		"invalid-started-zero-timestamp":             {StartedFile, "timestamp is zero"},
		"invalid-no-finished":                        {FinishedFile, "missing"},
		"invalid-finished-not-json":                  {FinishedFile, "not valid JSON"},
		"invalid-finished-zero-timestamp":            {FinishedFile, "timestamp is zero"},
		"invalid-finished-no-timestamp":              {FinishedFile, "timestamp is zero or missing"},
		"invalid-finished-no-passed":                 {FinishedFile, `no "passed" field`},
		"invalid-finished-bad-result":                {FinishedFile, `"ERROR" is none of`},
		"invalid-finished-result-contradicts-passed": {FinishedFile, "contradicts passed: true"},
		"invalid-finished-before-started":            {FinishedFile, "before started.json"},
		"invalid-no-junit":                           {"artifacts/junit_*.xml", "no junit file"},
		"invalid-junit-unparsable":                   {"artifacts/junit_nodeaddress_01.xml", "not valid JUnit XML"},
		"invalid-junit-not-junit":                    {"artifacts/junit_nodeaddress_01.xml", "root element is <html>"},
		"invalid-failed-without-failing-case":        {FinishedFile, "no junit test case failed"},
		"invalid-passed-with-failing-case":           {FinishedFile, "1 junit test case(s) failed"},
	}
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		name := d.Name()
		if !strings.HasPrefix(name, "valid-") && !strings.HasPrefix(name, "invalid-") {
			continue
		}
		if _, ok := tests[name]; !ok {
			t.Errorf("fixture testdata/%s has no case in this test", name)
		}
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			v, err := Validate(filepath.Join("testdata", name))
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if strings.HasPrefix(name, "valid-") {
				if !v.Valid() {
					t.Errorf("valid fixture rejected: %v", v.Problems)
				}
				return
			}
			if len(v.Problems) != 1 {
				t.Fatalf("got %d problems, want exactly one (%s: …%s…): %v", len(v.Problems), want.file, want.message, v.Problems)
			}
			p := v.Problems[0]
			if p.File != want.file || !strings.Contains(p.Message, want.message) {
				t.Errorf("problem %q, want %s: …%s…", p, want.file, want.message)
			}
		})
	}
}

func TestValidateUnreadable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(t.TempDir(), "nope"), file} {
		if _, err := Validate(dir); err == nil {
			t.Errorf("Validate(%s): no error", dir)
		}
	}
}
