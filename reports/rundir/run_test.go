package rundir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// fakeRun stands in for runner.Run: it tells the observers as the runner
// does, prints a line, and ends with the outcome given.
func fakeRun(rep types.Report, res *runner.Result, runErr error) func(context.Context, runner.Options) (*runner.Result, error) {
	return func(_ context.Context, ro runner.Options) (*runner.Result, error) {
		var input *runner.InputError
		if errors.As(runErr, &input) {
			return nil, runErr // bad input: nothing starts, nothing is written
		}
		for _, o := range ro.Observers {
			if err := o.RunStarted(runInfo); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(ro.Out, "running in %s\n", ro.ArtifactsDir)
		for _, o := range ro.Observers {
			if err := o.RunFinished(runInfo, rep, res, runErr); err != nil {
				return nil, err
			}
		}
		return res, runErr
	}
}

// Run seeds, runs and exports for both binaries: into a run directory
// given, into $ARTIFACTS through a temporary one, or into both.
func TestRun(t *testing.T) {
	passed := report(spec("nodeaddress", "initializes nodes", nil, types.SpecStatePassed, time.Second))
	failed := report(spec("nodeaddress", "initializes nodes", nil, types.SpecStateFailed, time.Second))
	interrupted := report(spec("nodeaddress", "initializes nodes", nil, types.SpecStateInterrupted, time.Second))
	skipped := report(spec("nodeaddress", "initializes nodes", nil, types.SpecStateSkipped, time.Second))
	allSkipped := &runner.Result{Skipped: 7, SkipReasons: map[string]int{"the harness cannot add a machine to this cluster": 7}}
	tests := []struct {
		name string
		// dir and export: "set" for a directory of the test's.
		dir, export string
		report      types.Report
		res         *runner.Result
		err         error
		wantCode    int
		wantErr     string // a substring; "" for no error
		// wantDir: the run directory is kept and valid; wantExport: the
		// artifacts are in the export directory.
		wantDir, wantExport bool
		wantOut             string
	}{
		{name: "run directory, passed", dir: "set", report: passed, res: &runner.Result{Passed: 1}, wantCode: 0, wantDir: true},
		{name: "run directory, a spec failed", dir: "set", report: failed, res: &runner.Result{Failed: 1}, wantCode: 1, wantDir: true},
		{name: "run directory, bad input", dir: "set", err: &runner.InputError{Err: errors.New("profile nope.yaml: no such file")}, wantCode: 2, wantErr: "nope.yaml"},
		{name: "export, passed", export: "set", report: passed, res: &runner.Result{Passed: 1}, wantCode: 0, wantExport: true, wantOut: "results in"},
		{name: "export, a spec failed", export: "set", report: failed, res: &runner.Result{Failed: 1}, wantCode: 1, wantExport: true},
		{name: "export, setup failed", export: "set", err: &runner.SetupError{Step: "ccm", Err: errors.New("not healthy")}, wantCode: 2, wantErr: "ccm: not healthy", wantExport: true},
		{name: "export, interrupted", export: "set", report: interrupted, res: &runner.Result{Failed: 1, Interrupted: true}, err: runner.ErrInterrupted, wantCode: 2, wantErr: "run interrupted; partial results are in EXPORT", wantExport: true},
		{name: "export, bad input", export: "set", err: &runner.InputError{Err: errors.New("profile nope.yaml: no such file")}, wantCode: 2, wantErr: "nope.yaml"},
		{name: "export, every spec skipped: nothing was tested", export: "set", report: skipped, res: allSkipped, err: &runner.NothingTestedError{Why: allSkipped.NothingTested()}, wantCode: 2,
			wantErr: "nothing was tested: all 7 selected specs were skipped; 7 of them: the harness cannot add a machine to this cluster", wantExport: true},
		{name: "both, kept", dir: "set", export: "set", report: passed, res: &runner.Result{Passed: 1}, wantCode: 0, wantDir: true, wantExport: true, wantOut: "ccm-conformance publish takes it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			var dir, export string
			if tt.dir == "set" {
				dir = filepath.Join(t.TempDir(), "run")
			}
			if tt.export == "set" {
				export = filepath.Join(t.TempDir(), "artifacts")
				if err := os.MkdirAll(export, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(export, "metadata.json"), []byte(`{"deployer-version": "v1"}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out strings.Builder
			code, err := Run(context.Background(), Options{
				Runner:   runner.Options{Suites: []framework.Suite{{Name: "nodeaddress"}}},
				Name:     "ccm-conformance",
				Dir:      dir,
				ExportTo: export,
				Metadata: map[string]string{"tester-version": "v0.1.0"},
				Out:      &out,
				run:      fakeRun(tt.report, tt.res, tt.err),
			})
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (error %v)", code, tt.wantCode, err)
			}
			wantErr := strings.ReplaceAll(tt.wantErr, "EXPORT", export)
			switch {
			case wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
				t.Errorf("error %v, want one containing %q", err, wantErr)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("error %q is not one line", err)
			}
			if tt.err != nil && errors.Is(tt.err, runner.ErrInterrupted) && !errors.Is(err, runner.ErrInterrupted) {
				t.Errorf("error %v is not runner.ErrInterrupted", err)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output %q does not contain %q", out.String(), tt.wantOut)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
				t.Errorf("left behind in TMPDIR: %v", entries)
			}
			checkRunDir(t, dir, tt.wantDir, err)
			checkExport(t, export, tt.wantExport)
		})
	}
}

func checkRunDir(t *testing.T, dir string, want bool, runErr error) {
	t.Helper()
	if dir == "" {
		return
	}
	if !want {
		if _, err := os.Stat(filepath.Join(dir, prow.StartedFile)); err == nil {
			t.Errorf("bad input wrote a run directory %s", dir)
		}
		return
	}
	v, err := prow.Validate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Valid() {
		t.Errorf("run directory %s: %v", dir, v.Problems)
	}
	if v.Finished.MetaString("tester-version") != "v0.1.0" {
		t.Errorf("finished.json metadata %v lacks the added key", v.Finished.Metadata)
	}
	log, err := os.ReadFile(filepath.Join(dir, prow.BuildLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "running in "+dir) {
		t.Errorf("build log %q lacks the run's output", log)
	}
	if runErr != nil && !strings.HasSuffix(string(log), "ccm-conformance: "+runErr.Error()+"\n") {
		t.Errorf("build log %q does not end with the error line", log)
	}
}

func checkExport(t *testing.T, export string, want bool) {
	t.Helper()
	if export == "" {
		return
	}
	_, err := os.Stat(filepath.Join(export, prow.JUnitFileName("nodeaddress")))
	_, herr := os.Stat(filepath.Join(export, prow.JUnitFileName(prow.HarnessSuite)))
	if got := err == nil || herr == nil; got != want {
		t.Errorf("junit files exported: %v, want %v", got, want)
	}
	meta := readJSONMap(t, filepath.Join(export, "metadata.json"))
	if meta["deployer-version"] != "v1" {
		t.Errorf("metadata.json %v lost the deployer's key", meta)
	}
	if !want {
		return
	}
	for _, k := range append(prow.ColumnHeaderKeys(), "tester-version", prow.MetaProvider) {
		if _, ok := meta[k].(string); !ok {
			t.Errorf("exported metadata.json lacks %q: %v", k, meta)
		}
	}
	for _, name := range []string{"artifacts", prow.FinishedFile, prow.StartedFile, prow.BuildLogFile} {
		if _, err := os.Stat(filepath.Join(export, name)); err == nil {
			t.Errorf("%s is in the exported artifacts", name)
		}
	}
}

// A failed export fails a passing run, with the export's error.
func TestRunExportFails(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	export := filepath.Join(t.TempDir(), "artifacts")
	// A file where the junit file goes: removing it fails.
	if err := os.MkdirAll(filepath.Join(export, prow.JUnitFileName("nodeaddress"), "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, err := Run(context.Background(), Options{
		Runner:   runner.Options{Suites: []framework.Suite{{Name: "nodeaddress"}}},
		Name:     "kubetest2-tester-ccm",
		ExportTo: export,
		Out:      new(strings.Builder),
		run:      fakeRun(report(spec("nodeaddress", "x", nil, types.SpecStatePassed, time.Second)), &runner.Result{Passed: 1}, nil),
	})
	if code != runner.ExitHarnessError || err == nil || !strings.Contains(err.Error(), "earlier run") {
		t.Errorf("exit code %d, error %v; want 2 and the export's error", code, err)
	}
}
