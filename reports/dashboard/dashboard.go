// Package dashboard renders a results store as a static HTML dashboard: a
// provider x Kubernetes-version matrix under the last-known-good rules, a
// page per provider and per run (failing specs with their messages),
// latency charts across runs, and an SVG badge per provider.
//
// Every page is self-contained: inline CSS and SVG, no script, no external
// asset. Every text that comes from results goes through html/template.
// The layout is documented in docs/dashboard.md.
//
// Floor: the reports. They stand on the leaves and each other, not on the
// framework, so that reading and judging results builds no harness;
// testsupport/floors holds that.
package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"sync"
	"time"

	"golang.org/x/mod/semver"

	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// DefaultTitle heads every page unless Options.Title is set.
const DefaultTitle = "CCM conformance"

// Options configure a dashboard.
type Options struct {
	// LKG holds the rules' parameters: the clock, the staleness limit and
	// the streak. Zero values take lkg's defaults.
	LKG lkg.Config
	// Title heads every page. Default DefaultTitle.
	Title string
}

// Model is everything the pages show, computed from a store snapshot.
type Model struct {
	Title string
	// Store is the store's URL, as shown.
	Store       string
	GeneratedAt time.Time
	StaleAfter  string
	Streak      int
	// Versions are the matrix's columns: every Kubernetes version a run
	// tested, newest first.
	Versions []string
	// Rows are the providers, by name.
	Rows []*Row
	// Charts are the latency charts, one per latency name, by name.
	Charts []*Chart
	// Runs are the run pages, by job and start.
	Runs []*RunPage
	// Problems are the records that were skipped.
	Problems []store.Problem
}

// Row is one provider.
type Row struct {
	Provider string
	Job      string
	Stale    bool
	LastRun  time.Time
	// LKG is the provider's last-known-good pair, nil if none.
	LKG   *lkg.PairStatus
	Pairs []lkg.PairStatus
	Cells []*Cell
	Badge Badge
	// Runs are the provider's run pages, newest first.
	Runs []*RunPage
	// Page is the provider page's path, relative to the dashboard's root.
	Page string
}

// Cell is one provider and Kubernetes version of the matrix.
type Cell struct {
	Provider string
	Version  string
	// Status is what `lkg check --kubernetes Version` says of the provider.
	Status lkg.Status
	Reason string
	// IsLKG marks the cell that holds the provider's last-known-good pair.
	IsLKG bool
	// Pair is the pair Status comes from (lkg.ProviderCheck.Pair): the
	// version's green pair if it has one, else its newest judged pair;
	// nil when no run of the version was judged.
	Pair *lkg.PairStatus
	// Runs counts the provider's runs of the version, judged or not.
	Runs int
	// Link is the page of Pair's newest run, or, without a Pair, of the
	// version's newest run; relative to the root.
	Link string
}

// RunPage is one run.
type RunPage struct {
	*store.Run
	Verdict lkg.RunVerdict
	// Failing are the specs that did not pass (failed, panicked, timed
	// out, interrupted, aborted), suite-level nodes included.
	Failing []prow.SpecRecord
	// AllSpecs are all of the run's specs; HasSpecs is false when the run
	// has no specs.json.
	AllSpecs []prow.SpecRecord
	HasSpecs bool
	// HarnessError is the harness's error, when the run did not complete.
	HarnessError string
	// PassedSpecs, FailedSpecs and OtherSpecs count the specs by outcome
	// (other: skipped or pending).
	PassedSpecs, FailedSpecs, OtherSpecs int
	// Latencies are the run's named latencies in seconds (the largest when
	// several specs recorded one name).
	Latencies []Latency
	// Timings are what the run's timings say of the harness itself, in
	// seconds: SetupTiming (the slowest world's setup) and
	// ObservationLagP99 (the 99th percentile of its watched waits'
	// observation lags), each when the run recorded it.
	Timings []Latency
	// Page is the page's path, relative to the dashboard's root.
	Page string
}

// Latency is one named latency of a run.
type Latency struct {
	Name    string
	Seconds float64
}

