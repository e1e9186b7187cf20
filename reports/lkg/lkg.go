// Package lkg applies the last-known-good rules to the runs of a results
// store: which (Kubernetes version and commit, CCM digest) pair of each
// provider is known good, which pairs are flaky or red, and which providers
// are stale. The rules are documented in docs/lkg.md.
//
// Floor: the reports. They stand on the leaves and each other, not on the
// framework, so that reading and judging results builds no harness;
// testsupport/floors holds that.
package lkg

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
	"github.com/ccm-conformance/ccm-conformance/labels"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// Defaults of Config.
const (
	// ReleaseBlockingLabel is the ginkgo label of the specs the rules
	// judge a run by (on the backends package labels says).
	ReleaseBlockingLabel = labels.ReleaseBlocking
	// DefaultStaleAfter is how old a provider's newest run may be.
	DefaultStaleAfter = 72 * time.Hour
	// DefaultStreak is how many passing runs make a pair good.
	DefaultStreak = 3
)

// Config holds the rules' parameters.
type Config struct {
	// Now is the clock staleness is measured with. Default time.Now.
	Now func() time.Time
	// StaleAfter: a provider whose newest run finished longer ago is
	// stale. Default DefaultStaleAfter.
	StaleAfter time.Duration
	// Streak is how many consecutive passing runs of a pair, and no failing
	// one, make it good. Default DefaultStreak.
	Streak int
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = DefaultStaleAfter
	}
	if c.Streak <= 0 {
		c.Streak = DefaultStreak
	}
	return c
}

// Pair is what a run tested: a Kubernetes build and a CCM build, judged
// with one profile by one minor version of the harness. Runs of the same
// builds under another profile (other capabilities, timeouts, driver) or
// another harness minor (other oracles) are another pair: they start a
// streak of their own, so that neither an edited profile nor a changed
// oracle can lengthen a streak earned under the old one.
type Pair struct {
	KubernetesVersion string `json:"kubernetesVersion"`
	KubernetesCommit  string `json:"kubernetesCommit"`
	CCMDigest         string `json:"ccmDigest"`
	// CCMModule names the CCM's build where its build info says
	// (k8s.io/cloud-provider-vsphere@v1.36.0); it follows from the digest.
	CCMModule string `json:"ccmModule,omitempty"`
	// ProfileDigest is the sha256 of the profile the run used.
	ProfileDigest string `json:"profileDigest,omitempty"`
	// HarnessMinor is the harness's version up to its minor (v0.1), or
	// its whole version when that is no release ((devel)).
	HarnessMinor string `json:"harnessMinor,omitempty"`
}

// pairOf is the pair a run tested.
func pairOf(r *store.Run) Pair {
	profileDigest, _ := r.Metadata[prow.MetaProfileDigest].(string)
	return Pair{
		KubernetesVersion: r.KubernetesVersion, KubernetesCommit: r.KubernetesCommit, CCMDigest: r.CCMDigest,
		CCMModule: r.CCMModule, ProfileDigest: profileDigest, HarnessMinor: harnessMinor(r.HarnessVersion),
	}
}

// harnessMinor cuts a release version to its minor: v0.1.3 is v0.1.
// Anything else (a development build) is kept whole.
func harnessMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 3 || !strings.HasPrefix(v, "v") {
		return v
	}
	return parts[0] + "." + parts[1]
}

// Complete reports whether the run got far enough to know its pair.
func (p Pair) Complete() bool { return p.KubernetesVersion != "" && p.CCMDigest != "" }

func (p Pair) String() string {
	ccm := short(p.CCMDigest, 19)
	if p.CCMModule != "" {
		ccm = p.CCMModule + " " + ccm
	}
	return fmt.Sprintf("Kubernetes %s (%s), CCM %s", p.KubernetesVersion, short(p.KubernetesCommit, 9), ccm)
}

