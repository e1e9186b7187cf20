package app

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
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
// artifacts directory, through a temporary run directory; with
// --artifacts, that is the run directory.
func TestRunDirOptions(t *testing.T) {
	tests := []struct {
		name       string
		env        string // $ARTIFACTS
		flag       string // --artifacts
		wantDir    string
		wantExport string // "env" for $ARTIFACTS
	}{
		{name: "neither", wantDir: runner.DefaultArtifactsDir},
		{name: "flag only", flag: "/tmp/x", wantDir: "/tmp/x"},
		{name: "both", env: "/tmp/prow", flag: "/tmp/x", wantDir: "/tmp/x"},
		{name: "ARTIFACTS only", env: "set", wantExport: "env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == "set" {
				env = filepath.Join(t.TempDir(), "artifacts")
			}
			t.Setenv("ARTIFACTS", env)
			cmd, opts := runFlags(t, tt.flag)
			o, err := runDirOptions(cmd, *opts, new(bytes.Buffer))
			if err != nil {
				t.Fatal(err)
			}
			wantExport := ""
			if tt.wantExport == "env" {
				wantExport = env
			}
			if o.Dir != tt.wantDir || o.ExportTo != wantExport {
				t.Errorf("run directory %q exported to %q, want %q exported to %q", o.Dir, o.ExportTo, tt.wantDir, wantExport)
			}
			if o.Name != "ccm-conformance" || o.LaneCommand == nil {
				t.Errorf("options %+v: want the program's name and its lane command", o)
			}
		})
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
