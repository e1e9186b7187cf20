// Package rundirtest helps tests seed run directories and results stores:
// it writes a described run through the real run directory observer
// (reports/rundir), as a run would, and publishes it. The emulators of the
// stores' buckets are in reports/store/storetest.
//
// Floor: the reports, as their one writer of a run directory: the only
// reports package that stands on the framework (its runner).
package rundirtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/labels"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// Spec is one spec of a seeded run.
type Spec struct {
	Suite  string
	Text   string
	Labels []string
	// State is ginkgo's; SpecStatePassed when zero.
	State types.SpecState
	// Failure is the failure message of a failed spec, or the skip
	// message of a skipped one.
	Failure string
	// Latencies are recorded as report entries whose value is a duration.
	Latencies map[string]time.Duration
	// ObservationLags are recorded as the report entries of watched waits
	// (labels.EntryObservationLag).
	ObservationLags []time.Duration
}

// Run describes a seeded run.
type Run struct {
	Provider          string
	KubernetesVersion string
	KubernetesCommit  string
	CCMDigest         string
	// CCMModule and CCMCloudProvider are what the CCM's build info said
	// (RunInfo.CCMModule, RunInfo.CCMCloudProvider); default none.
	CCMModule        string
	CCMCloudProvider string
	Started          time.Time
	// Duration is how long the run took; default one minute.
	Duration time.Duration
	Specs    []Spec
	// Err is the runner's error (a setup failure, runner.ErrInterrupted).
	Err error
	// Worlds are the worlds the run set up, with their setup steps.
	Worlds []runner.WorldInfo
	// Metadata are keys added to metadata.json (rundir.WithMetadata).
	Metadata map[string]string
	// LabelFilter narrowed the run, as run --label-filter does.
	LabelFilter string
	// Capabilities are the capabilities the run's profile claimed.
	Capabilities []string
}

// WriteRunDir writes the run directory of r into dir through
// rundir.Observer, as a real run would.
func WriteRunDir(t testing.TB, dir string, r Run) {
	t.Helper()
	if r.Duration == 0 {
		r.Duration = time.Minute
	}
	info := runner.RunInfo{
		Provider:          r.Provider,
		Backend:           "local",
		KubernetesVersion: r.KubernetesVersion,
		KubernetesCommit:  r.KubernetesCommit,
		CCMBinary:         "/bin/" + r.Provider + "-ccm",
		CCMDigest:         r.CCMDigest,
		CCMModule:         r.CCMModule,
		CCMCloudProvider:  r.CCMCloudProvider,
		HarnessVersion:    "test",
		Started:           r.Started,
		Worlds:            r.Worlds,
		LabelFilter:       r.LabelFilter,
		Capabilities:      r.Capabilities,
	}
	report := types.Report{SuiteDescription: "CCM conformance: " + r.Provider, StartTime: r.Started, EndTime: r.Started.Add(r.Duration), RunTime: r.Duration}
	res := &runner.Result{}
	for _, s := range r.Specs {
		state := s.State
		if state == 0 {
			state = types.SpecStatePassed
		}
		sr := types.SpecReport{
			ContainerHierarchyTexts:  []string{"[" + s.Suite + "]"},
			ContainerHierarchyLabels: [][]string{nil},
			LeafNodeType:             types.NodeTypeIt,
			LeafNodeText:             s.Text,
			LeafNodeLabels:           s.Labels,
			State:                    state,
			StartTime:                r.Started,
			EndTime:                  r.Started.Add(time.Second),
			RunTime:                  time.Second,
		}
		for name, d := range s.Latencies {
			sr.ReportEntries = append(sr.ReportEntries, types.ReportEntry{Name: name, Value: types.WrapEntryValue(d)})
		}
		for _, d := range s.ObservationLags {
			sr.ReportEntries = append(sr.ReportEntries, types.ReportEntry{Name: labels.EntryObservationLag, Value: types.WrapEntryValue(d)})
		}
		switch {
		case state == types.SpecStatePassed:
			res.Passed++
		case state == types.SpecStateSkipped:
			res.Skipped++
			sr.Failure = types.Failure{Message: s.Failure}
		case state.Is(types.SpecStateFailureStates):
			res.Failed++
			msg := s.Failure
			if msg == "" {
				msg = "failed"
			}
			sr.Failure = types.Failure{Message: msg}
		}
		report.SpecReports = append(report.SpecReports, sr)
	}
	if errors.Is(r.Err, runner.ErrInterrupted) {
		res.Interrupted = true
	}
	if r.Err != nil && len(r.Specs) == 0 {
		res = nil
	}
	o := rundir.NewObserver(dir, rundir.WithClock(func() time.Time { return r.Started.Add(r.Duration) }), rundir.WithMetadata(r.Metadata))
	if err := o.RunStarted(info); err != nil {
		t.Fatal(err)
	}
	if err := o.RunFinished(info, report, res, r.Err); err != nil {
		t.Fatal(err)
	}
}

// Publish writes r into a temporary run directory and publishes it to st.
func Publish(t testing.TB, st *store.Store, r Run) store.Build {
	t.Helper()
	dir := t.TempDir()
	WriteRunDir(t, dir, r)
	b, err := st.Publish(context.Background(), dir)
	if err != nil {
		t.Fatalf("publishing: %v", err)
	}
	return b
}
