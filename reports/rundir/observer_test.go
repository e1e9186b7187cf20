package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

var (
	t0      = time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	runInfo = runner.RunInfo{
		Provider:          "reference",
		Backend:           "local",
		KubernetesVersion: "v1.37.2",
		KubernetesCommit:  "0123456789abcdef",
		CCMBinary:         "/bin/reference-ccm",
		CCMDigest:         "sha256:abcd",
		CCMModule:         "k8s.io/cloud-provider-vsphere@v1.36.0",
		CCMModuleSum:      "h1:BzLS2rZW8qh/Yabh9SvWwGpyUiiyraYjrDSHO76sDfY=",
		CCMCloudProvider:  "v0.36.0",
		CCMGoVersion:      "go1.26.8",
		HarnessVersion:    "v0.1.0",
		Started:           t0,
		Seed:              4242,
	}
)

func spec(suite, text string, labels []string, state types.SpecState, d time.Duration) types.SpecReport {
	s := types.SpecReport{
		ContainerHierarchyTexts:  []string{"[" + suite + "]", "Node addressing:"},
		ContainerHierarchyLabels: [][]string{nil, nil},
		LeafNodeType:             types.NodeTypeIt,
		LeafNodeText:             text,
		LeafNodeLabels:           labels,
		State:                    state,
		StartTime:                t0,
		EndTime:                  t0.Add(d),
		RunTime:                  d,
	}
	if state.Is(types.SpecStateFailureStates) {
		s.Failure = types.Failure{Message: "node ccm-node-1: expected zone a, saw b", Location: types.CodeLocation{FileName: "suites/x.go", LineNumber: 42}}
	}
	return s
}

func report(specs ...types.SpecReport) types.Report {
	return types.Report{SuiteDescription: "CCM conformance: reference", StartTime: t0, EndTime: t0.Add(time.Minute), RunTime: time.Minute, SpecReports: specs}
}

