package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"golang.org/x/term"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
	"github.com/ccm-conformance/ccm-conformance/labels"
)

// suiteTimeout bounds a whole ginkgo run; the specs' own named timeouts
// end them long before.
const suiteTimeout = 24 * time.Hour

// specRun is one ginkgo run of the selected specs in this process.
type specRun struct {
	suites      []framework.Suite
	labelFilter string
	out         io.Writer
	// verbose prints ginkgo's full report of every spec; otherwise ginkgo
	// is quiet and each spec this process ran gets one line (lanes).
	verbose bool
	// seed orders the specs; 0 picks one from the clock. Lanes share one,
	// so that they see the specs in the same order.
	seed int64
	// claim, when set, is asked before each spec whether this process runs
	// it; a spec it does not get is skipped here (another lane runs it).
	claim func(types.SpecReport) (bool, error)
	// timeout bounds the whole ginkgo run; default suiteTimeout.
	timeout time.Duration
	// afterSpecs is Options.AfterSpecs, which world.run calls.
	afterSpecs func(context.Context, WorldView) error
}

// notClaimedPrefix is the skip message of a spec that another lane runs.
const notClaimedPrefix = "run by another lane"

func (sr specRun) run(f *framework.Framework) types.Report {
	var report types.Report
	if sr.claim != nil {
		ginkgo.BeforeEach(func() {
			ok, err := sr.claim(ginkgo.CurrentSpecReport())
			if err != nil {
				ginkgo.Fail(fmt.Sprintf("[harness] claiming the spec for this lane: %v", err))
			}
			if !ok {
				ginkgo.Skip(notClaimedPrefix)
			}
		})
		ginkgo.ReportAfterEach(func(s ginkgo.SpecReport) { sr.printSpec(s) })
	}
	sr.attributeDriverFaults(f)
	sr.attributeCCMEnd(f)
	ginkgo.BeforeEach(f.SkipUnlessCapable)
	ginkgo.BeforeEach(f.SkipOutsideVersionRange)
	declareSuites(f, sr.suites)
	ginkgo.ReportAfterSuite("ccm-conformance summary", func(rep ginkgo.Report) { report = rep })

	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	suiteConfig.LabelFilter = sr.labelFilter
	suiteConfig.Timeout = suiteTimeout
	if sr.timeout > 0 {
		suiteConfig.Timeout = sr.timeout
	}
	suiteConfig.RandomSeed = sr.seed
	if suiteConfig.RandomSeed == 0 {
		suiteConfig.RandomSeed = time.Now().Unix()
	}
	reporterConfig.Verbose = sr.verbose
	reporterConfig.Succinct = !sr.verbose
	reporterConfig.NoColor = !term.IsTerminal(int(os.Stdout.Fd()))
	// ginkgo's reporter prints to formatter.ColorableStdOut; send it where
	// the rest of the run's output goes.
	stdout := formatter.ColorableStdOut
	formatter.ColorableStdOut = sr.out
	if !sr.verbose {
		formatter.ColorableStdOut = io.Discard
	}
	defer func() { formatter.ColorableStdOut = stdout }()

	// framework.Fail puts the spec's own sentence first in every failure.
	gomega.RegisterFailHandler(framework.Fail)
	ginkgo.RunSpecs(failRecorder{}, "CCM conformance: "+f.Profile.Name, suiteConfig, reporterConfig)
	return report
}

// attributeDriverFaults marks each failed spec in which the cloud driver
// broke its protocol (clouddriver.KindProtocol) with a labels.EntryDriverFault.
// It runs after the spec's cleanup, so that a bad answer there counts too;
// the entry travels with the report, also through a lane's.
func (sr specRun) attributeDriverFaults(f *framework.Framework) {
	mark := 0
	ginkgo.ReportBeforeEach(func(ginkgo.SpecReport) { mark = f.Driver.Faults() })
	ginkgo.ReportAfterEach(func(s ginkgo.SpecReport) {
		if !s.State.Is(types.SpecStateFailureStates) {
			return
		}
		if faults := f.Driver.FaultsSince(mark); len(faults) > 0 {
			ginkgo.AddReportEntry(labels.EntryDriverFault, faults[0].Error(), ginkgo.ReportEntryVisibilityFailureOrVerbose)
		}
	})
}

// attributeCCMEnd marks each failed spec that ended with the CCM under test
// gone, though nothing stopped it, with a labels.EntryCCMEnded: the
// spec's own message then describes a CCM that did not act, and this says
// why.
func (sr specRun) attributeCCMEnd(f *framework.Framework) {
	ended, ok := f.CCM.(framework.CCMEnded)
	if !ok {
		return
	}
	ginkgo.ReportAfterEach(func(s ginkgo.SpecReport) {
		if !s.State.Is(types.SpecStateFailureStates) {
			return
		}
		if err := ended.EndedOnItsOwn(); err != nil {
			ginkgo.AddReportEntry(labels.EntryCCMEnded, err.Error(), ginkgo.ReportEntryVisibilityFailureOrVerbose)
		}
	})
}

