package prow

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
)

// HarnessSuite is the pseudo-suite that holds what belongs to no suite: a
// failed suite-level node (BeforeSuite and the like) and the harness's own
// error (bad input, a failed setup step, an interrupt). Its junit file is
// written when it has a case, and always when no other junit file is, so
// that every run directory has at least one.
const HarnessSuite = "harness"

// unsafeSuiteChars are replaced in file names. TestGrid parses
// junit_<context>_<thread>.xml and a context cannot contain "_".
var unsafeSuiteChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// JUnitFileName is the junit file of a suite: junit_<suite>_01.xml.
func JUnitFileName(suite string) string {
	return "junit_" + unsafeSuiteChars.ReplaceAllString(suite, "-") + "_01.xml"
}

// writeJUnit writes one junit file per suite into dir.
func writeJUnit(dir string, report types.Report, runErr error, interrupted bool) error {
	bySuite := map[string]types.SpecReports{}
	for _, s := range report.SpecReports {
		suite := runner.SuiteOf(s)
		switch {
		case s.LeafNodeType == types.NodeTypeIt && suite != "":
		case s.LeafNodeType == types.NodeTypeIt:
			suite = HarnessSuite
		case s.State.Is(types.SpecStateFailureStates):
			// A failed BeforeSuite explains why every spec was skipped.
			suite = HarnessSuite
		default:
			continue
		}
		bySuite[suite] = append(bySuite[suite], s)
	}
	if runErr != nil {
		bySuite[HarnessSuite] = append(bySuite[HarnessSuite], harnessCase(report, runErr, interrupted))
	}
	if len(bySuite) == 0 {
		bySuite[HarnessSuite] = nil
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
		if suite != HarnessSuite {
			r.SpecialSuiteFailureReasons = nil
		}
		cfg := reporters.JunitReportConfig{
			// Timelines of passed and skipped specs only make the file big.
			OmitTimelinesForSpecState: types.SpecStatePassed | types.SpecStateSkipped | types.SpecStatePending,
			// Spec texts start with "[suite]" already; "[It] " adds nothing.
			OmitLeafNodeType: suite != HarnessSuite,
		}
		path := filepath.Join(dir, JUnitFileName(suite))
		if err := reporters.GenerateJUnitReportWithConfig(r, path, cfg); err != nil {
			errs = append(errs, fmt.Errorf("writing %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// harnessCase is a test case that carries the harness's error, so that
// TestGrid and Spyglass show why a run failed when no spec did.
func harnessCase(report types.Report, runErr error, interrupted bool) types.SpecReport {
	text := "the harness completes the run"
	var setup *runner.SetupError
	var input *runner.InputError
	switch {
	case interrupted:
		text = "the run is not interrupted"
	case errors.As(runErr, &input):
		text = "the harness accepts its input"
	case errors.As(runErr, &setup):
		text = "the harness sets up " + setup.Step
	}
	state := types.SpecStateFailed
	if interrupted {
		state = types.SpecStateInterrupted
	}
	return types.SpecReport{
		ContainerHierarchyTexts: []string{"[" + HarnessSuite + "]"},
		LeafNodeType:            types.NodeTypeIt,
		LeafNodeText:            text,
		State:                   state,
		StartTime:               report.StartTime,
		EndTime:                 report.EndTime,
		Failure:                 types.Failure{Message: runErr.Error(), FailureNodeType: types.NodeTypeIt},
	}
}
