package runner

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
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
	res := resultFrom(report)
	if res.Passed != 1 || res.Failed != 3 || res.Skipped != 1 {
		t.Errorf("counts = %+v, want 1 passed, 3 failed (two specs and a suite node), 1 skipped", res)
	}
	if got := strings.Join(res.Failures, "|"); !strings.Contains(got, "[suite] Describe fails: node n1: expected zone-a …") {
		t.Errorf("failures = %q, want one line per failure naming the spec", got)
	}
	if res.Summary() != "1 passed, 3 failed, 1 skipped" {
		t.Errorf("summary = %q", res.Summary())
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
