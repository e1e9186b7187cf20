package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/labels"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		res  *Result
		err  error
		want int
	}{
		{"all passed", &Result{Passed: 3}, nil, ExitPassed},
		{"skips are not failures", &Result{Passed: 1, Skipped: 5}, nil, ExitPassed},
		{"a spec failed", &Result{Passed: 2, Failed: 1}, nil, ExitFailed},
		{"bad input", nil, &InputError{errors.New("profile x: bad")}, ExitHarnessError},
		{"setup failed", nil, &SetupError{Step: "ccm", Err: errors.New("exited")}, ExitHarnessError},
		{"interrupted", &Result{Passed: 1, Interrupted: true}, ErrInterrupted, ExitHarnessError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.res, tt.err); got != tt.want {
				t.Errorf("ExitCode = %d, want %d", got, tt.want)
			}
		})
	}
}

func spec(text string, state types.SpecState, msg string) types.SpecReport {
	return types.SpecReport{
		ContainerHierarchyTexts: []string{"[suite]", "Describe"},
		LeafNodeText:            text,
		LeafNodeType:            types.NodeTypeIt,
		State:                   state,
		Failure:                 types.Failure{Message: msg},
	}
}

func TestResultFrom(t *testing.T) {
	report := types.Report{SpecReports: types.SpecReports{
		spec("passes", types.SpecStatePassed, ""),
		spec("fails", types.SpecStateFailed, "node n1: expected zone-a\nsaw zone-a-wrong"),
		spec("times out", types.SpecStateTimedout, "timed out"),
		spec("skips", types.SpecStateSkipped, "profile does not declare capability X"),
		{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStatePassed},
		{LeafNodeType: types.NodeTypeReportAfterSuite, State: types.SpecStateFailed, Failure: types.Failure{Message: "report failed"}},
	}}
	res := resultFrom(report, "")
	if res.Passed != 1 || res.Failed != 3 || res.Skipped != 1 {
		t.Errorf("counts = %+v, want 1 passed, 3 failed (two specs and a suite node), 1 skipped", res)
	}
	if got := strings.Join(res.Failures, "|"); !strings.Contains(got, "[suite] Describe fails: node n1: expected zone-a …") {
		t.Errorf("failures = %q, want one line per failure naming the spec", got)
	}
	if res.Summary() != "1 passed, 3 failed, 1 skipped" || res.NotSelectedLine() != "" {
		t.Errorf("summary = %q", res.Summary())
	}
}

func labelled(s types.SpecReport, labels ...string) types.SpecReport {
	s.LeafNodeLabels = labels
	return s
}

// A spec the label filter left out is not selected, not skipped; a spec
// the filter selected that skips (a missing capability) is skipped.
func TestResultFromNotSelected(t *testing.T) {
	report := types.Report{SpecReports: types.SpecReports{
		labelled(spec("runs", types.SpecStatePassed, ""), "InstancesV2"),
		labelled(spec("lacks a capability", types.SpecStateSkipped, `profile "x" does not declare capability Zones`), "InstancesV2", "Zones"),
		labelled(spec("left out", types.SpecStateSkipped, ""), "Routes"),
		labelled(spec("left out too", types.SpecStateSkipped, ""), "LoadBalancer"),
	}}
	res := resultFrom(report, "InstancesV2")
	if res.Passed != 1 || res.Skipped != 1 || res.NotSelected != 2 {
		t.Errorf("counts = %+v, want 1 passed, 1 skipped, 2 not selected", res)
	}
	// The closing line keeps the shape CI jobs parse, then the rest.
	if got, want := res.Summary()+"; "+res.NotSelectedLine(), "1 passed, 0 failed, 1 skipped; not selected: 2 (left out by the label filter; not run, not skipped)"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}

func withDriverFault(s types.SpecReport, fault string) types.SpecReport {
	s.ReportEntries = append(s.ReportEntries, types.ReportEntry{Name: labels.EntryDriverFault, Value: types.WrapEntryValue(fault)})
	return s
}

