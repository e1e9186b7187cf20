package lkg

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/store"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/labels"
)

var now = time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

var (
	k37a = Pair{KubernetesVersion: "v1.37.2", KubernetesCommit: "aaaaaaa", CCMDigest: "sha256:c1"}
	k37b = Pair{KubernetesVersion: "v1.37.2", KubernetesCommit: "aaaaaaa", CCMDigest: "sha256:c2"} // a newer CCM build
	k36  = Pair{KubernetesVersion: "v1.36.5", KubernetesCommit: "bbbbbbb", CCMDigest: "sha256:c1"}
)

// seq counts the runs a test makes, for unique build ids.
type seq struct{ n int }

// run makes a run of provider on pair, started ago before now, whose
// release-blocking spec passed (outcome "pass"), failed ("fail"), whose
// harness failed ("harness"), that was interrupted ("abort"), or that has no
// specs.json ("nospecs").
func (s *seq) run(provider string, pair Pair, ago time.Duration, outcome string) *store.Run {
	s.n++
	started := now.Add(-ago)
	r := &store.Run{
		Build:    store.Build{Job: store.JobName(provider), ID: fmt.Sprintf("%s%05d", started.Format("20060102150405"), s.n)},
		Provider: provider, Started: started, Finished: started.Add(time.Minute),
		KubernetesVersion: pair.KubernetesVersion, KubernetesCommit: pair.KubernetesCommit, CCMDigest: pair.CCMDigest,
		Passed: outcome == "pass", Result: prow.ResultSuccess,
		Specs: &prow.SpecRecords{Version: 1, Provider: provider, Specs: []prow.SpecRecord{
			{Suite: "nodeaddress", Text: "[nodeaddress] initializes nodes", Labels: []string{"InstancesV2", ReleaseBlockingLabel}, State: "passed"},
			// A spec that is not release-blocking fails in every run.
			{Suite: "loadbalancer", Text: "[loadbalancer] keeps the source IP", Labels: []string{"LoadBalancer"}, State: "failed"},
		}},
	}
	r.Location = "/store/logs/" + r.Job + "/" + r.ID + "/"
	switch outcome {
	case "fail":
		r.Result = prow.ResultFailure
		r.Specs.Specs[0].State = "failed"
	case "harness":
		r.Result = prow.ResultFailure
		r.Specs.Specs = nil
		r.Specs.HarnessError = "local cluster: etcd did not start"
	case "driver":
		// The cloud driver broke its protocol: the spec failed for it.
		r.Result = prow.ResultFailure
		r.Specs.Specs[0].State = "failed"
		r.Specs.HarnessError = `cloud driver d broke the protocol in 1 spec(s): "instance get" answered with invalid JSON`
		r.Specs.HarnessErrorClass = prow.HarnessErrorDriver
	case "abort":
		r.Result = prow.ResultAborted
		r.Specs.Interrupted = true
		r.Specs.Specs[0].State = "interrupted"
	case "setup":
		// The environment failed after the cluster came up (a port
		// another process took): not the CCM's failure.
		r.Result = prow.ResultFailure
		r.Specs.Specs = nil
		r.Specs.HarnessError = "simulated nodes: listen tcp 127.64.0.3:10250: bind: address already in use"
		r.Specs.HarnessErrorClass = prow.HarnessErrorSetup
	case "ccmdown":
		// The CCM under test exited before it was ready: its failure.
		r.Result = prow.ResultFailure
		r.Specs.Specs = nil
		r.Specs.HarnessError = "ccm: exited with status 255 before /healthz answered"
		r.Specs.HarnessErrorClass = prow.HarnessErrorCCM
	case "nospecs":
		r.Specs = nil
	case "filtered":
		// Narrowed by a label filter: everything selected passed.
		r.Specs.LabelFilter = "InstancesV2"
		r.Metadata = map[string]any{prow.MetaLabelFilter: "InstancesV2"}
	case "skipped":
		// A release-blocking spec of a claimed capability skipped itself.
		r.Specs.Capabilities = []string{"InstancesV2", "NodeLifecycle", "LoadBalancer"}
		r.Specs.Specs = append(r.Specs.Specs, prow.SpecRecord{Suite: "nodelifecycle", Text: "[nodelifecycle] deletes the Node of a deleted instance",
			Labels: []string{"NodeLifecycle", ReleaseBlockingLabel}, State: "skipped", SkipReason: "this cluster's nodes are real machines"})
	}
	return r
}