// TestObserver runs the observer over the outcomes a run can have and
// checks that each leaves a run directory Validate accepts, with the
// result, the junit files and the records the outcome calls for.
func TestObserver(t *testing.T) {
	withLatency := spec("nodeaddress", "initializes a node", []string{"InstancesV2", "ReleaseBlocking"}, types.SpecStatePassed, 2*time.Second)
	withLatency.ReportEntries = types.ReportEntries{{Name: "node-initialized", Value: types.WrapEntryValue(150 * time.Millisecond)}}
	beforeSuite := types.SpecReport{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStateFailed, Failure: types.Failure{Message: "cloud unreachable"}}

	tests := []struct {
		name        string
		report      types.Report
		res         *runner.Result
		err         error
		wantResult  string
		wantJUnit   []string
		wantFailing int
		// wantSummary are lines summary.txt must hold.
		wantSummary []string
		// golden, when set, is compared with specs.json and timings.json.
		golden string
	}{
		{
			name: "passed",
			report: report(
				withLatency,
				spec("nodeaddress", "labels zones", []string{"Zones"}, types.SpecStatePassed, time.Second),
				spec("nodeip", "filters dual-stack node IPs", []string{"DualStack"}, types.SpecStateSkipped, 0),
			),
			res:         &runner.Result{Passed: 2, Skipped: 1},
			wantResult:  prow.ResultSuccess,
			wantJUnit:   []string{"junit_nodeaddress_01.xml", "junit_nodeip_01.xml"},
			wantSummary: []string{"provider: reference", "conformance: 2 passed, 0 failed, 1 skipped"},
			golden:      "passed",
		},
		{
			name: "a spec failed",
			report: report(
				spec("nodeaddress", "initializes a node", []string{"ReleaseBlocking"}, types.SpecStatePassed, time.Second),
				spec("nodeaddress", "labels zones", []string{"Zones"}, types.SpecStateFailed, time.Second),
			),
			res:         &runner.Result{Passed: 1, Failed: 1},
			wantResult:  prow.ResultFailure,
			wantJUnit:   []string{"junit_nodeaddress_01.xml"},
			wantFailing: 1,
			golden:      "failed",
		},
		{
			// Every spec passed, and a load balancer stayed behind:
			// specs.json names it, for the LKG rules.
			name: "leaked",
			report: report(
				spec("loadbalancer", "deletes the load balancer", []string{"LoadBalancer", "ReleaseBlocking"}, types.SpecStatePassed, time.Second),
			),
			res:         &runner.Result{Passed: 1, Leftovers: []string{"cloud load balancer lb-0003 (of Service ns/web)"}},
			err:         &runner.LeakError{Leftovers: []string{"cloud load balancer lb-0003 (of Service ns/web)"}, Waited: 30 * time.Second},
			wantResult:  prow.ResultFailure,
			wantJUnit:   []string{"junit_harness_01.xml", "junit_loadbalancer_01.xml"},
			wantFailing: 1,
			wantSummary: []string{"LEFT BEHIND cloud load balancer lb-0003 (of Service ns/web)"},
			golden:      "leaked",
		},
		{
			name:        "setup failed",
			err:         &runner.SetupError{Step: "local cluster", Err: errors.New("etcd did not start")},
			wantResult:  prow.ResultFailure,
			wantJUnit:   []string{"junit_harness_01.xml"},
			wantFailing: 1,
			wantSummary: []string{"harness error: local cluster: etcd did not start", "conformance: no specs ran"},
		},
		{
			name:        "interrupted during setup",
			err:         runner.ErrInterrupted,
			wantResult:  prow.ResultAborted,
			wantJUnit:   []string{"junit_harness_01.xml"},
			wantFailing: 1,
			wantSummary: []string{"harness error: interrupted during setup", "conformance: no specs ran"},
		},
		{
			name: "interrupted during the specs",
			report: report(
				spec("nodeaddress", "initializes a node", nil, types.SpecStateInterrupted, time.Second),
				spec("nodeaddress", "labels zones", nil, types.SpecStateSkipped, 0),
			),
			res:         &runner.Result{Failed: 1, Skipped: 1, Interrupted: true},
			err:         runner.ErrInterrupted,
			wantResult:  prow.ResultAborted,
			wantJUnit:   []string{"junit_harness_01.xml", "junit_nodeaddress_01.xml"},
			wantFailing: 2,
		},
		{
			name:        "BeforeSuite failed",
			report:      report(beforeSuite, spec("nodeaddress", "initializes a node", nil, types.SpecStateSkipped, 0)),
			res:         &runner.Result{Failed: 1, Skipped: 1},
			wantResult:  prow.ResultFailure,
			wantJUnit:   []string{"junit_harness_01.xml", "junit_nodeaddress_01.xml"},
			wantFailing: 1,
		},
		{
			name:       "no spec selected",
			report:     report(),
			res:        &runner.Result{},
			wantResult: prow.ResultSuccess,
			wantJUnit:  []string{"junit_harness_01.xml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := NewObserver(dir, WithClock(func() time.Time { return t0.Add(2 * time.Minute) }))
			if err := o.RunStarted(runInfo); err != nil {
				t.Fatal(err)
			}
			if err := o.RunFinished(runInfo, tt.report, tt.res, tt.err); err != nil {
				t.Fatal(err)
			}
			v, err := prow.Validate(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Valid() {
				t.Errorf("the observer wrote an invalid run directory: %v", v.Problems)
			}
			if v.Result != tt.wantResult {
				t.Errorf("result %q, want %q", v.Result, tt.wantResult)
			}
			var junits []string
			for _, f := range v.JUnitFiles {
				junits = append(junits, strings.TrimPrefix(f, "artifacts/"))
			}
			if strings.Join(junits, ",") != strings.Join(tt.wantJUnit, ",") {
				t.Errorf("junit files %v, want %v", junits, tt.wantJUnit)
			}
			if v.FailedCases != tt.wantFailing {
				t.Errorf("%d failing junit cases, want %d", v.FailedCases, tt.wantFailing)
			}
			if *v.Finished.Timestamp != t0.Add(2*time.Minute).Unix() || v.Started.Timestamp != t0.Unix() {
				t.Errorf("timestamps started %d finished %d", v.Started.Timestamp, *v.Finished.Timestamp)
			}
			for k, want := range map[string]string{prow.MetaProvider: "reference", prow.MetaKubernetesVersion: "v1.37.2", prow.MetaJobVersion: "v1.37.2", prow.MetaCCMDigest: "sha256:abcd", prow.MetaHarnessVersion: "v0.1.0", prow.MetaKubernetesCommit: "0123456789abcdef", prow.MetaSeed: "4242",
				prow.MetaCCMModule: "k8s.io/cloud-provider-vsphere@v1.36.0", prow.MetaCCMModuleSum: "h1:BzLS2rZW8qh/Yabh9SvWwGpyUiiyraYjrDSHO76sDfY=", prow.MetaCCMCloudProvider: "v0.36.0", prow.MetaCCMGoVersion: "go1.26.8"} {
				if got := v.Finished.MetaString(k); got != want {
					t.Errorf("finished.json metadata %s = %q, want %q", k, got, want)
				}
			}
			if data, err := os.ReadFile(filepath.Join(dir, prow.TimingsFile)); err != nil {
				t.Error(err)
			} else if _, err := prow.DecodeTimings(bytes.NewReader(data)); err != nil {
				t.Errorf("timings.json: %v", err)
			}
			summary, err := os.ReadFile(filepath.Join(dir, prow.SummaryFile))
			if err != nil {
				t.Error(err)
			}
			for _, line := range tt.wantSummary {
				if !strings.Contains("\n"+string(summary), "\n"+line+"\n") {
					t.Errorf("summary.txt lacks %q:\n%s", line, summary)
				}
			}
			if tt.golden != "" {
				for _, f := range []string{prow.SpecsFile, prow.TimingsFile} {
					compareGolden(t, filepath.Join(dir, f), filepath.Join("testdata", "observer", tt.golden, filepath.Base(f)))
				}
			}
		})
	}
}

// compareGolden compares a written file with its golden copy; with
// UPDATE_GOLDEN=1 in the environment it rewrites the golden copy instead.
func compareGolden(t *testing.T, got, golden string) {
	t.Helper()
	data, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create it)", err)
	}
	if string(data) != string(want) {
		t.Errorf("%s differs from %s:\n%s", filepath.Base(got), golden, data)
	}
}

