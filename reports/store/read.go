package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// Run is one published run as the LKG rules and the dashboard read it.
type Run struct {
	Build
	// Location is where the build is (Store.Location of its prefix).
	Location string `json:"location"`
	// Provider is the job's provider (ProviderOf), which is what runs are
	// grouped by; the provider finished.json names is in Metadata.
	Provider string    `json:"provider"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Passed   bool      `json:"passed"`
	// Result is finished.json's: SUCCESS, FAILURE or ABORTED.
	Result string `json:"result"`
	// From finished.json's metadata ("" when the run never got that far).
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	KubernetesCommit  string `json:"kubernetesCommit,omitempty"`
	CCMBinary         string `json:"ccmBinary,omitempty"`
	CCMDigest         string `json:"ccmDigest,omitempty"`
	// CCMModule and CCMCloudProvider are what the CCM executable's build
	// info said: the module that ran (path@version) and the
	// k8s.io/cloud-provider it links.
	CCMModule        string `json:"ccmModule,omitempty"`
	CCMCloudProvider string `json:"ccmCloudProvider,omitempty"`
	HarnessVersion   string `json:"harnessVersion,omitempty"`
	// Metadata is finished.json's metadata, whole.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Specs is artifacts/specs.json; nil when the run has none.
	Specs *prow.SpecRecords `json:"-"`
}

// Problem is a record in the store that could not be read: a missing,
// truncated or corrupt file, or a listing that failed. Readers skip it.
type Problem struct {
	// Path is the file or prefix at fault, as Store.Location shows it.
	Path string `json:"path"`
	// Err says what is wrong.
	Err string `json:"error"`
}

func (p Problem) String() string { return p.Path + ": " + p.Err }

// RecordError is the error of ReadRun for a record that is missing or
// cannot be parsed.
type RecordError struct {
	Path string
	Err  error
}

func (e *RecordError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *RecordError) Unwrap() error { return e.Err }

// ReadRun reads a build's started.json, finished.json and
// artifacts/specs.json. A missing or unparsable started.json or
// finished.json (a publish still in progress, or a corrupt record) is a
// *RecordError naming the file; a missing specs.json leaves Run.Specs nil,
// an unparsable one is a *RecordError.
func (s *Store) ReadRun(ctx context.Context, b Build) (*Run, error) {
	provider, _ := ProviderOf(b.Job)
	r := &Run{Build: b, Provider: provider, Location: s.Location(b.Prefix())}

	data, err := s.ReadFile(ctx, b, prow.StartedFile)
	if err != nil {
		return nil, s.recordError(b, prow.StartedFile, err)
	}
	started, err := prow.DecodeStarted(bytes.NewReader(data))
	if err != nil {
		return nil, s.recordError(b, prow.StartedFile, err)
	}
	if started.Timestamp <= 0 {
		return nil, s.recordError(b, prow.StartedFile, errors.New("timestamp is zero or missing"))
	}
	r.Started = time.Unix(started.Timestamp, 0).UTC()

	data, err = s.ReadFile(ctx, b, prow.FinishedFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, s.recordError(b, prow.FinishedFile, errors.New("missing: the run is still being published, or its publisher died"))
	}
	if err != nil {
		return nil, s.recordError(b, prow.FinishedFile, err)
	}
	finished, err := prow.DecodeFinished(bytes.NewReader(data))
	if err != nil {
		return nil, s.recordError(b, prow.FinishedFile, err)
	}
	if finished.Timestamp == nil || *finished.Timestamp <= 0 || finished.Passed == nil {
		return nil, s.recordError(b, prow.FinishedFile, errors.New(`no timestamp or no "passed"`))
	}
	r.Finished = time.Unix(*finished.Timestamp, 0).UTC()
	r.Passed = *finished.Passed
	r.Result = finished.Result
	if r.Result == "" {
		r.Result = prow.ResultFailure
		if r.Passed {
			r.Result = prow.ResultSuccess
		}
	}
	r.Metadata = finished.Metadata
	r.KubernetesVersion = finished.MetaString(prow.MetaKubernetesVersion)
	r.KubernetesCommit = finished.MetaString(prow.MetaKubernetesCommit)
	r.CCMBinary = finished.MetaString(prow.MetaCCMBinary)
	r.CCMDigest = finished.MetaString(prow.MetaCCMDigest)
	r.CCMModule = finished.MetaString(prow.MetaCCMModule)
	r.CCMCloudProvider = finished.MetaString(prow.MetaCCMCloudProvider)
	r.HarnessVersion = finished.MetaString(prow.MetaHarnessVersion)

	data, err = s.ReadFile(ctx, b, prow.SpecsFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, s.recordError(b, prow.SpecsFile, err)
	default:
		specs, err := prow.DecodeSpecs(bytes.NewReader(data))
		if err != nil {
			return nil, s.recordError(b, prow.SpecsFile, err)
		}
		r.Specs = specs
	}
	return r, nil
}

func (s *Store) recordError(b Build, name string, err error) error {
	var re *RecordError
	if errors.As(err, &re) {
		return err
	}
	return &RecordError{Path: s.Location(b.Key(name)), Err: err}
}

// Snapshot is every readable run of a store and every record that was
// skipped.
type Snapshot struct {
	// Runs are sorted by job, then by start time and build id.
	Runs     []*Run    `json:"runs"`
	Problems []Problem `json:"problems"`
}

// readConcurrency is how many runs ReadAll reads at once.
const readConcurrency = 8

// ReadAll reads every run of the given jobs (all of the store's when jobs
// is empty). A run that cannot be read, or a job that cannot be listed, is
// a Problem and is skipped; the error is non-nil only when the store itself
// cannot be listed.
func (s *Store) ReadAll(ctx context.Context, jobs ...string) (*Snapshot, error) {
	if len(jobs) == 0 {
		var err error
		if jobs, err = s.Jobs(ctx); err != nil {
			return nil, err
		}
	}
	snap := &Snapshot{Runs: []*Run{}, Problems: []Problem{}}
	var builds []Build
	for _, job := range jobs {
		ids, err := s.Builds(ctx, job)
		if err != nil {
			snap.Problems = append(snap.Problems, Problem{Path: s.Location(LogsPrefix + job + "/"), Err: err.Error()})
			continue
		}
		for _, id := range ids {
			builds = append(builds, Build{Job: job, ID: id})
		}
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, readConcurrency)
	for _, b := range builds {
		wg.Add(1)
		sem <- struct{}{}
		go func(b Build) {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := s.ReadRun(ctx, b)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				p := Problem{Path: s.Location(b.Prefix()), Err: err.Error()}
				var re *RecordError
				if errors.As(err, &re) {
					p = Problem{Path: re.Path, Err: re.Err.Error()}
				}
				snap.Problems = append(snap.Problems, p)
				return
			}
			snap.Runs = append(snap.Runs, r)
		}(b)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", s, err)
	}
	snap.sort()
	return snap, nil
}

// sort puts runs in the order Snapshot documents, problems by path.
func (snap *Snapshot) sort() {
	sort.SliceStable(snap.Runs, func(i, j int) bool {
		a, b := snap.Runs[i], snap.Runs[j]
		if a.Job != b.Job {
			return a.Job < b.Job
		}
		if !a.Started.Equal(b.Started) {
			return a.Started.Before(b.Started)
		}
		return lessID(a.ID, b.ID)
	})
	sort.SliceStable(snap.Problems, func(i, j int) bool { return snap.Problems[i].Path < snap.Problems[j].Path })
}

// Merge is the snapshot of several stores read as one: each provider's CI
// owns a store of its own (docs/lkg.md, "Who owns a store"), and the
// release team reads them together. Runs and problems are kept whole, in
// Snapshot's order; a run published to two stores appears twice, which the
// last-known-good rules count once (they tell runs apart by identity).
func Merge(snaps ...*Snapshot) *Snapshot {
	out := &Snapshot{Runs: []*Run{}, Problems: []Problem{}}
	for _, s := range snaps {
		out.Runs = append(out.Runs, s.Runs...)
		out.Problems = append(out.Problems, s.Problems...)
	}
	out.sort()
	return out
}
