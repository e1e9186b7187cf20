package rundir

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// writeJUnit writes one junit file per suite into dir, named by
// prow.JUnitFileName. Test case names are the specs' full texts (which
// start with "[suite]") and labels, without ginkgo's "[It]"; a failed
// suite-level node is named by its type ("[BeforeSuite]"). Report entries
// whose value is a duration become properties in seconds, the unit of
// timings.json and the dashboard, and TestGrid shows numeric properties
// as the cell's metrics.
func writeJUnit(dir string, report types.Report, runErr error, interrupted bool) error {
	bySuite := map[string]types.SpecReports{}
	for _, s := range report.SpecReports {
		suite := runner.SuiteOf(s)
		switch {
		case s.LeafNodeType == types.NodeTypeIt && suite != "":
		case s.LeafNodeType == types.NodeTypeIt:
			suite = prow.HarnessSuite
		case s.State.Is(types.SpecStateFailureStates):
			// A failed BeforeSuite explains why every spec was skipped.
			suite = prow.HarnessSuite
		default:
			continue
		}
		bySuite[suite] = append(bySuite[suite], junitSpec(s))
	}
	var harness *types.SpecReport
	if runErr != nil {
		hc := harnessCase(report, runErr, interrupted)
		harness = &hc
		bySuite[prow.HarnessSuite] = append(bySuite[prow.HarnessSuite], hc)
	}
	if len(bySuite) == 0 {
		bySuite[prow.HarnessSuite] = nil
	}
	suites := make([]string, 0, len(bySuite))
	for s := range bySuite {
		suites = append(suites, s)
	}
	sort.Strings(suites)
	var errs []error
	for _, suite := range suites {
		specs := bySuite[suite]
		r := report
		r.SuiteDescription = suite
		r.SpecReports = specs
		r.SuiteSucceeded = len(specs.WithState(types.SpecStateFailureStates)) == 0
		if suite != prow.HarnessSuite {
			r.SpecialSuiteFailureReasons = nil
		}
		cfg := reporters.JunitReportConfig{
			// Timelines of passed and skipped specs only make the file big.
			OmitTimelinesForSpecState: types.SpecStatePassed | types.SpecStateSkipped | types.SpecStatePending,
			// Spec texts start with "[suite]" already; "[It] " adds nothing.
			OmitLeafNodeType: true,
		}
		path := filepath.Join(dir, prow.JUnitFileName(suite))
		if err := reporters.GenerateJUnitReportWithConfig(r, path, cfg); err != nil {
			errs = append(errs, fmt.Errorf("writing %s: %w", path, err))
			continue
		}
		if suite == prow.HarnessSuite && harness != nil {
			if err := cleanHarnessCase(path, harness.FullText(), runErr.Error()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// junitSpec is a spec as its junit test case shows it: a suite-level node
// named by its type, duration report entries in seconds. The report itself
// is left as it was.
func junitSpec(s types.SpecReport) types.SpecReport {
	if s.LeafNodeType != types.NodeTypeIt && s.FullText() == "" {
		s.LeafNodeText = "[" + s.LeafNodeType.String() + "]"
	}
	if len(s.ReportEntries) == 0 {
		return s
	}
	entries := make(types.ReportEntries, len(s.ReportEntries))
	for i, e := range s.ReportEntries {
		if d, ok := entryDuration(e); ok {
			e.Value = types.WrapEntryValue(d.Seconds())
		}
		entries[i] = e
	}
	s.ReportEntries = entries
	return s
}

// harnessCase is a test case that carries the harness's error, so that
// TestGrid and Spyglass show why a run failed when no spec did. Its name
// is "[harness] <what the harness did not do>".
func harnessCase(report types.Report, runErr error, interrupted bool) types.SpecReport {
	text := "the harness completes the run"
	var setup *runner.SetupError
	var input *runner.InputError
	var leak *runner.LeakError
	switch {
	case interrupted:
		text = "the run is not interrupted"
	case errors.As(runErr, &input):
		text = "the harness accepts its input"
	case errors.As(runErr, &leak):
		text = "the run leaves nothing behind"
	case errors.As(runErr, &setup):
		text = "the harness sets up " + setup.Step
	}
	state := types.SpecStateFailed
	if interrupted {
		state = types.SpecStateInterrupted
	}
	return types.SpecReport{
		ContainerHierarchyTexts: []string{"[" + prow.HarnessSuite + "]"},
		LeafNodeType:            types.NodeTypeIt,
		LeafNodeText:            text,
		State:                   state,
		StartTime:               report.StartTime,
		EndTime:                 report.EndTime,
		Failure:                 types.Failure{Message: runErr.Error(), FailureNodeType: types.NodeTypeIt},
	}
}

// cleanHarnessCase replaces the failure text ginkgo writes for the
// harness's case (the message, then "In [It] at: :0 @ <zero time>", since
// the case has no code location) with the error alone.
func cleanHarnessCase(path, name, text string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	for i := range suites.TestSuites {
		for j := range suites.TestSuites[i].TestCases {
			c := &suites.TestSuites[i].TestCases[j]
			if c.Name != name {
				continue
			}
			if c.Failure != nil {
				c.Failure.Description = text
			}
			if c.Error != nil {
				c.Error.Description = text
			}
		}
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("  ", "    ")
	if err := enc.Encode(suites); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	buf.WriteByte('\n')
	if err := prow.WriteFileAtomic(path, buf.Bytes()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
