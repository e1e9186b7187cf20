package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	}{
		{"bucket", []string{"--provider", "aws", "--bucket", "gs://ccm-results"}, 0, "valid-bucket.yaml", ""},
		{"prefix and dashboard", []string{"--provider", "reference", "--bucket", "gs://sig-cloud-provider/ccm/results/", "--dashboard", "provider-reference"}, 0, "valid-prefix.yaml", ""},
		{"not GCS", []string{"--provider", "aws", "--bucket", "file:///tmp/results"}, 2, "", "gs://bucket"},
		{"no bucket", []string{"--provider", "aws"}, 2, "", "bucket"},
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
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.wantErr)
			}
		})
	}
}
