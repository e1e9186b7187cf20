package rundir

import (
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/labels"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// readJUnit parses a written junit file into its test cases, by name.
func readJUnit(t *testing.T, path string) map[string]reporters.JUnitTestCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cases := map[string]reporters.JUnitTestCase{}
	for _, s := range suites.TestSuites {
		for _, c := range s.TestCases {
			cases[c.Name] = c
		}
	}
	return cases
}

// The harness's own case is named "[harness] …" and its failure text is
// the error alone; a failed suite-level node is named by its type.
func TestJUnitHarnessCase(t *testing.T) {
	beforeSuite := types.SpecReport{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStateFailed, Failure: types.Failure{Message: "cloud unreachable"}}
	tests := []struct {
		name      string
		report    types.Report
		err       error
		wantCase  string
		wantText  string
		wantError bool // an <error> (interrupted) rather than a <failure>
	}{
		{
			name:     "setup failed",
			err:      &runner.SetupError{Step: "local cluster", Err: errors.New("etcd did not start")},
			wantCase: "[harness] the harness sets up local cluster",
			wantText: "local cluster: etcd did not start",
		},
		{
			name:     "bad input found late",
			err:      &runner.InputError{Err: errors.New(`cloud driver: no "instance create" verb`)},
			wantCase: "[harness] the harness accepts its input",
			wantText: `cloud driver: no "instance create" verb`,
		},
		{
			name:      "interrupted",
			err:       runner.ErrInterrupted,
			wantCase:  "[harness] the run is not interrupted",
			wantText:  "interrupted",
			wantError: true,
		},
		{
			name:     "the specs left things behind",
			err:      &runner.LeakError{Leftovers: []string{"cloud load balancer a1 (of Service ns/web)"}, Waited: 30 * time.Second},
			wantCase: "[harness] the run leaves nothing behind",
			wantText: "the specs left 1 thing(s) behind, still there 30s after the last spec (timeouts.leftoversGone): cloud load balancer a1 (of Service ns/web)",
		},
		{
			name:     "teardown failed after a failed BeforeSuite",
			report:   report(beforeSuite),
			err:      &runner.SetupError{Step: "teardown", Err: errors.New("ccm did not stop")},
			wantCase: "[harness] the harness sets up teardown",
			wantText: "teardown: ccm did not stop",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := writeJUnit(dir, tt.report, tt.err, errors.Is(tt.err, runner.ErrInterrupted)); err != nil {
				t.Fatal(err)
			}
			cases := readJUnit(t, filepath.Join(dir, prow.JUnitFileName(prow.HarnessSuite)))
			c, ok := cases[tt.wantCase]
			if !ok {
				t.Fatalf("no case %q in %v", tt.wantCase, cases)
			}
			text, message := "", ""
			switch {
			case tt.wantError && c.Error != nil:
				text, message = c.Error.Description, c.Error.Message
			case !tt.wantError && c.Failure != nil:
				text, message = c.Failure.Description, c.Failure.Message
			default:
				t.Fatalf("case %q: failure %v, error %v", tt.wantCase, c.Failure, c.Error)
			}
			if text != tt.wantText || message != tt.wantText {
				t.Errorf("failure text %q, message %q, want %q for both", text, message, tt.wantText)
			}
			for name := range cases {
				if strings.HasPrefix(name, "[It]") {
					t.Errorf("case %q is named with ginkgo's node type", name)
				}
			}
			if len(tt.report.SpecReports) > 0 {
				if _, ok := cases["[BeforeSuite]"]; !ok {
					t.Errorf("no [BeforeSuite] case in %v", cases)
				}
			}
		})
	}
}

// Report entries whose value is a duration reach the junit properties,
// which TestGrid shows as metrics, in seconds, as timings.json has them;
// also for a report that went through JSON (a lane's).
func TestJUnitPropertiesInSeconds(t *testing.T) {
	inProcess := spec("loadbalancer", "gives a Service an ingress", nil, types.SpecStatePassed, 2*time.Second)
	inProcess.ReportEntries = types.ReportEntries{
		{Name: "load-balancer-ready", Value: types.WrapEntryValue(1500 * time.Millisecond)},
		{Name: labels.EntryObservationLag, Value: types.WrapEntryValue(2 * time.Millisecond)},
		{Name: "note", Value: types.WrapEntryValue("not a duration")},
	}
	fromLane := spec("loadbalancer", "keeps a Service's ingress", nil, types.SpecStatePassed, 2*time.Second)
	fromLane.ReportEntries = types.ReportEntries{{Name: "load-balancer-ready", Value: types.ReportEntryValue{Representation: "250ms"}}}

	dir := t.TempDir()
	if err := writeJUnit(dir, report(inProcess, fromLane), nil, false); err != nil {
		t.Fatal(err)
	}
	cases := readJUnit(t, filepath.Join(dir, prow.JUnitFileName("loadbalancer")))
	tests := []struct {
		spec, property, want string
	}{
		{inProcess.FullText(), "load-balancer-ready", "1.5"},
		{inProcess.FullText(), labels.EntryObservationLag, "0.002"},
		{inProcess.FullText(), "note", `"not a duration"`},
		{fromLane.FullText(), "load-balancer-ready", "0.25"},
	}
	for _, tt := range tests {
		c, ok := cases[tt.spec]
		if !ok || c.Properties == nil {
			t.Errorf("no case %q with properties in %v", tt.spec, cases)
			continue
		}
		if got := c.Properties.WithName(tt.property); got != tt.want {
			t.Errorf("%s: property %s = %q, want %q", tt.spec, tt.property, got, tt.want)
		}
	}
	// The report itself is left as it was.
	if _, ok := inProcess.ReportEntries[0].GetRawValue().(time.Duration); !ok {
		t.Error("writing the junit files changed the report's entries")
	}
}