func short(s string, n int) string {
	if s == "" {
		return "-"
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Verdict is what one run says about its pair.
type Verdict string

const (
	// VerdictPass: the run's release-blocking specs ran and passed.
	VerdictPass Verdict = "pass"
	// VerdictFail: a release-blocking spec or the harness failed.
	VerdictFail Verdict = "fail"
	// VerdictNone: the run says nothing (interrupted, or no
	// release-blocking spec ran); it neither counts nor breaks a streak.
	VerdictNone Verdict = "none"
	// VerdictSetup: the environment failed, not the CCM (a cluster that
	// did not start, a port another process took, bad input): no
	// release-blocking spec failed and nothing was left behind. Shown
	// with the pair and counted apart; it neither counts towards
	// last-known-good nor makes a pair flaky or red.
	VerdictSetup Verdict = "setup"
	// VerdictPartial: no release-blocking spec failed, but the run did not
	// run the whole release-blocking set: a label filter narrowed it, or a
	// release-blocking spec of a capability the profile claims was
	// skipped. It is shown, never counted towards last-known-good, and
	// does not break a streak.
	VerdictPartial Verdict = "partial"
)

// RunVerdict is one run as the rules see it.
type RunVerdict struct {
	store.Build
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Pair     Pair      `json:"pair"`
	Verdict  Verdict   `json:"verdict"`
	// Reason explains a fail or a none: the failing specs, the harness
	// error, or why the run says nothing.
	Reason string `json:"reason,omitempty"`
	// Failed lists the failing release-blocking specs.
	Failed []string `json:"failed,omitempty"`
	// HarnessError is the first line of the harness's error when it failed
	// the run.
	HarnessError string `json:"harnessError,omitempty"`
	// LabelFilter is the label filter that narrowed the run, if any.
	LabelFilter string `json:"labelFilter,omitempty"`
	// Capabilities are what the run's profile claimed, and BlockingPassed
	// how many release-blocking specs passed: what a green cell covers.
	Capabilities   []string `json:"capabilities,omitempty"`
	BlockingPassed int      `json:"blockingPassed"`
	// Backend is the backend the run used ("" in runs that predate its
	// record), which decides which labelled specs block (package
	// blocking).
	Backend string `json:"backend,omitempty"`
	// Unjudged are the claimed capabilities that none of the run's
	// release-blocking specs judged: each of their labelled specs needs
	// what the backend lacks (NodeIPAnnotation on kind, which does not
	// simulate nodes). A green cell says nothing about them.
	Unjudged []string `json:"unjudged,omitempty"`
	// Leftovers name what the run left behind (specs.json's leftovers).
	Leftovers []string `json:"leftovers,omitempty"`
	// Missing lists the release-blocking specs of claimed capabilities
	// that did not run (skipped, or left out by the label filter).
	Missing []string `json:"missing,omitempty"`
}

// Judge gives a run's verdict. The release-blocking specs are those
// labelled ReleaseBlockingLabel that block on the run's backend (package
// blocking: a spec that needs simulated nodes blocks only where nodes are
// simulated), or every spec when none is labelled (a run of an older
// suite set). A run that did not run all of them (a label filter narrowed
// it, or a release-blocking spec of a claimed capability was skipped) is
// partial unless one of them failed.
func Judge(r *store.Run) RunVerdict {
	v := RunVerdict{Build: r.Build, Started: r.Started, Finished: r.Finished, Pair: pairOf(r)}
	v.Backend, _ = r.Metadata[prow.MetaBackend].(string)
	if r.Specs == nil {
		v.Verdict, v.Reason = VerdictNone, "no "+prow.SpecsFile
		if r.Result == prow.ResultAborted {
			v.Reason = "interrupted"
		}
		return v
	}
	// An interrupted run (a job's deadline, a SIGTERM) is judged by the
	// specs it finished: one that ran to its end and failed is as red as
	// in a complete run; one the interrupt cut short says nothing.
	interrupted := r.Result == prow.ResultAborted || r.Specs.Interrupted
	failed := prow.SpecRecord.Failed
	if interrupted {
		failed = prow.SpecRecord.FailedToEnd
	}
	v.Capabilities = r.Specs.Capabilities
	v.LabelFilter = r.Specs.LabelFilter
	if v.LabelFilter == "" {
		v.LabelFilter, _ = r.Metadata[prow.MetaLabelFilter].(string)
	}
	var blockers []prow.SpecRecord
	labelled := false
	for _, s := range r.Specs.Specs {
		labelled = labelled || s.HasLabel(ReleaseBlockingLabel)
		if ok, _ := labels.Blocks(s.Labels, v.Backend); ok {
			blockers = append(blockers, s)
		}
	}
	if !labelled && v.LabelFilter == "" && r.Specs.Capabilities == nil {
		// A run of a suite set older than the label (and than the
		// capabilities record): every spec blocks. A newer run without
		// a labelled spec was narrowed to specs outside the set.
		blockers = r.Specs.Specs
	}
	v.Unjudged = unjudged(v.Capabilities, r.Specs.Specs, blockers)
	passed := 0
	for _, s := range blockers {
		switch {
		case failed(s):
			v.Failed = append(v.Failed, s.Text)
		case s.Passed():
			passed++
		case s.Skipped() && s.Node == "" && ofClaimedCapabilities(r.Specs, s):
			v.Missing = append(v.Missing, s.Text)
		}
	}
	// A failed suite-level node (BeforeSuite) fails the run, whatever its
	// labels.
	for _, s := range r.Specs.Specs {
		if s.Node != "" && failed(s) && !contains(v.Failed, s.Text) {
			v.Failed = append(v.Failed, s.Text)
		}
	}
	v.BlockingPassed = passed
	v.Leftovers = r.Specs.Leftovers
	if r.Specs.HarnessError != "" {
		v.HarnessError = firstline.Marked(r.Specs.HarnessError)
	}
	switch {
	case r.Specs.HarnessErrorClass == prow.HarnessErrorDriver:
		// The cloud driver broke its protocol: the run says nothing about
		// the CCM, so it counts against neither side of the pair.
		v.Verdict, v.Reason = VerdictNone, "cloud driver failed: "+firstline.Marked(r.Specs.HarnessError)
	case len(v.Failed) > 0 || len(v.Leftovers) > 0:
		// Failed specs and leftovers are the CCM's, and both are named,
		// whichever the run's error was about.
		var parts []string
		if interrupted {
			parts = append(parts, "interrupted")
		}
		if len(v.Failed) > 0 {
			parts = append(parts, fmt.Sprintf("%d release-blocking spec(s) failed: %s", len(v.Failed), strings.Join(v.Failed, "; ")))
		}
		if len(v.Leftovers) > 0 {
			parts = append(parts, fmt.Sprintf("left %d thing(s) behind: %s", len(v.Leftovers), strings.Join(v.Leftovers, "; ")))
		}
		v.Verdict, v.Reason = VerdictFail, strings.Join(parts, "; ")
	case interrupted:
		v.Verdict, v.Reason = VerdictNone, "interrupted"
	case r.Specs.HarnessErrorClass == prow.HarnessErrorSetup || r.Specs.HarnessErrorClass == prow.HarnessErrorInput:
		v.Verdict, v.Reason = VerdictSetup, "the environment failed, not the CCM: "+v.HarnessError
	case r.Specs.HarnessError != "":
		v.Verdict, v.Reason = VerdictFail, "harness error: "+v.HarnessError
	case v.LabelFilter != "" || len(v.Missing) > 0:
		v.Verdict, v.Reason = VerdictPartial, partialReason([]string{v.LabelFilter}, v.Missing)
	case passed == 0:
		v.Verdict, v.Reason = VerdictNone, "no release-blocking spec ran"
	default:
		v.Verdict = VerdictPass
	}
	return v
}

// unjudged returns the claimed capabilities that no spec among blockers
// judges, though some spec of the run is labelled with the capability and
// release-blocking: every such spec was excused by the backend. A
// capability no release-blocking spec names at all (there is none today)
// is not reported: nothing is lost on this backend that another has.
func unjudged(claimed []string, specs, blockers []prow.SpecRecord) []string {
	var out []string
	for _, c := range claimed {
		judged, named := false, false
		for _, s := range specs {
			if s.HasLabel(c) && s.HasLabel(ReleaseBlockingLabel) {
				named = true
			}
		}
		for _, s := range blockers {
			if s.HasLabel(c) {
				judged = true
			}
		}
		if named && !judged {
			out = append(out, c)
		}
	}
	return out
}

// notDeclared is how a spec skipped for a capability the profile does not
// claim says so (framework.SkipUnlessCapable).
const notDeclared = "does not declare capability"

// outsideVersionRange is how a spec skipped because the cluster's
// Kubernetes version lacks an upstream change it relies on says so
// (framework.OutsideVersionRange): it does not apply, so no hole.
const outsideVersionRange = "does not apply to this cluster's Kubernetes"

// ofClaimedCapabilities reports whether a skipped spec belongs to
// capabilities the run's profile claims, so that its skip leaves a hole in
// the release-blocking set. A spec that said it was skipped for a missing
// capability, or for a Kubernetes version outside its range, does not;
// otherwise the run's recorded capabilities decide
// (every capability among the spec's labels must be claimed). A run
// recorded before capabilities were is taken to claim the spec's.
func ofClaimedCapabilities(rec *prow.SpecRecords, s prow.SpecRecord) bool {
	if strings.Contains(s.SkipReason, notDeclared) || strings.Contains(s.SkipReason, outsideVersionRange) {
		return false
	}
	if rec.Capabilities == nil {
		return true
	}
	for _, l := range s.Labels {
		// Only capability labels: ReleaseBlockingLabel and the labels
		// of upstream changes (framework.UpstreamChanges) claim nothing.
		if labels.Capability(l).Known() && !contains(rec.Capabilities, l) {
			return false
		}
	}
	return true
}

// partialReason says why runs are partial: the label filters that
// narrowed them and the release-blocking specs that did not run.
func partialReason(filters, missing []string) string {
	var parts, quoted []string
	for _, f := range filters {
		if f != "" && !contains(quoted, strconv.Quote(f)) {
			quoted = append(quoted, strconv.Quote(f))
		}
	}
	if len(quoted) > 0 {
		parts = append(parts, "narrowed by the label filter "+strings.Join(quoted, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d release-blocking spec(s) of claimed capabilities did not run: %s", len(missing), strings.Join(missing, "; ")))
	}
	return strings.Join(parts, "; ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// PairState is what a pair's runs add up to.
type PairState string

const (
	// PairGreen: at least Streak consecutive passing runs and no failing
	// one. Only a green pair can be last-known-good.
	PairGreen PairState = "green"
	// PairPending: passing runs only, fewer than Streak.
	PairPending PairState = "pending"
	// PairFlaky: both passing and failing runs; never last-known-good.
	PairFlaky PairState = "flaky"
	// PairRed: failing runs only.
	PairRed PairState = "red"
	// PairPartial: partial runs only (VerdictPartial); never
	// last-known-good.
	PairPartial PairState = "partial"
)

// PairStatus is one pair of a provider with its runs added up.
type PairStatus struct {
	Pair
	State    PairState `json:"state"`
	Runs     int       `json:"runs"`
	Passes   int       `json:"passes"`
	Failures int       `json:"failures"`
	// Streak is the longest run of consecutive passes.
	Streak int `json:"streak"`
	// FirstRun and LastRun are when the pair's first and newest runs (by
	// start) finished: a run's time, wherever the rules show one, is its
	// finish. LastBuild is the newest run's build.
	FirstRun  time.Time `json:"firstRun"`
	LastRun   time.Time `json:"lastRun"`
	LastBuild string    `json:"lastBuild"`
	// Capabilities and BlockingPassed are those of the pair's newest
	// judged run: what the profile claimed and how many release-blocking
	// specs passed.
	Capabilities   []string `json:"capabilities,omitempty"`
	BlockingPassed int      `json:"blockingPassed"`
	// Backend and Unjudged are the newest judged run's too: where it ran,
	// and the claimed capabilities no release-blocking spec judged there.
	Backend  string   `json:"backend,omitempty"`
	Unjudged []string `json:"unjudged,omitempty"`
	// FailedSpecs are the release-blocking specs that failed in any run.
	FailedSpecs []string `json:"failedSpecs,omitempty"`
	// HarnessFailures counts the runs the harness failed (a setup step,
	// teardown), and HarnessErrors are their distinct errors' first lines.
	HarnessFailures int      `json:"harnessFailures,omitempty"`
	HarnessErrors   []string `json:"harnessErrors,omitempty"`
	// SetupFailures counts the runs whose environment failed (counted in
	// Runs, neither passes nor failures), and SetupErrors are their
	// distinct errors' first lines.
	SetupFailures int      `json:"setupFailures,omitempty"`
	SetupErrors   []string `json:"setupErrors,omitempty"`
	// Partials counts the partial runs (counted in Runs, neither passes
	// nor failures); LabelFilters are the label filters that narrowed
	// them and MissingSpecs the release-blocking specs they left out.
	Partials     int      `json:"partials,omitempty"`
	LabelFilters []string `json:"labelFilters,omitempty"`
	MissingSpecs []string `json:"missingSpecs,omitempty"`
}

// PartialReason says why the pair's partial runs are partial (the label
// filters, the release-blocking specs left out), or "" when it has none.
func (p *PairStatus) PartialReason() string {
	if p.Partials == 0 {
		return ""
	}
	return partialReason(p.LabelFilters, p.MissingSpecs)
}

// ProviderStatus is one provider under the rules.
type ProviderStatus struct {
	Provider string `json:"provider"`
	Job      string `json:"job"`
	// LastRun is when the provider's newest run finished.
	LastRun time.Time `json:"lastRun"`
	// Stale: LastRun is older than Config.StaleAfter.
	Stale bool `json:"stale"`
	// LKG is the newest green pair, nil when there is none.
	LKG *PairStatus `json:"lkg"`
	// Pairs are newest (by last run) first.
	Pairs []PairStatus `json:"pairs"`
	// Runs are every readable run, oldest first, with its verdict.
	Runs []RunVerdict `json:"runs"`
}

// Report is the rules applied to a store.
type Report struct {
	GeneratedAt time.Time        `json:"generatedAt"`
	StaleAfter  string           `json:"staleAfter"`
	Streak      int              `json:"streak"`
	Providers   []ProviderStatus `json:"providers"`
	// Problems are the records that were skipped.
	Problems []store.Problem `json:"problems"`
}

// Provider returns a provider's status, or nil.
func (r *Report) Provider(name string) *ProviderStatus {
	for i := range r.Providers {
		if r.Providers[i].Provider == name {
			return &r.Providers[i]
		}
	}
	return nil
}

// runIdentity tells one run from another: a run started and finished at
// its own times, on its own pair.
type runIdentity struct {
	started, finished             int64
	k8sVersion, k8sCommit, digest string
}

// Coverage says what a pair's newest run covered: "25 release-blocking
// specs passed; capabilities InstancesV2, Zones".
func (p PairStatus) Coverage() string {
	caps := "capabilities not recorded"
	if len(p.Capabilities) > 0 {
		caps = "capabilities " + strings.Join(p.Capabilities, ", ")
	}
	s := fmt.Sprintf("%d release-blocking spec(s) passed; %s", p.BlockingPassed, caps)
	if p.Backend != "" {
		s += "; on " + p.Backend
	}
	if len(p.Unjudged) > 0 {
		s += "; not judged there: " + strings.Join(p.Unjudged, ", ")
	}
	return s
}

// Evaluate applies the rules to a snapshot of a store. It never fails: a
// run the rules cannot use is reported as a problem and skipped.
func Evaluate(snap *store.Snapshot, cfg Config) *Report {
	cfg = cfg.withDefaults()
	now := cfg.Now()
	rep := &Report{
		GeneratedAt: now.UTC(),
		StaleAfter:  cfg.StaleAfter.String(),
		Streak:      cfg.Streak,
		Providers:   []ProviderStatus{},
		Problems:    append([]store.Problem{}, snap.Problems...),
	}
	byProvider := map[string][]*store.Run{}
	for _, r := range snap.Runs {
		byProvider[r.Provider] = append(byProvider[r.Provider], r)
	}
	names := make([]string, 0, len(byProvider))
	for n := range byProvider {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		runs := byProvider[name]
		sort.SliceStable(runs, func(i, j int) bool { return runs[i].Started.Before(runs[j].Started) })
		ps := ProviderStatus{Provider: name, Job: runs[0].Job, Pairs: []PairStatus{}, Runs: []RunVerdict{}}
		pairs := map[Pair]*PairStatus{}
		current := map[Pair]int{} // the streak each pair is on
		// The same run directory published twice gets two build ids but
		// is one run: it must not lengthen a streak.
		seen := map[runIdentity]string{}
		for _, r := range runs {
			id := runIdentity{r.Started.Unix(), r.Finished.Unix(), r.KubernetesVersion, r.KubernetesCommit, r.CCMDigest}
			if first, dup := seen[id]; dup {
				rep.Problems = append(rep.Problems, store.Problem{Path: strings.TrimSuffix(r.Location, "/"), Err: "the same run as build " + first + " published again; counted once"})
				continue
			}
			seen[id] = r.ID
			if r.Finished.After(ps.LastRun) {
				ps.LastRun = r.Finished
			}
			v := Judge(r)
			ps.Runs = append(ps.Runs, v)
			if r.Specs == nil && r.Result != prow.ResultAborted {
				rep.Problems = append(rep.Problems, store.Problem{Path: strings.TrimSuffix(r.Location, "/") + "/" + prow.SpecsFile, Err: "missing: the run cannot be judged"})
			}
			if v.Verdict == VerdictNone || !v.Pair.Complete() {
				continue
			}
			p := pairs[v.Pair]
			if p == nil {
				p = &PairStatus{Pair: v.Pair, FirstRun: r.Finished}
				pairs[v.Pair] = p
			}
			p.Runs++
			p.LastRun, p.LastBuild = r.Finished, r.ID
			p.Capabilities, p.BlockingPassed = v.Capabilities, v.BlockingPassed
			p.Backend, p.Unjudged = v.Backend, v.Unjudged
			if v.Verdict == VerdictSetup {
				// Shown, never counted: the CCM was not to blame.
				p.SetupFailures++
				if !contains(p.SetupErrors, v.HarnessError) {
					p.SetupErrors = append(p.SetupErrors, v.HarnessError)
				}
				continue
			}
			if v.Verdict == VerdictPartial {
				// Shown, never counted: a streak neither grows nor
				// breaks.
				p.Partials++
				if v.LabelFilter != "" && !contains(p.LabelFilters, v.LabelFilter) {
					p.LabelFilters = append(p.LabelFilters, v.LabelFilter)
				}
				for _, m := range v.Missing {
					if !contains(p.MissingSpecs, m) {
						p.MissingSpecs = append(p.MissingSpecs, m)
					}
				}
				continue
			}
			if v.Verdict == VerdictPass {
				p.Passes++
				current[v.Pair]++
				if current[v.Pair] > p.Streak {
					p.Streak = current[v.Pair]
				}
			} else {
				p.Failures++
				current[v.Pair] = 0
				for _, f := range v.Failed {
					if !contains(p.FailedSpecs, f) {
						p.FailedSpecs = append(p.FailedSpecs, f)
					}
				}
				if v.HarnessError != "" {
					p.HarnessFailures++
					if !contains(p.HarnessErrors, v.HarnessError) {
						p.HarnessErrors = append(p.HarnessErrors, v.HarnessError)
					}
				}
			}
		}
		for _, p := range pairs {
			switch {
			case p.Failures > 0 && p.Passes > 0:
				p.State = PairFlaky
			case p.Failures > 0:
				p.State = PairRed
			case p.Passes == 0 && p.Partials == 0:
				// Only runs whose environment failed: no evidence
				// either way yet.
				p.State = PairPending
			case p.Passes == 0:
				p.State = PairPartial
			case p.Streak >= cfg.Streak:
				p.State = PairGreen
			default:
				p.State = PairPending
			}
			ps.Pairs = append(ps.Pairs, *p)
		}
		sort.Slice(ps.Pairs, func(i, j int) bool {
			a, b := ps.Pairs[i], ps.Pairs[j]
			if !a.LastRun.Equal(b.LastRun) {
				return a.LastRun.After(b.LastRun)
			}
			return a.LastBuild > b.LastBuild
		})
		for i := range ps.Pairs {
			if ps.Pairs[i].State == PairGreen {
				lkg := ps.Pairs[i]
				ps.LKG = &lkg
				break
			}
		}
		ps.Stale = now.Sub(ps.LastRun) > cfg.StaleAfter
		rep.Providers = append(rep.Providers, ps)
	}
	return rep
}
