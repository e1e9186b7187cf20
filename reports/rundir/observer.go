package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/labels"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// Observer writes a run directory in the Prow layout. It implements
// runner.Observer: RunStarted writes started.json, RunFinished writes the
// junit files, specs.json, timings.json, metadata.json and, last,
// finished.json, so that a reader that sees finished.json sees the rest.
type Observer struct {
	dir   string
	now   func() time.Time
	extra map[string]string
}

// ObserverOption configures an Observer.
type ObserverOption func(*Observer)

// WithClock sets the clock finished.json's timestamp is read from. Default
// time.Now.
func WithClock(now func() time.Time) ObserverOption {
	return func(o *Observer) { o.now = now }
}

// WithMetadata adds keys to what the observer merges into metadata.json
// and finished.json, over the run's own; empty values are left out. It
// names what the runner cannot know, such as the image and digest of a CCM
// deployed in the cluster, or a kubetest2 run's id.
func WithMetadata(keys map[string]string) ObserverOption {
	return func(o *Observer) { o.extra = keys }
}

// NewObserver returns an Observer that writes into the run directory dir.
func NewObserver(dir string, opts ...ObserverOption) *Observer {
	o := &Observer{dir: dir, now: time.Now}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

var _ runner.Observer = (*Observer)(nil)

// RunStarted writes started.json and removes what a previous run in the
// same directory left that would be mistaken for this run's results
// (finished.json, junit files, specs.json, timings.json).
func (o *Observer) RunStarted(info runner.RunInfo) error {
	if err := os.MkdirAll(filepath.Join(o.dir, prow.ArtifactsDir), 0o755); err != nil {
		return fmt.Errorf("run directory %s: %w", o.dir, err)
	}
	stale := []string{filepath.Join(o.dir, prow.FinishedFile), filepath.Join(o.dir, prow.SpecsFile), filepath.Join(o.dir, prow.TimingsFile), filepath.Join(o.dir, prow.SummaryFile)}
	junits, _ := filepath.Glob(filepath.Join(o.dir, prow.ArtifactsDir, "junit*.xml"))
	for _, p := range append(stale, junits...) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing the previous run's %s: %w", p, err)
		}
	}
	started := info.Started
	if started.IsZero() {
		started = o.now()
	}
	return prow.WriteJSON(filepath.Join(o.dir, prow.StartedFile), prow.Started{Timestamp: started.Unix()})
}

