package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir/rundirtest"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// now is the clock of every test here.
var now = time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

// xssMessage is a failure message that would run script if a page did not
// escape it.
const xssMessage = "service web: expected ingress, saw none <script>window.pwned = true</script> \x1b[1m<b>bold</b>\x1b[0m"

// seeded says what seedStore put where.
type seeded struct {
	url string
	// corrupt is the truncated finished.json.
	corrupt string
	// xssRun is the build whose failing spec has xssMessage.
	xssRun store.Build
}

// wantCells is the matrix a seeded store must show: provider, then
// Kubernetes version, to status; "*" after a status marks the LKG cell.
var wantCells = map[string]map[string]string{
	"steady":  {"v1.37.2": "green*", "v1.36.5": "pending"},
	"flaky":   {"v1.37.2": "flaky", "v1.36.5": "untested"},
	"broken":  {"v1.37.2": "red", "v1.36.5": "untested"},
	"dormant": {"v1.37.2": "stale*", "v1.36.5": "untested"},
}

// seedStore publishes into a new file store: a provider with a streak of
// passes on v1.37.2 (green, its LKG) and one pass on v1.36.5 (pending);
// one that passed and failed (flaky), the failure's message full of
// markup; one that only failed (red); one whose green streak is 100 hours
// old (stale); and a run whose finished.json is truncated afterwards.
func seedStore(t testing.TB) seeded {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Open(context.Background(), dir, store.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := time.Hour
	publish := func(provider, version, digest string, ago time.Duration, failure string, lbReady, nodeInit time.Duration) store.Build {
		state := types.SpecStatePassed
		if failure != "" {
			state = types.SpecStateFailed
		}
		return rundirtest.Publish(t, st, rundirtest.Run{
			Provider: provider, KubernetesVersion: version, KubernetesCommit: "4f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6", CCMDigest: digest,
			Started: now.Add(-ago), Duration: 2 * time.Minute,
			// Two lanes, set up side by side; the setup scales with the
			// node's initialization, so the chart's lines differ.
			Worlds: []runner.WorldInfo{
				{Name: "lane-1", Phases: []runner.Phase{{Name: "cluster", Duration: 7 * time.Second}, {Name: "ccm", Duration: 10 * nodeInit}}},
				{Name: "lane-2", Phases: []runner.Phase{{Name: "cluster", Duration: 6 * time.Second}, {Name: "ccm", Duration: 12 * nodeInit}}},
			},
			Specs: []rundirtest.Spec{
				{Suite: "nodeaddress", Text: "initializes a node that joins while the CCM runs", Labels: []string{"InstancesV2", lkg.ReleaseBlockingLabel},
					Latencies: map[string]time.Duration{"node-initialized": nodeInit}, ObservationLags: []time.Duration{nodeInit / 50, nodeInit / 100}},
				{Suite: "loadbalancer", Text: "gives a new Service an ingress", Labels: []string{"LoadBalancer", lkg.ReleaseBlockingLabel}, State: state, Failure: failure,
					Latencies: map[string]time.Duration{"load-balancer-ready": lbReady}},
				{Suite: "routes", Text: "programs routes", Labels: []string{"Routes"}, State: types.SpecStateSkipped},
			},
		})
	}
	ms := time.Millisecond
	var s seeded
	s.url = dir
	for i, lb := range []time.Duration{1200 * ms, 1500 * ms, 900 * ms} {
		publish("steady", "v1.37.2", "sha256:5teady0000000000000000000000000000000000000000000000000000000001", time.Duration(9-2*i)*h, "", lb, 150*ms)
	}
	publish("steady", "v1.36.5", "sha256:5teady0000000000000000000000000000000000000000000000000000000001", 2*h, "", 1100*ms, 140*ms)
	broken := publish("steady", "v1.37.2", "sha256:5teady0000000000000000000000000000000000000000000000000000000001", h, "", 1000*ms, 150*ms)

	for i, fail := range []bool{false, true, false, false} {
		msg := ""
		if fail {
			msg = xssMessage
		}
		b := publish("flaky", "v1.37.2", "sha256:f1a4y", time.Duration(8-2*i)*h, msg, time.Duration(2000+400*i)*ms, 300*ms)
		if fail {
			s.xssRun = b
		}
	}
	publish("broken", "v1.37.2", "sha256:b0ken", 4*h, "service web: no ingress after 30s", 30*time.Second, 200*ms)
	publish("broken", "v1.37.2", "sha256:b0ken", 3*h, "service web: no ingress after 30s", 30*time.Second, 210*ms)
	for i := 0; i < 3; i++ {
		publish("dormant", "v1.37.2", "sha256:d0rmant", time.Duration(104-i)*h, "", 800*ms, 100*ms)
	}

	s.corrupt = filepath.Join(dir, "logs", broken.Job, broken.ID, "finished.json")
	if err := os.WriteFile(s.corrupt, []byte(`{"timestamp": 17`), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// testOptions are the options of every dashboard built here.
func testOptions() Options {
	return Options{LKG: lkg.Config{Now: func() time.Time { return now }}}
}

// generate seeds a store and writes its dashboard into a new directory.
func generate(t testing.TB) (seeded, *Model, string) {
	t.Helper()
	s := seedStore(t)
	st, err := store.Open(context.Background(), s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := t.TempDir()
	m, err := Generate(context.Background(), st, out, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return s, m, out
}
