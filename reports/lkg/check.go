package lkg

import (
	"fmt"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// Status is a provider's standing for one Kubernetes version.
type Status string

const (
	// StatusGreen: a green pair for the version, and a fresh newest run.
	StatusGreen Status = "green"
	// StatusStale: the provider's newest run is older than StaleAfter
	// (even when it has a green pair: the release team wants a live
	// signal).
	StatusStale Status = "stale"
	// StatusFlaky: no green pair; the version's newest pair is flaky.
	StatusFlaky Status = "flaky"
	// StatusRed: no green pair; the version's newest pair is red.
	StatusRed Status = "red"
	// StatusPending: no green pair; the version's newest pair has passed,
	// but fewer times than the streak asks.
	StatusPending Status = "pending"
	// StatusPartial: no green pair; the version's newest pair has only
	// partial runs (narrowed by a label filter, or missing release-blocking
	// specs of claimed capabilities), which are no last-known-good
	// evidence.
	StatusPartial Status = "partial"
	// StatusUntested: no run of the version (or of the provider) at all.
	StatusUntested Status = "untested"
)

// ProviderCheck is one provider's answer to Check.
type ProviderCheck struct {
	Provider string `json:"provider"`
	Status   Status `json:"status"`
	// Reason says why, in a sentence.
	Reason string `json:"reason"`
	// LKG is the provider's newest green pair for the version, if any.
	LKG *PairStatus `json:"lkg,omitempty"`
	// Pair is the pair Status comes from: the LKG when there is one (also
	// for a stale provider), else the version's newest pair; nil when the
	// version has no judged pair.
	Pair *PairStatus `json:"pair,omitempty"`
	// LastRun is when the provider's newest run (any version) finished.
	LastRun *time.Time `json:"lastRun,omitempty"`
}

// CheckReport is the answer to "may this Kubernetes version be released
// as far as these providers are concerned?".
type CheckReport struct {
	KubernetesVersion string          `json:"kubernetesVersion"`
	OK                bool            `json:"ok"`
	GeneratedAt       time.Time       `json:"generatedAt"`
	StaleAfter        string          `json:"staleAfter"`
	Providers         []ProviderCheck `json:"providers"`
	Problems          []store.Problem `json:"problems"`
}

// Check says, for each provider (every provider in the report when none is
// named), whether it has a green last-known-good pair for the Kubernetes
// version. OK is true only when every one is green.
func (r *Report) Check(version string, providers []string) *CheckReport {
	out := &CheckReport{KubernetesVersion: version, OK: true, GeneratedAt: r.GeneratedAt, StaleAfter: r.StaleAfter, Providers: []ProviderCheck{}, Problems: r.Problems}
	if len(providers) == 0 {
		for _, p := range r.Providers {
			providers = append(providers, p.Provider)
		}
	}
	for _, name := range providers {
		c := r.checkOne(version, name)
		if c.Status != StatusGreen {
			out.OK = false
		}
		out.Providers = append(out.Providers, c)
	}
	if len(out.Providers) == 0 {
		out.OK = false
	}
	return out
}

func (r *Report) checkOne(version, name string) ProviderCheck {
	c := ProviderCheck{Provider: name}
	ps := r.Provider(name)
	if ps == nil {
		c.Status, c.Reason = StatusUntested, "no readable run in the store"
		return c
	}
	last := ps.LastRun
	c.LastRun = &last
	var forVersion []PairStatus
	for _, p := range ps.Pairs {
		if p.KubernetesVersion == version {
			forVersion = append(forVersion, p)
		}
	}
	for i := range forVersion {
		if forVersion[i].State == PairGreen {
			lkg := forVersion[i]
			c.LKG = &lkg
			break
		}
	}
	switch {
	case c.LKG != nil:
		c.Pair = c.LKG
	case len(forVersion) > 0:
		newest := forVersion[0]
		c.Pair = &newest
	}
	// Staleness is per (provider, Kubernetes version): fresh runs of
	// another version say nothing of this one.
	var versionLast time.Time
	for _, run := range ps.Runs {
		if run.Pair.KubernetesVersion == version && run.Finished.After(versionLast) {
			versionLast = run.Finished
		}
	}
	staleAfter, _ := time.ParseDuration(r.StaleAfter)
	stale := staleAfter > 0 && r.GeneratedAt.Sub(versionLast) > staleAfter
	if versionLast.IsZero() {
		// No run of the version to go by (a report made without
		// runs): the provider's own staleness.
		versionLast, stale = ps.LastRun, ps.Stale
	}
	age := fmt.Sprintf("%.0fh", r.GeneratedAt.Sub(versionLast).Hours())
	switch {
	case len(forVersion) == 0:
		c.Status, c.Reason = StatusUntested, fmt.Sprintf("no judged run of Kubernetes %s", version)
		if len(ps.Pairs) > 0 {
			c.Reason += fmt.Sprintf(" (newest pair: %s)", ps.Pairs[0].Pair)
		}
	case stale:
		c.Status, c.Reason = StatusStale, fmt.Sprintf("newest run of Kubernetes %s finished %s, %s ago (limit %s)", version, versionLast.UTC().Format(time.RFC3339), age, r.StaleAfter)
		if c.LKG != nil {
			c.Reason += "; last-known-good " + c.LKG.Pair.String()
		}
	case c.LKG != nil:
		c.Status, c.Reason = StatusGreen, fmt.Sprintf("last-known-good %s: %d consecutive passing runs, newest %s", c.LKG.Pair, c.LKG.Streak, c.LKG.LastRun.UTC().Format(time.RFC3339))
	default:
		newest := forVersion[0]
		switch newest.State {
		case PairFlaky:
			c.Status = StatusFlaky
			c.Reason = fmt.Sprintf("%s passed %d and failed %d of %d runs", newest.Pair, newest.Passes, newest.Failures, newest.Runs)
		case PairRed:
			c.Status = StatusRed
			c.Reason = fmt.Sprintf("%s failed %d of %d runs", newest.Pair, newest.Failures, newest.Runs)
		case PairPartial:
			c.Status = StatusPartial
			c.Reason = fmt.Sprintf("%s has %d run(s), none a full one", newest.Pair, newest.Runs)
		default:
			c.Status = StatusPending
			c.Reason = fmt.Sprintf("%s passed %d consecutive runs of the %d needed", newest.Pair, newest.Streak, r.Streak)
		}
		if why := newest.PartialReason(); why != "" {
			c.Reason += fmt.Sprintf("; %d run(s) partial, no last-known-good evidence: %s", newest.Partials, why)
		}
		if len(newest.FailedSpecs) > 0 {
			c.Reason += "; failing: " + strings.Join(newest.FailedSpecs, "; ")
		}
		if newest.HarnessFailures > 0 {
			c.Reason += fmt.Sprintf("; %d run(s) failed with a harness error: %s", newest.HarnessFailures, strings.Join(newest.HarnessErrors, "; "))
		}
	}
	if c.Pair != nil && c.Pair.SetupFailures > 0 {
		c.Reason += fmt.Sprintf("; %d run(s) not counted, the environment failed (not the CCM): %s", c.Pair.SetupFailures, strings.Join(c.Pair.SetupErrors, "; "))
	}
	return c
}