// Build computes the model from a store snapshot and the runs' timings
// (keyed by build; a run without timings has no latencies). It never
// fails: what cannot be used is already a problem of the snapshot.
func Build(snap *store.Snapshot, timings map[store.Build]*prow.Timings, storeName string, opts Options) *Model {
	rep := lkg.Evaluate(snap, opts.LKG)
	m := &Model{
		Title:       opts.Title,
		Store:       storeName,
		GeneratedAt: rep.GeneratedAt,
		StaleAfter:  rep.StaleAfter,
		Streak:      rep.Streak,
		Problems:    rep.Problems,
	}
	if m.Title == "" {
		m.Title = DefaultTitle
	}

	verdicts := map[store.Build]lkg.RunVerdict{}
	for _, ps := range rep.Providers {
		for _, v := range ps.Runs {
			verdicts[v.Build] = v
		}
	}
	pages := map[store.Build]*RunPage{}
	versions := map[string]bool{}
	for _, r := range snap.Runs {
		p := newRunPage(r, verdicts[r.Build], timings[r.Build])
		pages[r.Build] = p
		m.Runs = append(m.Runs, p)
		if r.KubernetesVersion != "" {
			versions[r.KubernetesVersion] = true
		}
	}
	for v := range versions {
		m.Versions = append(m.Versions, v)
	}
	sortVersions(m.Versions)

	for _, ps := range rep.Providers {
		row := &Row{
			Provider: ps.Provider,
			Job:      ps.Job,
			Stale:    ps.Stale,
			LastRun:  ps.LastRun,
			LKG:      ps.LKG,
			Pairs:    ps.Pairs,
			Page:     "providers/" + safeName(ps.Provider) + ".html",
		}
		for i := len(ps.Runs) - 1; i >= 0; i-- {
			if p := pages[ps.Runs[i].Build]; p != nil {
				row.Runs = append(row.Runs, p)
			}
		}
		for _, version := range m.Versions {
			row.Cells = append(row.Cells, newCell(rep, &ps, row.Runs, version))
		}
		row.Badge = providerBadge(rep, &ps)
		m.Rows = append(m.Rows, row)
	}
	m.Charts = buildCharts(m.Rows)
	return m
}

func newRunPage(r *store.Run, v lkg.RunVerdict, t *prow.Timings) *RunPage {
	p := &RunPage{Run: r, Verdict: v, Page: "runs/" + safeName(r.Job) + "/" + safeName(r.ID) + ".html"}
	if r.Specs != nil {
		p.AllSpecs, p.HasSpecs, p.HarnessError = r.Specs.Specs, true, r.Specs.HarnessError
		for _, s := range r.Specs.Specs {
			switch {
			case s.Failed():
				p.FailedSpecs++
				p.Failing = append(p.Failing, s)
			case s.Passed():
				p.PassedSpecs++
			default:
				p.OtherSpecs++
			}
		}
	}
	if t != nil {
		worst := map[string]float64{}
		for _, s := range t.Specs {
			for name, secs := range s.Latencies {
				if secs > worst[name] {
					worst[name] = secs
				}
			}
		}
		for name, secs := range worst {
			p.Latencies = append(p.Latencies, Latency{Name: name, Seconds: secs})
		}
		sort.Slice(p.Latencies, func(i, j int) bool { return p.Latencies[i].Name < p.Latencies[j].Name })
		p.Timings = harnessTimings(t)
	}
	return p
}

// Names of the harness's own timings of a run, charted beside the
// latencies.
const (
	SetupTiming       = "setup"
	ObservationLagP99 = "observation-lag-p99"
)

// harnessTimings are a run's setup time (that of its slowest world: the
// worlds of a run over lanes are set up side by side) and the 99th
// percentile of its observation lags.
func harnessTimings(t *prow.Timings) []Latency {
	var out []Latency
	if len(t.Setup) > 0 {
		perWorld := map[string]float64{}
		for _, s := range t.Setup {
			perWorld[s.World] += s.Seconds
		}
		slowest := 0.0
		for _, secs := range perWorld {
			slowest = math.Max(slowest, secs)
		}
		out = append(out, Latency{Name: SetupTiming, Seconds: slowest})
	}
	var lags []float64
	for _, s := range t.Specs {
		lags = append(lags, s.ObservationLagsSeconds...)
	}
	if len(lags) > 0 {
		out = append(out, Latency{Name: ObservationLagP99, Seconds: percentile(lags, 0.99)})
	}
	return out
}