func TestJudge(t *testing.T) {
	var s seq
	unlabelled := s.run("p", k37a, time.Hour, "pass")
	for i := range unlabelled.Specs.Specs {
		unlabelled.Specs.Specs[i].Labels = nil
	}
	beforeSuite := s.run("p", k37a, time.Hour, "pass")
	beforeSuite.Specs.Specs = append(beforeSuite.Specs.Specs, prow.SpecRecord{Text: "[BeforeSuite]", Node: "BeforeSuite", State: "failed"})
	skipped := s.run("p", k37a, time.Hour, "pass")
	skipped.Specs.Specs[0].State = "skipped"
	notDeclared := s.run("p", k37a, time.Hour, "pass")
	notDeclared.Specs.Specs[0].State = "skipped"
	notDeclared.Specs.Specs[0].SkipReason = `profile "p" does not declare capability InstancesV2`
	// Two release-blocking specs: one passed, one whose capability the
	// profile does not claim was skipped.
	unclaimed := s.run("p", k37a, time.Hour, "skipped")
	unclaimed.Specs.Capabilities = []string{"InstancesV2"}
	unclaimedByReason := s.run("p", k37a, time.Hour, "skipped")
	unclaimedByReason.Specs.Capabilities = nil
	unclaimedByReason.Specs.Specs[2].SkipReason = `profile "p" does not declare capability NodeLifecycle`
	// A release-blocking spec of a claimed capability that does not apply
	// to the cluster's Kubernetes version, in a run that recorded no
	// capabilities: not a hole.
	outsideRange := s.run("p", k37a, time.Hour, "skipped")
	outsideRange.Specs.Capabilities = nil
	outsideRange.Specs.Specs[2].SkipReason = `does not apply to this cluster's Kubernetes v1.35.4: the spec needs Kubernetes v1.36 and later (KEP-5311: …)`
	// A release-blocking spec of a claimed capability that also carries an
	// upstream change's label, skipped for another reason: a hole.
	versionLabelled := s.run("p", k37a, time.Hour, "skipped")
	versionLabelled.Specs.Specs[2].Labels = append(versionLabelled.Specs.Specs[2].Labels, "RelaxedServiceNameValidation")
	filteredByMetadata := s.run("p", k37a, time.Hour, "filtered")
	filteredByMetadata.Specs.LabelFilter = "" // recorded before specs.json had it
	// Narrowed to specs outside the release-blocking set, one of which
	// failed: that failure does not decide the verdict.
	filteredToOthers := s.run("p", k37a, time.Hour, "filtered")
	filteredToOthers.Specs.Specs = filteredToOthers.Specs.Specs[1:]
	filteredAndFailed := s.run("p", k37a, time.Hour, "filtered")
	filteredAndFailed.Specs.Specs[0].State = "failed"
	// Left out by the filter (no skip reason), of a claimed capability.
	filteredOut := s.run("p", k37a, time.Hour, "filtered")
	filteredOut.Specs.Capabilities = []string{"InstancesV2", "NodeLifecycle"}
	filteredOut.Specs.Specs = append(filteredOut.Specs.Specs, prow.SpecRecord{Suite: "nodelifecycle", Text: "[nodelifecycle] deletes the Node of a deleted instance",
		Labels: []string{"NodeLifecycle", ReleaseBlockingLabel}, State: "skipped"})

	// Interrupted after a release-blocking spec had failed to its end (a
	// CCM that never provisions makes the job time out): fail.
	abortedAfterFailure := s.run("p", k37a, time.Hour, "abort")
	abortedAfterFailure.Specs.Specs = append([]prow.SpecRecord{{Suite: "loadbalancer", Text: "[loadbalancer] provisions a load balancer",
		Labels: []string{"LoadBalancer", ReleaseBlockingLabel}, State: "failed"}}, abortedAfterFailure.Specs.Specs...)
	// Interrupted after a release-blocking spec had passed: says nothing.
	abortedAfterPass := s.run("p", k37a, time.Hour, "abort")
	abortedAfterPass.Specs.Specs = append([]prow.SpecRecord{{Suite: "loadbalancer", Text: "[loadbalancer] provisions a load balancer",
		Labels: []string{"LoadBalancer", ReleaseBlockingLabel}, State: "passed"}}, abortedAfterPass.Specs.Specs...)
	// Every spec passed, but a load balancer stayed behind.
	leaked := s.run("p", k37a, time.Hour, "pass")
	leaked.Specs.Leftovers = []string{"cloud load balancer lb-0003 (of Service ns/web)"}
	leaked.Specs.HarnessError = "the specs left 1 thing(s) behind"
	leakedAndFailed := s.run("p", k37a, time.Hour, "fail")
	leakedAndFailed.Specs.Leftovers = []string{"cloud route r-0001"}

	// A release-blocking spec that needs simulated nodes (package
	// blocking), skipped: a hole where nodes are simulated, excused on
	// kind, and a hole in a run that did not record its backend.
	needsNodes := func(backend, state string) *store.Run {
		r := s.run("p", k37a, time.Hour, "pass")
		r.Specs.Capabilities = []string{"InstancesV2", "NodeIPAnnotation"}
		r.Specs.Specs = append(r.Specs.Specs, prow.SpecRecord{Suite: "nodeip", Text: "[nodeip] makes an IPv4 node IP the node's only InternalIP",
			Labels: []string{"NodeIPAnnotation", "InstancesV2", "NeedsSimulatedNodes", ReleaseBlockingLabel}, State: state,
			SkipReason: "this cluster's nodes are real machines; the spec needs simulated ones (local backend)"})
		if backend != "" {
			r.Metadata = map[string]any{prow.MetaBackend: backend}
		}
		return r
	}

	tests := []struct {
		name       string
		run        *store.Run
		want       Verdict
		wantReason string
	}{
		{"a spec needing simulated nodes skipped on the local backend", needsNodes("local", "skipped"), VerdictPartial, "did not run: [nodeip] makes an IPv4 node IP"},
		{"a spec needing simulated nodes skipped on kind", needsNodes("kind", "skipped"), VerdictPass, ""},
		{"a spec needing simulated nodes skipped where the backend is unknown", needsNodes("", "skipped"), VerdictPartial, "did not run: [nodeip]"},
		{"a spec needing simulated nodes failed on the local backend", needsNodes("local", "failed"), VerdictFail, "[nodeip] makes an IPv4 node IP"},
		{"a spec needing simulated nodes failed on kind, where it does not block", needsNodes("kind", "failed"), VerdictPass, ""},
		{"the environment failed", s.run("p", k37a, time.Hour, "setup"), VerdictSetup, "the environment failed, not the CCM: simulated nodes"},
		{"the CCM did not start", s.run("p", k37a, time.Hour, "ccmdown"), VerdictFail, "harness error: ccm: exited"},
		{"interrupted after a release-blocking spec failed", abortedAfterFailure, VerdictFail, "interrupted; 1 release-blocking spec(s) failed: [loadbalancer] provisions a load balancer"},
		{"interrupted after a release-blocking spec passed", abortedAfterPass, VerdictNone, "interrupted"},
		{"leftovers fail a run whose specs passed", leaked, VerdictFail, "left 1 thing(s) behind: cloud load balancer lb-0003 (of Service ns/web)"},
		{"leftovers are named beside a failed spec", leakedAndFailed, VerdictFail, "1 release-blocking spec(s) failed: [nodeaddress] initializes nodes; left 1 thing(s) behind: cloud route r-0001"},
		{"release-blocking spec passed, another failed", s.run("p", k37a, time.Hour, "pass"), VerdictPass, ""},
		{"release-blocking spec failed", s.run("p", k37a, time.Hour, "fail"), VerdictFail, "[nodeaddress] initializes nodes"},
		{"harness error", s.run("p", k37a, time.Hour, "harness"), VerdictFail, "etcd did not start"},
		{"interrupted", s.run("p", k37a, time.Hour, "abort"), VerdictNone, "interrupted"},
		{"the cloud driver broke its protocol", s.run("p", k37a, time.Hour, "driver"), VerdictNone, "cloud driver failed: cloud driver d broke the protocol"},
		{"no specs.json", s.run("p", k37a, time.Hour, "nospecs"), VerdictNone, "specs.json"},
		{"no label: every spec is release-blocking", unlabelled, VerdictFail, "[loadbalancer] keeps the source IP"},
		{"failed BeforeSuite", beforeSuite, VerdictFail, "[BeforeSuite]"},
		{"the only release-blocking spec skipped, capabilities unrecorded", skipped, VerdictPartial, "1 release-blocking spec(s) of claimed capabilities did not run: [nodeaddress] initializes nodes"},
		{"the only release-blocking spec skipped for an undeclared capability", notDeclared, VerdictNone, "no release-blocking spec ran"},
		{"a release-blocking spec of a claimed capability skipped", s.run("p", k37a, time.Hour, "skipped"), VerdictPartial, "did not run: [nodelifecycle] deletes the Node of a deleted instance"},
		{"a release-blocking spec of an unclaimed capability skipped", unclaimed, VerdictPass, ""},
		{"a release-blocking spec skipped, saying its capability is not declared", unclaimedByReason, VerdictPass, ""},
		{"a release-blocking spec skipped outside its Kubernetes range", outsideRange, VerdictPass, ""},
		{"a release-blocking spec with an upstream change's label skipped for another reason", versionLabelled, VerdictPartial, "did not run: [nodelifecycle] deletes the Node of a deleted instance"},
		{"narrowed by a label filter", s.run("p", k37a, time.Hour, "filtered"), VerdictPartial, `narrowed by the label filter "InstancesV2"`},
		{"narrowed by a label filter, recorded in the metadata only", filteredByMetadata, VerdictPartial, `narrowed by the label filter "InstancesV2"`},
		{"narrowed by a label filter, naming what it left out", filteredOut, VerdictPartial, `"InstancesV2"; 1 release-blocking spec(s) of claimed capabilities did not run: [nodelifecycle] deletes`},
		{"narrowed by a label filter, and a release-blocking spec failed", filteredAndFailed, VerdictFail, "[nodeaddress] initializes nodes"},
		{"narrowed by a label filter to specs outside the set, one failed", filteredToOthers, VerdictPartial, `narrowed by the label filter "InstancesV2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.run)
			if v.Verdict != tt.want || !strings.Contains(v.Reason, tt.wantReason) {
				t.Errorf("verdict %s (%q), want %s (…%s…)", v.Verdict, v.Reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestJudgeNamesCapabilitiesTheBackendLeftUnjudged(t *testing.T) {
	var s seq
	r := s.run("p", k37a, time.Hour, "pass")
	r.Specs.Capabilities = []string{"InstancesV2", "NodeIPAnnotation"}
	r.Specs.Specs = append(r.Specs.Specs, prow.SpecRecord{Suite: "nodeip", Text: "[nodeip] makes an IPv4 node IP the node's only InternalIP",
		Labels: []string{"NodeIPAnnotation", "InstancesV2", "NeedsSimulatedNodes", ReleaseBlockingLabel}, State: "skipped"})
	for _, tt := range []struct {
		backend string
		want    []string
	}{
		{"local", nil},
		{"kind", []string{"NodeIPAnnotation"}},
		{"kubeconfig", []string{"NodeIPAnnotation"}},
	} {
		r.Metadata = map[string]any{prow.MetaBackend: tt.backend}
		v := Judge(r)
		if v.Backend != tt.backend || !slices.Equal(v.Unjudged, tt.want) {
			t.Errorf("on %s: backend %q, unjudged %v; want %v", tt.backend, v.Backend, v.Unjudged, tt.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	var s seq
	h := time.Hour
	tests := []struct {
		name      string
		runs      []*store.Run
		wantPairs map[Pair]PairState
		wantLKG   *Pair
		wantStale bool
	}{
		{
			name:      "three passes make a pair green",
			runs:      []*store.Run{s.run("p", k37a, 3*h, "pass"), s.run("p", k37a, 2*h, "pass"), s.run("p", k37a, h, "pass")},
			wantPairs: map[Pair]PairState{k37a: PairGreen},
			wantLKG:   &k37a,
		},
		{
			name:      "two passes are pending",
			runs:      []*store.Run{s.run("p", k37a, 2*h, "pass"), s.run("p", k37a, h, "pass")},
			wantPairs: map[Pair]PairState{k37a: PairPending},
		},
		{
			name:      "passes and a failure are flaky, never LKG",
			runs:      []*store.Run{s.run("p", k37a, 5*h, "pass"), s.run("p", k37a, 4*h, "pass"), s.run("p", k37a, 3*h, "pass"), s.run("p", k37a, 2*h, "fail")},
			wantPairs: map[Pair]PairState{k37a: PairFlaky},
		},
		{
			name:      "a run the cloud driver failed counts against neither side",
			runs:      []*store.Run{s.run("p", k37a, 4*h, "pass"), s.run("p", k37a, 3*h, "pass"), s.run("p", k37a, 2*h, "driver"), s.run("p", k37a, h, "pass")},
			wantPairs: map[Pair]PairState{k37a: PairGreen},
			wantLKG:   &k37a,
		},
		{
			name:      "failures only are red",
			runs:      []*store.Run{s.run("p", k37a, 2*h, "fail"), s.run("p", k37a, h, "harness")},
			wantPairs: map[Pair]PairState{k37a: PairRed},
		},
		{
			name: "the LKG is the newest green pair; a newer red pair does not hide it",
			runs: []*store.Run{
				s.run("p", k36, 9*h, "pass"), s.run("p", k36, 8*h, "pass"), s.run("p", k36, 7*h, "pass"),
				s.run("p", k37a, 6*h, "pass"), s.run("p", k37a, 5*h, "pass"), s.run("p", k37a, 4*h, "pass"),
				s.run("p", k37b, 2*h, "fail"),
			},
			wantPairs: map[Pair]PairState{k36: PairGreen, k37a: PairGreen, k37b: PairRed},
			wantLKG:   &k37a,
		},
		{
			name: "interrupted runs neither count nor break a streak",
			runs: []*store.Run{
				s.run("p", k37a, 5*h, "pass"), s.run("p", k37a, 4*h, "abort"), s.run("p", k37a, 3*h, "pass"),
				s.run("p", k37a, 2*h, "nospecs"), s.run("p", k37a, h, "pass"),
			},
			wantPairs: map[Pair]PairState{k37a: PairGreen},
			wantLKG:   &k37a,
		},
		{
			name:      "partial runs neither count nor break a streak",
			runs:      []*store.Run{s.run("p", k37a, 5*h, "pass"), s.run("p", k37a, 4*h, "filtered"), s.run("p", k37a, 3*h, "pass"), s.run("p", k37a, 2*h, "skipped"), s.run("p", k37a, h, "pass")},
			wantPairs: map[Pair]PairState{k37a: PairGreen},
			wantLKG:   &k37a,
		},
		{
			name:      "label-filtered runs are never last-known-good",
			runs:      []*store.Run{s.run("p", k37a, 3*h, "filtered"), s.run("p", k37a, 2*h, "filtered"), s.run("p", k37a, h, "filtered")},
			wantPairs: map[Pair]PairState{k37a: PairPartial},
		},
		{
			name:      "runs that skip a claimed release-blocking spec are never last-known-good",
			runs:      []*store.Run{s.run("p", k37a, 3*h, "skipped"), s.run("p", k37a, 2*h, "skipped"), s.run("p", k37a, h, "skipped")},
			wantPairs: map[Pair]PairState{k37a: PairPartial},
		},
		{
			name:      "a provider whose newest run is older than 72h is stale",
			runs:      []*store.Run{s.run("p", k37a, 100*h, "pass"), s.run("p", k37a, 90*h, "pass"), s.run("p", k37a, 80*h, "pass")},
			wantPairs: map[Pair]PairState{k37a: PairGreen},
			wantLKG:   &k37a,
			wantStale: true,
		},
		{
			name:      "environment failures neither count nor break a streak, nor make a pair flaky",
			runs:      []*store.Run{s.run("p", k37a, 5*h, "pass"), s.run("p", k37a, 4*h, "setup"), s.run("p", k37a, 3*h, "pass"), s.run("p", k37a, 2*h, "setup"), s.run("p", k37a, h, "pass")},
			wantPairs: map[Pair]PairState{k37a: PairGreen},
			wantLKG:   &k37a,
		},
		{
			name:      "a CCM that does not start is a failure",
			runs:      []*store.Run{s.run("p", k37a, 3*h, "pass"), s.run("p", k37a, 2*h, "ccmdown"), s.run("p", k37a, h, "pass")},
			wantPairs: map[Pair]PairState{k37a: PairFlaky},
		},
		{
			// An edited profile (other capabilities or timeouts) or a new
			// harness minor (other oracles) starts a streak of its own.
			name: "another profile or harness minor is another pair",
			runs: []*store.Run{
				s.run("p", k37a, 6*h, "pass"), s.run("p", k37a, 5*h, "pass"),
				withProfile(s.run("p", k37a, 4*h, "pass"), "sha256:p2"),
				withHarness(s.run("p", k37a, 3*h, "pass"), "v0.2.0"),
			},
			wantPairs: map[Pair]PairState{k37a: PairPending, withProfilePair(k37a, "sha256:p2"): PairPending, withHarnessPair(k37a, "v0.2"): PairPending},
		},
		{
			name:      "a run that failed before the cluster came up has no pair but is a run",
			runs:      []*store.Run{s.run("p", Pair{}, h, "harness")},
			wantPairs: map[Pair]PairState{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Evaluate(&store.Snapshot{Runs: tt.runs}, Config{Now: func() time.Time { return now }})
			if len(rep.Providers) != 1 {
				t.Fatalf("%d providers, want 1", len(rep.Providers))
			}
			ps := rep.Providers[0]
			got := map[Pair]PairState{}
			for _, p := range ps.Pairs {
				got[p.Pair] = p.State
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantPairs) {
				t.Errorf("pairs %v, want %v", got, tt.wantPairs)
			}
			switch {
			case tt.wantLKG == nil && ps.LKG != nil:
				t.Errorf("LKG %v, want none", ps.LKG.Pair)
			case tt.wantLKG != nil && (ps.LKG == nil || ps.LKG.Pair != *tt.wantLKG):
				t.Errorf("LKG %v, want %v", ps.LKG, *tt.wantLKG)
			}
			if ps.Stale != tt.wantStale {
				t.Errorf("stale %v, want %v", ps.Stale, tt.wantStale)
			}
			if len(ps.Runs) != len(tt.runs) {
				t.Errorf("%d run verdicts, want %d", len(ps.Runs), len(tt.runs))
			}
		})
	}
}

func TestStaleAfterIsConfigurable(t *testing.T) {
	var s seq
	snap := &store.Snapshot{Runs: []*store.Run{s.run("p", k37a, 10*time.Hour, "pass")}}
	for after, want := range map[time.Duration]bool{0: false, 9 * time.Hour: true, 11 * time.Hour: false} {
		rep := Evaluate(snap, Config{Now: func() time.Time { return now }, StaleAfter: after})
		if rep.Providers[0].Stale != want {
			t.Errorf("stale-after %s: stale %v, want %v", after, rep.Providers[0].Stale, want)
		}
	}
}

func TestCheck(t *testing.T) {
	var s seq
	h := time.Hour
	var runs []*store.Run
	add := func(rs ...*store.Run) { runs = append(runs, rs...) }
	// green: three passes of v1.37.2.
	add(s.run("green", k37a, 3*h, "pass"), s.run("green", k37a, 2*h, "pass"), s.run("green", k37a, h, "pass"))
	// flaky: passes and a failure of one pair.
	add(s.run("flaky", k37a, 4*h, "pass"), s.run("flaky", k37a, 3*h, "fail"), s.run("flaky", k37a, 2*h, "pass"), s.run("flaky", k37a, h, "pass"))
	// red.
	add(s.run("red", k37a, 2*h, "fail"), s.run("red", k37a, h, "fail"))
	// stale: green, but 100 hours ago.
	add(s.run("stale", k37a, 102*h, "pass"), s.run("stale", k37a, 101*h, "pass"), s.run("stale", k37a, 100*h, "pass"))
	// old: green on v1.36 only.
	add(s.run("old", k36, 3*h, "pass"), s.run("old", k36, 2*h, "pass"), s.run("old", k36, h, "pass"))
	// pending: two passes.
	add(s.run("pending", k37a, 2*h, "pass"), s.run("pending", k37a, h, "pass"))
	// partial: three label-filtered runs.
	add(s.run("partial", k37a, 3*h, "filtered"), s.run("partial", k37a, 2*h, "filtered"), s.run("partial", k37a, h, "filtered"))
	rep := Evaluate(&store.Snapshot{Runs: runs}, Config{Now: func() time.Time { return now }})

	want := map[string]Status{"green": StatusGreen, "flaky": StatusFlaky, "red": StatusRed, "stale": StatusStale, "old": StatusUntested, "pending": StatusPending, "partial": StatusPartial, "absent": StatusUntested}
	tests := []struct {
		name      string
		version   string
		providers []string
		wantOK    bool
	}{
		{"the green provider alone", "v1.37.2", []string{"green"}, true},
		{"every provider in the store", "v1.37.2", nil, false},
		{"a provider not in the store", "v1.37.2", []string{"green", "absent"}, false},
		{"each non-green provider", "v1.37.2", []string{"flaky", "red", "stale", "old", "pending", "partial"}, false},
		{"another version", "v1.36.5", []string{"old"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rep.Check(tt.version, tt.providers)
			if c.OK != tt.wantOK {
				t.Errorf("ok %v, want %v: %+v", c.OK, tt.wantOK, c.Providers)
			}
			if tt.providers == nil && len(c.Providers) != 7 {
				t.Errorf("%d providers checked, want all 7", len(c.Providers))
			}
			for _, p := range c.Providers {
				w := want[p.Provider]
				if tt.version == "v1.36.5" && p.Provider == "old" {
					w = StatusGreen
				}
				if p.Status != w {
					t.Errorf("%s: %s (%s), want %s", p.Provider, p.Status, p.Reason, w)
				}
				if p.Reason == "" {
					t.Errorf("%s: no reason", p.Provider)
				}
				if (p.Status == StatusGreen) != (p.LKG != nil && p.LKG.State == PairGreen) && p.Status != StatusStale {
					t.Errorf("%s: status %s with LKG %v", p.Provider, p.Status, p.LKG)
				}
			}
		})
	}
}

// A provider with a corrupt record keeps its good runs, and the other
// providers are untouched; the problem is reported.
func TestEvaluateKeepsProblems(t *testing.T) {
	var s seq
	snap := &store.Snapshot{
		Runs:     []*store.Run{s.run("a", k37a, 3*time.Hour, "pass"), s.run("a", k37a, 2*time.Hour, "nospecs")},
		Problems: []store.Problem{{Path: "/store/logs/ccm-conformance-a/1/finished.json", Err: "unexpected EOF"}},
	}
	rep := Evaluate(snap, Config{Now: func() time.Time { return now }})
	if len(rep.Problems) != 2 {
		t.Fatalf("problems %v, want the store's and the missing specs.json", rep.Problems)
	}
	if !strings.HasSuffix(rep.Problems[1].Path, "/artifacts/specs.json") || !strings.HasPrefix(rep.Problems[1].Path, "/store/logs/") {
		t.Errorf("problem path %q", rep.Problems[1].Path)
	}
}

// Publishing one run directory three times gives three build ids but one
// run: it must not make a pair last-known-good.
func TestRepublishedRunCountsOnce(t *testing.T) {
	var s seq
	first := s.run("p", k37a, time.Hour, "pass")
	var runs []*store.Run
	for i := 0; i < 3; i++ {
		again := *first
		again.Build.ID = fmt.Sprintf("%s-%d", first.ID, i)
		again.Location = "/store/logs/" + again.Job + "/" + again.Build.ID + "/"
		runs = append(runs, &again)
	}
	rep := Evaluate(&store.Snapshot{Runs: runs}, Config{Now: func() time.Time { return now }})
	ps := rep.Providers[0]
	if ps.LKG != nil {
		t.Errorf("LKG = %+v from one run published three times", ps.LKG)
	}
	if len(ps.Pairs) != 1 || ps.Pairs[0].Passes != 1 {
		t.Errorf("pairs = %+v, want one pair with one pass", ps.Pairs)
	}
	dups := 0
	for _, p := range rep.Problems {
		if strings.Contains(p.Err, "published again") {
			dups++
		}
	}
	if dups != 2 {
		t.Errorf("problems = %+v, want two republications reported", rep.Problems)
	}
}

// A failing run that the harness failed is named in the reason of the
// pair it made flaky or red, as failing specs are.
// Staleness is per (provider, Kubernetes version): a provider that runs
// v1.36 every day but has not run v1.37.2 for 100 hours is stale for
// v1.37.2, and fresh for v1.36.
func TestCheckStalenessPerVersion(t *testing.T) {
	var s seq
	h := time.Hour
	runs := []*store.Run{
		s.run("p", k37a, 102*h, "pass"), s.run("p", k37a, 101*h, "pass"), s.run("p", k37a, 100*h, "pass"),
		s.run("p", k36, 3*h, "pass"), s.run("p", k36, 2*h, "pass"), s.run("p", k36, h, "pass"),
	}
	rep := Evaluate(&store.Snapshot{Runs: runs}, Config{Now: func() time.Time { return now }})
	if c := rep.Check("v1.37.2", nil).Providers[0]; c.Status != StatusStale || !strings.Contains(c.Reason, "newest run of Kubernetes v1.37.2") {
		t.Errorf("v1.37.2: %s (%s), want stale", c.Status, c.Reason)
	}
	if c := rep.Check("v1.36.5", nil).Providers[0]; c.Status != StatusGreen {
		t.Errorf("v1.36.5: %s (%s), want green", c.Status, c.Reason)
	}
}

func TestCheckReasonNamesHarnessErrors(t *testing.T) {
	var s seq
	h := time.Hour
	runs := []*store.Run{
		s.run("flaky", k37a, 4*h, "pass"), s.run("flaky", k37a, 3*h, "harness"), s.run("flaky", k37a, 2*h, "pass"),
		s.run("mixed", k37a, 4*h, "pass"), s.run("mixed", k37a, 3*h, "fail"), s.run("mixed", k37a, 2*h, "harness"),
		s.run("red", k37a, 2*h, "harness"), s.run("red", k37a, h, "harness"),
	}
	rep := Evaluate(&store.Snapshot{Runs: runs}, Config{Now: func() time.Time { return now }})
	tests := []struct {
		provider string
		want     Status
		reason   []string
	}{
		{"flaky", StatusFlaky, []string{"passed 2 and failed 1 of 3 runs", "1 run(s) failed with a harness error: local cluster: etcd did not start"}},
		{"mixed", StatusFlaky, []string{"failing: [nodeaddress] initializes nodes", "1 run(s) failed with a harness error: local cluster: etcd did not start"}},
		{"red", StatusRed, []string{"failed 2 of 2 runs", "2 run(s) failed with a harness error: local cluster: etcd did not start"}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			c := rep.Check("v1.37.2", []string{tt.provider}).Providers[0]
			if c.Status != tt.want {
				t.Errorf("status %s, want %s", c.Status, tt.want)
			}
			for _, r := range tt.reason {
				if !strings.Contains(c.Reason, r) {
					t.Errorf("reason %q does not say %q", c.Reason, r)
				}
			}
		})
	}
}

// A run's time is when it finished, wherever the rules show one: the
// provider's last run and a pair's first and last run, so that lkg show,
// lkg check and the dashboard agree.
func TestLastRunIsTheFinish(t *testing.T) {
	var s seq
	h := time.Hour
	first, last := s.run("p", k37a, 3*h, "pass"), s.run("p", k37a, h, "pass")
	last.Finished = last.Started.Add(40 * time.Minute)
	rep := Evaluate(&store.Snapshot{Runs: []*store.Run{first, s.run("p", k37a, 2*h, "pass"), last}}, Config{Now: func() time.Time { return now }})
	ps := rep.Provider("p")
	c := rep.Check("v1.37.2", []string{"p"}).Providers[0]
	tests := []struct {
		name string
		got  time.Time
		want time.Time
	}{
		{"provider's last run", ps.LastRun, last.Finished},
		{"pair's last run", ps.Pairs[0].LastRun, last.Finished},
		{"pair's first run", ps.Pairs[0].FirstRun, first.Finished},
		{"lkg check's last run", *c.LastRun, last.Finished},
		{"lkg check's pair's last run", c.Pair.LastRun, last.Finished},
	}
	for _, tt := range tests {
		if !tt.got.Equal(tt.want) {
			t.Errorf("%s %s, want the finish %s", tt.name, tt.got, tt.want)
		}
	}
	if ps.Pairs[0].LastBuild != last.ID {
		t.Errorf("last build %s, want %s", ps.Pairs[0].LastBuild, last.ID)
	}
	if want := last.Finished.UTC().Format(time.RFC3339); !strings.Contains(c.Reason, want) {
		t.Errorf("reason %q does not give the newest run's finish %s", c.Reason, want)
	}
}

// Check names the pair its status comes from: the LKG when there is one,
// even when a newer pair of the version failed; else the newest pair.
func TestCheckPair(t *testing.T) {
	var s seq
	h := time.Hour
	runs := []*store.Run{
		// green on k37a, then a newer CCM build k37b fails.
		s.run("p", k37a, 5*h, "pass"), s.run("p", k37a, 4*h, "pass"), s.run("p", k37a, 3*h, "pass"), s.run("p", k37b, h, "fail"),
		// red only.
		s.run("r", k37b, 2*h, "fail"),
	}
	rep := Evaluate(&store.Snapshot{Runs: runs}, Config{Now: func() time.Time { return now }})
	tests := []struct {
		provider, version string
		wantPair          *Pair
		wantStatus        Status
	}{
		{"p", "v1.37.2", &k37a, StatusGreen},
		{"r", "v1.37.2", &k37b, StatusRed},
		{"r", "v1.36.5", nil, StatusUntested},
	}
	for _, tt := range tests {
		c := rep.Check(tt.version, []string{tt.provider}).Providers[0]
		if c.Status != tt.wantStatus {
			t.Errorf("%s %s: status %s, want %s", tt.provider, tt.version, c.Status, tt.wantStatus)
		}
		switch {
		case tt.wantPair == nil && c.Pair != nil:
			t.Errorf("%s %s: pair %v, want none", tt.provider, tt.version, c.Pair.Pair)
		case tt.wantPair != nil && (c.Pair == nil || c.Pair.Pair != *tt.wantPair):
			t.Errorf("%s %s: pair %v, want %v", tt.provider, tt.version, c.Pair, *tt.wantPair)
		}
	}
}

// lkg check names why a partial pair is no evidence: the label filter and
// the release-blocking specs its runs left out; a pending pair with partial
// runs among its passes says so too.
func TestCheckReasonNamesWhatPartialRunsMissed(t *testing.T) {
	var s seq
	h := time.Hour
	runs := []*store.Run{
		s.run("filtered", k37a, 2*h, "filtered"), s.run("filtered", k37a, h, "filtered"),
		s.run("skipping", k37a, 2*h, "skipped"), s.run("skipping", k37a, h, "skipped"),
		s.run("mixed", k37a, 3*h, "pass"), s.run("mixed", k37a, 2*h, "filtered"), s.run("mixed", k37a, h, "pass"),
	}
	rep := Evaluate(&store.Snapshot{Runs: runs}, Config{Now: func() time.Time { return now }})
	tests := []struct {
		provider string
		want     Status
		reason   []string
	}{
		{"filtered", StatusPartial, []string{"has 2 run(s), none a full one", `2 run(s) partial, no last-known-good evidence: narrowed by the label filter "InstancesV2"`}},
		{"skipping", StatusPartial, []string{"did not run: [nodelifecycle] deletes the Node of a deleted instance"}},
		{"mixed", StatusPending, []string{"passed 2 consecutive runs of the 3 needed", `1 run(s) partial, no last-known-good evidence: narrowed by the label filter "InstancesV2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			c := rep.Check("v1.37.2", []string{tt.provider}).Providers[0]
			if c.Status != tt.want {
				t.Errorf("status %s (%s), want %s", c.Status, c.Reason, tt.want)
			}
			for _, r := range tt.reason {
				if !strings.Contains(c.Reason, r) {
					t.Errorf("reason %q does not say %q", c.Reason, r)
				}
			}
		})
	}
}