// entry returns the report entry of that name of a spec, or "".
func entry(s types.SpecReport, name string) string {
	for _, e := range s.ReportEntries {
		if e.Name == name {
			return e.StringRepresentation()
		}
	}
	return ""
}

// driverFault returns the labels.EntryDriverFault of a spec, or "".
func driverFault(s types.SpecReport) string { return entry(s, labels.EntryDriverFault) }

// printSpec prints one line for a spec this lane ran, and the failure in
// full: ginkgo's own reporter is quiet in lanes.
func (sr specRun) printSpec(s types.SpecReport) {
	if s.LeafNodeType != types.NodeTypeIt {
		return
	}
	if s.State == types.SpecStateSkipped && (s.Failure.Message == notClaimedPrefix || s.Failure.Message == "") {
		return // another lane's, or left out by the label filter
	}
	fmt.Fprintf(sr.out, "%s %s [%s]\n", strings.ToUpper(s.State.String()), s.FullText(), s.RunTime.Round(phasePrecision))
	switch {
	case s.State.Is(types.SpecStateFailureStates):
		fmt.Fprintf(sr.out, "  %s\n  at %s\n", indent(strip(s.Failure.Message)), s.Failure.Location)
	case s.State == types.SpecStateSkipped:
		fmt.Fprintf(sr.out, "  %s\n", oneLine(s.Failure.Message))
	}
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// failRecorder satisfies ginkgo.GinkgoTestingT; the result is read from the
// report instead.
type failRecorder struct{}

func (failRecorder) Fail() {}

// resultFrom counts the specs of a report. A spec the label filter left
// out is not selected, never skipped.
func resultFrom(report types.Report, labelFilter string) *Result {
	selected := func([]string) bool { return true }
	if labelFilter != "" {
		if f, err := types.ParseLabelFilter(labelFilter); err == nil {
			selected = f
		}
	}
	res := &Result{}
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			if s.State.Is(types.SpecStateFailureStates) {
				res.Failed++
				res.Failures = append(res.Failures, fmt.Sprintf("[%s] %s", s.LeafNodeType, oneLine(s.Failure.Message)))
			}
			continue
		}
		switch {
		case s.State == types.SpecStatePassed:
			res.Passed++
		case s.State == types.SpecStatePending:
			res.Pending++
		case s.State == types.SpecStateSkipped && !selected(s.Labels()):
			res.NotSelected++
		case s.State == types.SpecStateSkipped:
			res.Skipped++
			if res.SkipReasons == nil {
				res.SkipReasons = map[string]int{}
			}
			res.SkipReasons[oneLine(s.Failure.Message)]++
		case s.State.Is(types.SpecStateFailureStates):
			res.Failed++
			if fault := driverFault(s); fault != "" {
				res.DriverFailures = append(res.DriverFailures, s.FullText())
				res.Failures = append(res.Failures, fmt.Sprintf("%s: %s (the spec failed for the cloud driver, not the CCM)", s.FullText(), oneLine(fault)))
				if res.DriverFault == "" {
					res.DriverFault = oneLine(fault)
				}
				continue
			}
			if end := entry(s, labels.EntryCCMEnded); end != "" {
				res.Failures = append(res.Failures, fmt.Sprintf("%s: %s (the CCM under test had ended: %s)", s.FullText(), oneLine(s.Failure.Message), oneLine(end)))
				continue
			}
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %s", s.FullText(), oneLine(s.Failure.Message)))
		}
	}
	if report.SpecialSuiteFailureReasons != nil {
		for _, reason := range report.SpecialSuiteFailureReasons {
			if strings.Contains(reason, "Interrupted") {
				res.Interrupted = true
			}
		}
	}
	return res
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m|\{\{/?[a-z-]*\}\}`)

func strip(s string) string { return strings.TrimSpace(ansiEscape.ReplaceAllString(s, "")) }

// oneLine keeps the first line of a message, without terminal colours.
func oneLine(s string) string { return firstline.Marked(strip(s)) }

// labelFilterError renders ginkgo's label-filter parse error as one line.
func labelFilterError(err error) string {
	var ge types.GinkgoError
	if errors.As(err, &ge) {
		return oneLine(ge.Heading + ": " + strings.ReplaceAll(ge.Message, "\n", " "))
	}
	return oneLine(err.Error())
}

// declareSuites declares each suite inside a container named after it, so
// that every spec's full text starts with "[suite]" and reports can group
// specs by suite.
func declareSuites(f *framework.Framework, suites []framework.Suite) {
	for _, s := range suites {
		ginkgo.Describe("["+s.Name+"]", func() { s.Declare(f) })
	}
}

// SuiteOf returns the suite a spec belongs to, from the container
// declareSuites put around it, or "" if there is none.
func SuiteOf(spec types.SpecReport) string {
	if len(spec.ContainerHierarchyTexts) == 0 {
		return ""
	}
	t := spec.ContainerHierarchyTexts[0]
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		return strings.TrimSuffix(strings.TrimPrefix(t, "["), "]")
	}
	return ""
}