// RunFinished writes the rest of the run directory. report is empty when
// no spec ran; res is nil then.
func (o *Observer) RunFinished(info runner.RunInfo, report types.Report, res *runner.Result, runErr error) error {
	interrupted := errors.Is(runErr, runner.ErrInterrupted) || (res != nil && res.Interrupted)
	var errs []error
	if err := writeJUnit(filepath.Join(o.dir, prow.ArtifactsDir), report, runErr, interrupted); err != nil {
		errs = append(errs, err)
	}
	specs := specRecords(info, report, res, runErr, interrupted)
	if err := prow.WriteJSON(filepath.Join(o.dir, prow.SpecsFile), specs); err != nil {
		errs = append(errs, err)
	}
	if err := prow.WriteJSON(filepath.Join(o.dir, prow.TimingsFile), timings(report, info)); err != nil {
		errs = append(errs, err)
	}
	summary := ""
	switch {
	case res != nil:
		summary = runner.SummaryText(info.Provider, res)
	case runErr != nil:
		summary = runner.NoSpecsSummaryText(info.Provider, runErr)
	}
	if summary != "" {
		if err := os.WriteFile(filepath.Join(o.dir, prow.SummaryFile), []byte(summary), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	keys := runMetadata(info)
	for k, v := range o.extra {
		if v != "" {
			keys[k] = v
		}
	}
	meta, err := prow.MergeMetadata(filepath.Join(o.dir, prow.MetadataFile), keys)
	if err != nil {
		errs = append(errs, err)
	}

	passed := runner.ExitCode(res, runErr) == runner.ExitPassed
	result := prow.ResultFailure
	switch {
	case passed:
		result = prow.ResultSuccess
	case interrupted:
		result = prow.ResultAborted
	}
	now := o.now().Unix()
	finished := prow.Finished{Timestamp: &now, Passed: &passed, Result: result, Metadata: meta}
	if err := prow.WriteJSON(filepath.Join(o.dir, prow.FinishedFile), finished); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// runMetadata is what this harness adds to metadata.json.
func runMetadata(info runner.RunInfo) map[string]any {
	m := map[string]any{
		prow.MetaProvider:       info.Provider,
		prow.MetaHarnessVersion: info.HarnessVersion,
		prow.MetaBackend:        info.Backend,
	}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set(prow.MetaKubernetesVersion, info.KubernetesVersion)
	set(prow.MetaJobVersion, info.KubernetesVersion)
	set(prow.MetaKubernetesCommit, info.KubernetesCommit)
	set(prow.MetaCCMBinary, info.CCMBinary)
	set(prow.MetaCCMDigest, info.CCMDigest)
	set(prow.MetaCCMImage, info.CCMImage)
	set(prow.MetaCCMModule, info.CCMModule)
	set(prow.MetaCCMModuleSum, info.CCMModuleSum)
	set(prow.MetaCCMCloudProvider, info.CCMCloudProvider)
	set(prow.MetaCCMGoVersion, info.CCMGoVersion)
	set(prow.MetaNodeManagerBinary, info.NodeManagerBinary)
	set(prow.MetaNodeManagerImage, info.NodeManagerImage)
	set(prow.MetaNodeManagerDigest, info.NodeManagerDigest)
	set(prow.MetaLabelFilter, info.LabelFilter)
	if info.Seed != 0 {
		set(prow.MetaSeed, strconv.FormatInt(info.Seed, 10))
	}
	set(prow.MetaProfileDigest, info.ProfileDigest)
	set(prow.MetaCCMEnv, strings.Join(info.CCMEnv, ","))
	// The backend's own facts (kind's node image and whether its
	// privileged fallback ran), under its own key names.
	for k, v := range info.BackendMetadata {
		if _, taken := m[k]; !taken {
			set(k, v)
		}
	}
	return m
}

// specRecords turns the ginkgo report into specs.json.
func specRecords(info runner.RunInfo, report types.Report, res *runner.Result, runErr error, interrupted bool) prow.SpecRecords {
	out := prow.SpecRecords{
		Version: prow.SpecsVersion, Provider: info.Provider, Interrupted: interrupted,
		Capabilities: info.Capabilities, LabelFilter: info.LabelFilter, Specs: []prow.SpecRecord{},
	}
	if runErr != nil {
		out.HarnessError = runErr.Error()
		out.HarnessErrorClass = runner.ErrorClass(runErr)
	}
	if res != nil {
		out.Leftovers = res.Leftovers
	}
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt && !s.State.Is(types.SpecStateFailureStates) {
			continue
		}
		r := prow.SpecRecord{
			Suite:           runner.SuiteOf(s),
			Text:            s.FullText(),
			Labels:          s.Labels(),
			State:           s.State.String(),
			DurationSeconds: s.RunTime.Seconds(),
		}
		if s.LeafNodeType != types.NodeTypeIt {
			r.Node = s.LeafNodeType.String()
			if r.Text == "" {
				r.Text = "[" + r.Node + "]"
			}
		}
		if s.State == types.SpecStateSkipped {
			// A spec that skipped itself says why; one the label filter
			// left out has no message.
			r.SkipReason = s.Failure.Message
		}
		if s.State.Is(types.SpecStateFailureStates) {
			r.Failure = s.Failure.Message
			if loc := s.Failure.Location; loc.FileName != "" {
				r.FailureLocation = fmt.Sprintf("%s:%d", loc.FileName, loc.LineNumber)
			}
		}
		out.Specs = append(out.Specs, r)
	}
	return out
}

// timings turns the ginkgo report into timings.json.
func timings(report types.Report, info runner.RunInfo) prow.Timings {
	out := prow.Timings{Version: 1, Specs: []prow.SpecTiming{}}
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt || s.State == types.SpecStateSkipped || s.State == types.SpecStatePending {
			continue
		}
		t := prow.SpecTiming{Suite: runner.SuiteOf(s), Spec: s.FullText(), State: s.State.String(), DurationSeconds: s.RunTime.Seconds()}
		for _, e := range s.ReportEntries {
			d, ok := entryDuration(e)
			switch {
			case !ok:
			case e.Name == labels.EntryObservationLag:
				t.ObservationLagsSeconds = append(t.ObservationLagsSeconds, d.Seconds())
			default:
				if t.Latencies == nil {
					t.Latencies = map[string]float64{}
				}
				t.Latencies[e.Name] = d.Seconds()
			}
		}
		out.Specs = append(out.Specs, t)
	}
	for _, world := range info.Worlds {
		for _, p := range world.Phases {
			out.Setup = append(out.Setup, prow.SetupTiming{World: world.Name, Step: p.Name, Seconds: p.Duration.Seconds()})
		}
	}
	return out
}

// entryDuration reads a report entry whose value is a time.Duration: the
// value itself in the process that made it, its rendering (such as
// "1.5s") in a report that went through JSON, as a lane's does.
func entryDuration(e types.ReportEntry) (time.Duration, bool) {
	if d, ok := e.GetRawValue().(time.Duration); ok {
		return d, true
	}
	if e.Value.Representation == "" {
		return 0, false
	}
	d, err := time.ParseDuration(e.Value.Representation)
	return d, err == nil
}
