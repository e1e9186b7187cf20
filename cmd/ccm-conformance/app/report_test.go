package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/rundir/rundirtest"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// report writes the dashboard of a store, names the records it skipped,
// and exits 2 on a store it cannot read.
func TestReportCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Open(context.Background(), dir, store.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Hour).Truncate(time.Second)
	b := rundirtest.Publish(t, st, rundirtest.Run{Provider: "reference", KubernetesVersion: "v1.37.2", CCMDigest: "sha256:c1", Started: started,
		Specs: []rundirtest.Spec{{Suite: "nodeaddress", Text: "initializes nodes"}}})
	rundirtest.Publish(t, st, rundirtest.Run{Provider: "reference", KubernetesVersion: "v1.37.2", CCMDigest: "sha256:c1", Started: started.Add(time.Minute),
		Specs: []rundirtest.Spec{{Suite: "nodeaddress", Text: "initializes nodes"}}})
	st.Close()
	corrupt := filepath.Join(dir, "logs", b.Job, b.ID, "artifacts", "specs.json")
	if err := os.WriteFile(corrupt, []byte(`{"version": 1, "specs": [`), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string
		wantStderr string
	}{
		{"a store", []string{"--store", dir}, 0, "1 provider(s), 1 Kubernetes version(s), 1 run(s), 1 skipped record(s)", corrupt},
		{"no store", []string{"--store", filepath.Join(dir, "nope")}, 2, "", "--store"},
		{"bad stale-after", []string{"--store", dir, "--stale-after", "-1h"}, 2, "", "--stale-after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "dashboard")
			var stdout, stderr bytes.Buffer
			code := Main(append([]string{"report", "--out", out}, tt.args...), &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantOut) || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stdout %q, stderr %q; want %q and %q", stdout.String(), stderr.String(), tt.wantOut, tt.wantStderr)
			}
			_, err := os.Stat(filepath.Join(out, "index.html"))
			if (err == nil) != (tt.wantCode == 0) {
				t.Errorf("index.html: %v", err)
			}
			if tt.wantCode == 0 {
				if _, err := os.Stat(filepath.Join(out, "badges", "reference.svg")); err != nil {
					t.Errorf("badge: %v", err)
				}
			}
		})
	}
}