// percentile is the nearest-rank q-quantile of vs (0 < q <= 1).
func percentile(vs []float64, q float64) float64 {
	sorted := append([]float64(nil), vs...)
	sort.Float64s(sorted)
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// newCell asks the rules what `lkg check` would say of the provider for
// the version, so the matrix and the command always agree.
//
// The cell's counts and link come from the pair its status comes from, so
// a green cell never shows the counts of, or links to, a newer pair that
// failed.
func newCell(rep *lkg.Report, ps *lkg.ProviderStatus, runs []*RunPage, version string) *Cell {
	check := rep.Check(version, []string{ps.Provider}).Providers[0]
	c := &Cell{Provider: ps.Provider, Version: version, Status: check.Status, Reason: check.Reason, Pair: check.Pair}
	c.IsLKG = ps.LKG != nil && ps.LKG.KubernetesVersion == version
	newest := ""
	for _, r := range runs { // newest first
		if r.KubernetesVersion != version {
			continue
		}
		if newest == "" {
			newest = r.Page
		}
		if c.Pair != nil && c.Link == "" && r.ID == c.Pair.LastBuild {
			c.Link = r.Page
		}
		c.Runs++
	}
	if c.Link == "" {
		c.Link = newest
	}
	return c
}

// sortVersions sorts Kubernetes versions newest first: by semantic version
// where they parse, the others after them, by text.
func sortVersions(vs []string) {
	sort.Slice(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		va, vb := semver.IsValid(a), semver.IsValid(b)
		switch {
		case va && vb:
			if c := semver.Compare(a, b); c != 0 {
				return c > 0
			}
		case va != vb:
			return va
		}
		return a > b
	})
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName makes a provider, job or build id usable as one path element.
func safeName(s string) string {
	s = unsafeNameChars.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		s = "_" + s
	}
	return s
}

// readConcurrency is how many timings files Generate reads at once.
const readConcurrency = 8

// Generate reads the store, applies the LKG rules and writes the dashboard
// into dir. Records that cannot be read are shown as problems on the
// index page and returned in the model; the error is non-nil only when the
// store cannot be listed or dir cannot be written.
func Generate(ctx context.Context, st *store.Store, dir string, opts Options) (*Model, error) {
	snap, err := st.ReadAll(ctx)
	if err != nil {
		return nil, err
	}
	timings, problems := readTimings(ctx, st, snap.Runs)
	snap.Problems = append(snap.Problems, problems...)
	sort.Slice(snap.Problems, func(i, j int) bool { return snap.Problems[i].Path < snap.Problems[j].Path })
	m := Build(snap, timings, st.String(), opts)
	if err := m.Write(dir); err != nil {
		return m, err
	}
	return m, nil
}

// readTimings reads each run's timings.json. A run without one (an older
// run, or one that never got to its specs) has no latencies; one that
// cannot be parsed is a problem.
func readTimings(ctx context.Context, st *store.Store, runs []*store.Run) (map[store.Build]*prow.Timings, []store.Problem) {
	out := map[store.Build]*prow.Timings{}
	var problems []store.Problem
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, readConcurrency)
	for _, r := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func(b store.Build) {
			defer wg.Done()
			defer func() { <-sem }()
			data, err := st.ReadFile(ctx, b, prow.TimingsFile)
			if errors.Is(err, os.ErrNotExist) {
				return
			}
			var t *prow.Timings
			if err == nil {
				t, err = prow.DecodeTimings(bytes.NewReader(data))
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				problems = append(problems, store.Problem{Path: st.Location(b.Key(prow.TimingsFile)), Err: firstline.Marked(err.Error())})
				return
			}
			out[b] = t
		}(r.Build)
	}
	wg.Wait()
	return out, problems
}

// Summary is a one-line account of a model, for the command's output.
func (m *Model) Summary() string {
	return fmt.Sprintf("%d provider(s), %d Kubernetes version(s), %d run(s), %d skipped record(s)",
		len(m.Rows), len(m.Versions), len(m.Runs), len(m.Problems))
}