// A spec that failed because the cloud driver broke its protocol is the
// driver's failure: counted as failed (as JUnit shows it), listed apart,
// and its line says so.
func TestResultFromDriverFaults(t *testing.T) {
	fault := `cloud driver broken-driver broke the protocol: "instance get" answered with invalid JSON`
	report := types.Report{SpecReports: types.SpecReports{
		spec("passes", types.SpecStatePassed, ""),
		withDriverFault(spec("asks the driver", types.SpecStateFailed, "Unexpected error: "+fault), fault),
		withDriverFault(spec("passes although the driver was odd", types.SpecStatePassed, ""), fault),
	}}
	res := resultFrom(report, "")
	if res.Failed != 1 || len(res.DriverFailures) != 1 || res.DriverFault != fault {
		t.Fatalf("result = %+v, want one failure, the driver's", res)
	}
	if !strings.Contains(res.Failures[0], "asks the driver: "+fault) || !strings.Contains(res.Failures[0], "failed for the cloud driver, not the CCM") {
		t.Errorf("failure line = %q", res.Failures[0])
	}

	// A round trip through JSON (a lane's report) keeps the entry.
	data, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	var back types.Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if res := resultFrom(back, ""); len(res.DriverFailures) != 1 || res.DriverFault != fault {
		t.Errorf("after JSON: %+v", res)
	}
}

// A spec that failed while the CCM under test was gone says so on its
// line, after its own message; it is still the CCM's failure.
func TestResultFromCCMEnded(t *testing.T) {
	s := spec("initializes a node", types.SpecStateFailed, "node n1: expected no uninitialized taint")
	s.ReportEntries = append(s.ReportEntries, types.ReportEntry{Name: labels.EntryCCMEnded, Value: types.WrapEntryValue("ccm exit status 255 (command: reference-ccm); last log lines:\nF1206 error running controllers")})
	res := resultFrom(types.Report{SpecReports: types.SpecReports{s}}, "")
	if res.Failed != 1 || len(res.DriverFailures) != 0 {
		t.Fatalf("result = %+v, want one failure, the CCM's", res)
	}
	if want := "initializes a node: node n1: expected no uninitialized taint (the CCM under test had ended: ccm exit status 255 (command: reference-ccm); last log lines: …)"; !strings.HasSuffix(res.Failures[0], want) {
		t.Errorf("failure line = %q, want it to end %q", res.Failures[0], want)
	}
}