// The skip message the judge reads is the one the framework writes.
func TestSkipMessagesMatchTheFramework(t *testing.T) {
	if !strings.HasPrefix(framework.OutsideVersionRange, outsideVersionRange) {
		t.Errorf("framework.OutsideVersionRange is %q; the judge looks for %q", framework.OutsideVersionRange, outsideVersionRange)
	}
}

func withProfile(r *store.Run, digest string) *store.Run {
	r.Metadata = map[string]any{prow.MetaProfileDigest: digest}
	return r
}

func withHarness(r *store.Run, version string) *store.Run {
	r.HarnessVersion = version
	return r
}

func withProfilePair(p Pair, digest string) Pair { p.ProfileDigest = digest; return p }

func withHarnessPair(p Pair, minor string) Pair { p.HarnessMinor = minor; return p }

func TestHarnessMinor(t *testing.T) {
	for in, want := range map[string]string{"v0.1.3": "v0.1", "v1.2.0-rc.1": "v1.2", "(devel)": "(devel)", "": "", "v0.1": "v0.1"} {
		if got := harnessMinor(in); got != want {
			t.Errorf("harnessMinor(%q) = %q, want %q", in, got, want)
		}
	}
}

// A pair shows what its newest run covered: the claimed capabilities and
// how many release-blocking specs passed.
func TestCoverage(t *testing.T) {
	var s seq
	r := s.run("p", k37a, time.Hour, "pass")
	r.Specs.Capabilities = []string{"InstancesV2", "LoadBalancer"}
	v := Judge(r)
	if v.BlockingPassed != 1 || strings.Join(v.Capabilities, ",") != "InstancesV2,LoadBalancer" {
		t.Errorf("Judge: %d blocking passed, capabilities %v; want 1 and InstancesV2,LoadBalancer", v.BlockingPassed, v.Capabilities)
	}
	rep := Evaluate(&store.Snapshot{Runs: []*store.Run{r}}, Config{Now: func() time.Time { return now }})
	got := rep.Providers[0].Pairs[0].Coverage()
	if want := "1 release-blocking spec(s) passed; capabilities InstancesV2, LoadBalancer"; got != want {
		t.Errorf("Coverage() = %q, want %q", got, want)
	}
}

