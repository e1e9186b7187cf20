package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate-artifacts exits 0 for every valid fixture, 1 with each problem
// printed for every invalid one, and 2 when the directory is unreadable.
func TestValidateArtifactsExitCodes(t *testing.T) {
	fixtures, err := filepath.Glob(filepath.Join(repoRoot(), "reports", "prow", "testdata", "*valid-*"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	type tc struct {
		dir  string
		code int
	}
	var tests []tc
	for _, f := range fixtures {
		code := 0
		if strings.HasPrefix(filepath.Base(f), "invalid-") {
			code = 1
		}
		tests = append(tests, tc{f, code})
	}
	tests = append(tests, tc{filepath.Join(t.TempDir(), "missing"), 2}, tc{notDir, 2})
	for _, tt := range tests {
		t.Run(filepath.Base(tt.dir), func(t *testing.T) {
			res := runHarness(t, nil, "validate-artifacts", tt.dir)
			if res.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", res.code, tt.code, res.stdout, res.stderr)
			}
			switch tt.code {
			case 0:
				if !strings.Contains(res.stdout, "valid run directory") {
					t.Errorf("stdout: %s", res.stdout)
				}
			case 1:
				if !strings.Contains(res.stdout, tt.dir+"/") {
					t.Errorf("the problem does not name the file: %s", res.stdout)
				}
				oneLine(t, res.stderr)
			case 2:
				oneLine(t, res.stderr)
				if !strings.Contains(res.stderr, tt.dir) {
					t.Errorf("stderr does not name the input: %s", res.stderr)
				}
			}
		})
	}
}
