package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The command prints what reports/testgrid's golden files hold, and bad
// flags exit 2.
func TestTestGridConfigCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		golden   string
		wantErr  string
		// wantNoProwjob: disable_prowjob_analysis is set (a store publish
		// writes); a Prow job's bucket leaves it unset.
		wantNoProwjob bool
	}{
		{"bucket", []string{"--provider", "aws", "--bucket", "gs://ccm-results"}, 0, "valid-bucket.yaml", "", true},
		{"prefix and dashboard", []string{"--provider", "reference", "--bucket", "gs://sig-cloud-provider/ccm/results/", "--dashboard", "provider-reference"}, 0, "valid-prefix.yaml", "", true},
		{"a Prow job", []string{"--provider", "My Cloud", "--bucket", "gs://kubernetes-jenkins", "--job", "ci-my-cloud-ccm-conformance", "--stale-after", "24h", "--failures-to-alert", "2"}, 0, "valid-prow-job.yaml", "", false},
		{"not GCS", []string{"--provider", "aws", "--bucket", "file:///tmp/results"}, 2, "", "gs://bucket", false},
		{"no bucket", []string{"--provider", "aws"}, 2, "", "bucket", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(append([]string{"testgrid-config"}, tt.args...), &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			if tt.golden != "" {
				want, err := os.ReadFile(filepath.Join("..", "..", "..", "reports", "testgrid", "testdata", tt.golden))
				if err != nil {
					t.Fatal(err)
				}
				if stdout.String() != string(want) {
					t.Errorf("output differs from %s:\n%s", tt.golden, stdout.String())
				}
				var cfg struct {
					TestGroups []struct {
						DisableProwjobAnalysis *bool `json:"disable_prowjob_analysis"`
					} `json:"test_groups"`
				}
				if err := yaml.Unmarshal(stdout.Bytes(), &cfg); err != nil || len(cfg.TestGroups) != 1 {
					t.Fatalf("output is not one test group (%v):\n%s", err, stdout.String())
				}
				switch d := cfg.TestGroups[0].DisableProwjobAnalysis; {
				case tt.wantNoProwjob && (d == nil || !*d):
					t.Error("disable_prowjob_analysis is not true: TestGrid would add a Pod row of running cells to a published store")
				case !tt.wantNoProwjob && d != nil:
					t.Errorf("disable_prowjob_analysis is set (%v) for a Prow job, whose prowjob.json TestGrid should read", *d)
				}
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.wantErr)
			}
		})
	}
}