func TestErrorClass(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{&InputError{errors.New("bad")}, ClassInput},
		{&SetupError{Step: "ccm", Err: errors.New("exited")}, ClassCCM},
		{fmt.Errorf("lane 2: %w", &SetupError{Step: "ccm deployment", Err: errors.New("no pod ready")}), ClassCCM},
		{&SetupError{Step: "cluster", Err: errors.New("etcd did not start")}, ClassSetup},
		{&DriverError{Driver: "d", Err: errors.New("garbage")}, ClassDriver},
		{fmt.Errorf("lane 1: %w", &DriverError{Driver: "d", Err: errors.New("garbage")}), ClassDriver},
		{ErrInterrupted, ClassInterrupted},
		{errors.New("other"), ClassSetup},
	}
	for _, tt := range tests {
		if got := ErrorClass(tt.err); got != tt.want {
			t.Errorf("ErrorClass(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if got := ExitCode(&Result{Failed: 1, DriverFailures: []string{"x"}}, &DriverError{Err: errors.New("garbage")}); got != ExitHarnessError {
		t.Errorf("ExitCode of a driver's failure = %d, want %d", got, ExitHarnessError)
	}
}

func TestGitCommit(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"},
		{"0123456789ABCDEF0123456789ABCDEF01234567", "0123456789abcdef0123456789abcdef01234567"},
		{"$Format:%H$", ""},
		{"", ""},
		{"unknown", ""},
		{"0123456", ""},
		{"0123456789abcdef0123456789abcdef0123456z", ""},
	}
	for _, tt := range tests {
		if got := GitCommit(tt.in); got != tt.want {
			t.Errorf("GitCommit(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSuiteOf(t *testing.T) {
	if got := SuiteOf(spec("x", types.SpecStatePassed, "")); got != "suite" {
		t.Errorf("SuiteOf = %q, want suite", got)
	}
	if got := SuiteOf(types.SpecReport{ContainerHierarchyTexts: []string{"Describe"}}); got != "" {
		t.Errorf("SuiteOf without a suite container = %q, want empty", got)
	}
}

func TestCheckExecutable(t *testing.T) {
	dir := t.TempDir()
	plain := dir + "/plain"
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, want string
	}{
		{"/bin/sh", ""},
		{"sh", ""},
		{dir + "/missing", "no such file"},
		{plain, "not an executable file"},
		{dir, "not an executable file"},
		{"no-such-command-anywhere", "not found on PATH"},
	}
	for _, tt := range tests {
		err := checkExecutable(tt.path)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("checkExecutable(%q) = %v, want %q", tt.path, err, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("\x1b[1mSyntax Error{{/}}\nmore"); got != "Syntax Error …" {
		t.Errorf("oneLine = %q", got)
	}
}

func TestContainerNameFor(t *testing.T) {
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"ccm-conformance", "0a1b2c3d4e5f", "main"}, "ccm-conformance-0a1b2c3d4e5f-main"},
		{[]string{"ccm-conformance", "0a1b2c3d4e5f", "lane-2", "lm-3/holder"}, "ccm-conformance-0a1b2c3d4e5f-lane-2-lm-3-holder"},
		{[]string{"ccm-conformance", "id", "spec: a b"}, "ccm-conformance-id-spec--a-b"},
	}
	for _, tt := range tests {
		if got := containerNameFor(tt.parts...); got != tt.want {
			t.Errorf("containerNameFor(%q) = %q, want %q", tt.parts, got, tt.want)
		}
	}
}

func TestNewRunID(t *testing.T) {
	a, err := newRunID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newRunID()
	if len(a) != 2*runIDBytes || a == b {
		t.Errorf("run IDs %q and %q: want %d hex digits, different each time", a, b, 2*runIDBytes)
	}
}

func TestEmulatedMinor(t *testing.T) {
	tests := []struct {
		major, minor, emuMajor, emuMinor, want string
	}{
		{"1", "37", "1", "37", ""},     // its own release
		{"1", "37", "", "", ""},        // an API server that does not say
		{"1", "37", "1", "35", "1.35"}, // --emulated-version=1.35
		{"1", "37+", "1", "37", ""},    // a vendor's build
		{"1", "37+", "1", "36", "1.36"},
	}
	for _, tt := range tests {
		if got := emulatedMinor(tt.major, tt.minor, tt.emuMajor, tt.emuMinor); got != tt.want {
			t.Errorf("emulatedMinor(%q, %q, %q, %q) = %q, want %q", tt.major, tt.minor, tt.emuMajor, tt.emuMinor, got, tt.want)
		}
	}
}

// A run that finished without a spec passing or failing tested nothing,
// and says why in one line.
func TestNothingTested(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		want string // "" for a run that tested something
	}{
		{"a spec passed", Result{Passed: 1, Skipped: 5}, ""},
		{"a spec failed", Result{Failed: 1}, ""},
		{"interrupted before any spec", Result{Interrupted: true}, ""},
		{"every spec skipped, one reason", Result{Skipped: 7, SkipReasons: map[string]int{"no machine": 7}}, "all 7 selected specs were skipped; 7 of them: no machine"},
		{"every spec skipped, the commonest reason first", Result{Skipped: 4, SkipReasons: map[string]int{"a": 1, "b": 3}},
			"all 4 selected specs were skipped; 3 of them: b (and 1 other reason(s), in the run's output)"},
		{"the filter selected nothing", Result{NotSelected: 49}, "the label filter selected none of the 49 specs"},
		{"no specs at all", Result{}, "the run has no specs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.res.NothingTested(); got != tt.want {
				t.Errorf("NothingTested() = %q, want %q", got, tt.want)
			}
		})
	}
}