// Runs on an existing cluster (backend kubeconfig, a provider's cloud
// cluster) earn a streak by that backend's rules: the specs that need
// simulated nodes skip there without making the run partial, so three
// complete runs make the pair green; a run whose join spec skipped (the
// cloud driver could not create an instance for a Node to join) is
// partial and neither counts nor breaks the streak; and the same runs,
// were they recorded as the local backend's, would all be partial.
func TestExistingClusterRunsMakeAStreak(t *testing.T) {
	var s seq
	h := time.Hour
	existing := func(ago time.Duration, backend string, joinSkipped bool) *store.Run {
		r := s.run("p", k37a, ago, "pass")
		r.Metadata = map[string]any{prow.MetaBackend: backend}
		r.Specs.Capabilities = []string{"InstancesV2", "NodeIPAnnotation", "NodeLifecycle"}
		r.Specs.Specs = append(r.Specs.Specs,
			prow.SpecRecord{Suite: "nodeip", Text: "[nodeip] makes an IPv4 node IP the node's only InternalIP", State: "skipped",
				Labels: []string{"NodeIPAnnotation", "InstancesV2", string(labels.SimulatedNodes), string(labels.SimulatedCloud), ReleaseBlockingLabel}},
			prow.SpecRecord{Suite: "nodelifecycle", Text: "[nodelifecycle] keeps a NotReady Node while the cloud answers instance lookups with errors", State: "skipped",
				Labels: []string{"NodeLifecycle", string(labels.SimulatedNodes), string(labels.SimulatedCloud), ReleaseBlockingLabel}},
			prow.SpecRecord{Suite: "nodelifecycle", Text: "[nodelifecycle] deletes the Node of an instance deleted in the cloud", State: "passed",
				Labels: []string{"NodeLifecycle", ReleaseBlockingLabel}},
		)
		if joinSkipped {
			r.Specs.Specs[0].State = "skipped"
			r.Specs.Specs[0].SkipReason = "the harness cannot add a machine to this cluster, ..."
		}
		return r
	}
	for _, tt := range []struct {
		name      string
		runs      []*store.Run
		verdicts  []Verdict
		wantState PairState
	}{
		{
			name:      "three complete runs on an existing cluster make the pair green",
			runs:      []*store.Run{existing(3*h, "kubeconfig", false), existing(2*h, "kubeconfig", false), existing(h, "kubeconfig", false)},
			verdicts:  []Verdict{VerdictPass, VerdictPass, VerdictPass},
			wantState: PairGreen,
		},
		{
			name:      "a run whose join spec skipped neither counts nor breaks the streak",
			runs:      []*store.Run{existing(4*h, "kubeconfig", false), existing(3*h, "kubeconfig", true), existing(2*h, "kubeconfig", false), existing(h, "kubeconfig", false)},
			verdicts:  []Verdict{VerdictPass, VerdictPartial, VerdictPass, VerdictPass},
			wantState: PairGreen,
		},
		{
			name:      "two complete runs and a partial one are pending",
			runs:      []*store.Run{existing(3*h, "kubeconfig", true), existing(2*h, "kubeconfig", false), existing(h, "kubeconfig", false)},
			verdicts:  []Verdict{VerdictPartial, VerdictPass, VerdictPass},
			wantState: PairPending,
		},
		{
			name:      "the same runs on the local backend, where the skipped specs block, are partial",
			runs:      []*store.Run{existing(3*h, "local", false), existing(2*h, "local", false), existing(h, "local", false)},
			verdicts:  []Verdict{VerdictPartial, VerdictPartial, VerdictPartial},
			wantState: PairPartial,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for i, r := range tt.runs {
				if v := Judge(r); v.Verdict != tt.verdicts[i] {
					t.Errorf("run %d (%s): verdict %s (%s), want %s", i, v.Backend, v.Verdict, v.Reason, tt.verdicts[i])
				}
			}
			rep := Evaluate(&store.Snapshot{Runs: tt.runs}, Config{Now: func() time.Time { return now }})
			if len(rep.Providers) != 1 || len(rep.Providers[0].Pairs) != 1 {
				t.Fatalf("want one provider with one pair, got %+v", rep.Providers)
			}
			ps := rep.Providers[0]
			if got := ps.Pairs[0].State; got != tt.wantState {
				t.Errorf("pair %s, want %s", got, tt.wantState)
			}
			if green := tt.wantState == PairGreen; green != (ps.LKG != nil) {
				t.Errorf("LKG %v, want one: %v", ps.LKG, green)
			}
		})
	}
}