// A previous run's results in the same directory are removed when a run
// starts; keys other tools put into metadata.json are kept.
func TestObserverReusedDirectory(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"finished.json":                     `{"timestamp": 1, "passed": true}`,
		"artifacts/junit_oldsuite_01.xml":   `<testsuites/>`,
		"artifacts/metadata.json":           `{"deployer": "kind", "provider": "old", "nested": {"a": "b"}}`,
		"artifacts/logs/kube-apiserver.log": "kept",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := NewObserver(dir)
	if err := o.RunStarted(runInfo); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"finished.json", "artifacts/junit_oldsuite_01.xml"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s of the previous run is still there", gone)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts/logs/kube-apiserver.log")); err != nil {
		t.Errorf("logs were removed: %v", err)
	}
	if err := o.RunFinished(runInfo, report(spec("nodeaddress", "x", nil, types.SpecStatePassed, time.Second)), &runner.Result{Passed: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	data, err := os.ReadFile(filepath.Join(dir, prow.MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if meta["deployer"] != "kind" || meta["provider"] != "reference" || meta["nested"] == nil {
		t.Errorf("metadata.json not merged: %v", meta)
	}
}

func TestBuildLogTee(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	l := NewBuildLog(dir)
	if l.Opened() {
		t.Error("the build log is open before anything was written")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the run directory exists before anything was written: %v", err)
	}
	var out strings.Builder
	w := l.Tee(&out)
	_, _ = w.Write([]byte("hello\n"))
	_, _ = l.Write([]byte("only in the log\n"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, prow.BuildLogFile))
	if string(data) != "hello\nonly in the log\n" || out.String() != "hello\n" {
		t.Errorf("build log %q, stdout %q", data, out.String())
	}
	// Writes after Close still reach stdout.
	if _, err := w.Write([]byte("late\n")); err != nil || !strings.HasSuffix(out.String(), "late\n") {
		t.Errorf("write after Close: %v", err)
	}
}
