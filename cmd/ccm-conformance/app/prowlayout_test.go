package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/store/storetest"
)

// runFlags is run's --artifacts flag on a command, set or not.
func runFlags(t *testing.T, artifacts string) (*cobra.Command, *runner.Options) {
	t.Helper()
	opts := &runner.Options{}
	cmd := &cobra.Command{}
	cmd.Flags().StringVar(&opts.ArtifactsDir, "artifacts", defaultArtifacts(), "")
	if artifacts != "" {
		if err := cmd.Flags().Set("artifacts", artifacts); err != nil {
			t.Fatal(err)
		}
	}
	return cmd, opts
}

// With only $ARTIFACTS set, run writes into it as into a Prow job's
// artifacts directory; with --artifacts, that is the run directory.
func TestProwLayout(t *testing.T) {
	tests := []struct {
		name      string
		env       string // $ARTIFACTS
		flag      string // --artifacts
		wantProw  bool
		wantRunIn string
	}{
		{name: "neither", wantRunIn: "_artifacts"},
		{name: "flag only", flag: "/tmp/x", wantRunIn: "/tmp/x"},
		{name: "both", env: "/tmp/prow", flag: "/tmp/x", wantRunIn: "/tmp/x"},
		{name: "ARTIFACTS only", env: "set", wantProw: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			env := tt.env
			if env == "set" {
				env = filepath.Join(t.TempDir(), "artifacts")
			}
			t.Setenv("ARTIFACTS", env)
			cmd, opts := runFlags(t, tt.flag)
			pl, err := newProwLayout(cmd, opts)
			if err != nil {
				t.Fatal(err)
			}
			if (pl != nil) != tt.wantProw {
				t.Fatalf("Prow layout %v, want %v", pl != nil, tt.wantProw)
			}
			if !tt.wantProw {
				if opts.ArtifactsDir != tt.wantRunIn {
					t.Errorf("run directory %q, want %q", opts.ArtifactsDir, tt.wantRunIn)
				}
				return
			}
			if pl.dst != env || !strings.HasPrefix(opts.ArtifactsDir, tmp) {
				t.Errorf("exporting %s into %s, want a temporary run directory into %s", opts.ArtifactsDir, pl.dst, env)
			}
		})
	}
}

// A finished run lands in $ARTIFACTS without nesting, merged with what was
// there, and its temporary run directory goes.
func TestProwLayoutExports(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	artifacts := filepath.Join(t.TempDir(), "artifacts")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifacts, "metadata.json"), []byte(`{"pod": "ci-job-1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ARTIFACTS", artifacts)
	cmd, opts := runFlags(t, "")
	pl, err := newProwLayout(cmd, opts)
	if err != nil || pl == nil {
		t.Fatalf("no Prow layout: %v", err)
	}
	storetest.WriteRunDir(t, opts.ArtifactsDir, storetest.Run{
		Provider: "reference", KubernetesVersion: "v1.37.2", CCMDigest: "sha256:c1", Started: time.Now().Add(-time.Minute),
		Specs: []storetest.Spec{{Suite: "nodeaddress", Text: "initializes nodes", State: types.SpecStateFailed, Failure: "no"}},
	})
	var out bytes.Buffer
	if code := pl.finish(1, &out); code != 1 {
		t.Errorf("exit code %d, want the run's 1", code)
	}
	if _, err := os.Stat(opts.ArtifactsDir); err == nil {
		t.Errorf("the temporary run directory %s is still there", opts.ArtifactsDir)
	}
	for _, name := range []string{"junit_nodeaddress_01.xml", "specs.json", "timings.json"} {
		if _, err := os.Stat(filepath.Join(artifacts, name)); err != nil {
			t.Errorf("$ARTIFACTS/%s: %v", name, err)
		}
	}
	for _, name := range []string{"artifacts", "finished.json", "started.json"} {
		if _, err := os.Stat(filepath.Join(artifacts, name)); err == nil {
			t.Errorf("$ARTIFACTS/%s exists: Prow writes its own", name)
		}
	}
	var meta map[string]any
	data, _ := os.ReadFile(filepath.Join(artifacts, "metadata.json"))
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if meta["pod"] != "ci-job-1" || meta[prow.MetaCCMDigest] != "sha256:c1" {
		t.Errorf("metadata.json %v: want the earlier keys and the run's", meta)
	}
	if !strings.Contains(out.String(), artifacts) {
		t.Errorf("run does not say where its results are: %q", out.String())
	}
}

// Bad input in the Prow layout exits 2 and leaves nothing behind.
func TestProwLayoutBadInput(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	artifacts := filepath.Join(t.TempDir(), "artifacts")
	t.Setenv("ARTIFACTS", artifacts)
	var stdout, stderr bytes.Buffer
	code := Main([]string{"run", "--provider", filepath.Join(tmp, "nope.yaml")}, &stdout, &stderr)
	if code != runner.ExitHarnessError {
		t.Errorf("exit code %d, want 2; stderr %s", code, stderr.String())
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("left behind in TMPDIR: %v", entries)
	}
	if _, err := os.Stat(artifacts); err == nil {
		t.Errorf("bad input wrote into $ARTIFACTS")
	}
}
