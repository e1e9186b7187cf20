package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir/rundirtest"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// A run's setup time is its slowest world's, its observation lag figure
// the 99th percentile of all its watched waits; a run without either has
// no such figure.
func TestHarnessTimings(t *testing.T) {
	lags := make([]float64, 100)
	for i := range lags {
		lags[i] = float64(i+1) / 1000 // 1ms .. 100ms
	}
	tests := []struct {
		name    string
		timings prow.Timings
		want    map[string]float64
	}{
		{"none", prow.Timings{}, map[string]float64{}},
		{"one world", prow.Timings{Setup: []prow.SetupTiming{{Step: "cluster", Seconds: 4}, {Step: "ccm", Seconds: 1.5}}},
			map[string]float64{SetupTiming: 5.5}},
		{"lanes: the slowest world", prow.Timings{Setup: []prow.SetupTiming{
			{World: "lane-1", Step: "cluster", Seconds: 7}, {World: "lane-1", Step: "ccm", Seconds: 2},
			{World: "lane-2", Step: "cluster", Seconds: 8}, {World: "lane-2", Step: "ccm", Seconds: 2.5},
		}}, map[string]float64{SetupTiming: 10.5}},
		{"lags over specs", prow.Timings{Specs: []prow.SpecTiming{{ObservationLagsSeconds: lags[:50]}, {ObservationLagsSeconds: lags[50:]}}},
			map[string]float64{ObservationLagP99: 0.099}},
		{"one lag", prow.Timings{Specs: []prow.SpecTiming{{ObservationLagsSeconds: []float64{0.003}}, {}}},
			map[string]float64{ObservationLagP99: 0.003}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]float64{}
			for _, l := range harnessTimings(&tt.timings) {
				got[l.Name] = l.Seconds
			}
			if len(got) != len(tt.want) {
				t.Errorf("timings %v, want %v", got, tt.want)
			}
			for name, want := range tt.want {
				if g, ok := got[name]; !ok || g < want-1e-9 || g > want+1e-9 {
					t.Errorf("%s = %v, want %v", name, g, want)
				}
			}
		})
	}
}

// The harness's timings are charted after the suites' latencies, a point
// per run that recorded them, titled in words.
func TestTimingsCharts(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	run := func(id string, h int, lat, setup float64) *RunPage {
		r := &RunPage{Run: &store.Run{Build: store.Build{Job: "j", ID: id}, Started: start.Add(time.Duration(h) * time.Hour)}, Page: "runs/j/" + id + ".html"}
		if lat > 0 {
			r.Latencies = []Latency{{Name: "load-balancer-ready", Seconds: lat}}
		}
		if setup > 0 {
			r.Timings = []Latency{{Name: SetupTiming, Seconds: setup}, {Name: ObservationLagP99, Seconds: setup / 1000}}
		}
		return r
	}
	rows := []*Row{
		{Provider: "a", Runs: []*RunPage{run("3", 3, 1.2, 9), run("2", 2, 1.1, 0), run("1", 1, 1.0, 8)}},
		{Provider: "b", Runs: []*RunPage{run("4", 2, 0, 12)}},
	}
	charts := buildCharts(rows)
	tests := []struct {
		name, title string
		points      map[string]int // per provider
	}{
		{"load-balancer-ready", "Time to load-balancer ready", map[string]int{"a": 3}},
		{ObservationLagP99, "Observation lag of watched waits, p99", map[string]int{"a": 2, "b": 1}},
		{SetupTiming, "Setup time (the slowest world)", map[string]int{"a": 2, "b": 1}},
	}
	if len(charts) != len(tests) {
		t.Fatalf("%d charts, want %d", len(charts), len(tests))
	}
	for i, tt := range tests {
		c := charts[i]
		if c.Name != tt.name || c.Title != tt.title {
			t.Errorf("chart %d: %s %q, want %s %q", i, c.Name, c.Title, tt.name, tt.title)
		}
		got := map[string]int{}
		for _, se := range c.Series {
			got[se.Provider] = len(se.Points)
			for _, p := range se.Points {
				if p.Link == "" || !strings.Contains(p.Label, se.Provider) {
					t.Errorf("%s: point %+v has no link or label", c.Name, p)
				}
			}
		}
		for p, n := range tt.points {
			if got[p] != n {
				t.Errorf("%s: %s has %d points, want %d", c.Name, p, got[p], n)
			}
		}
		if len(got) != len(tt.points) {
			t.Errorf("%s: series %v, want %v", c.Name, got, tt.points)
		}
	}
}

// A cell shows the counts of, and links to, the pair its status comes
// from: a green cell stays on its green pair when a newer CCM build of
// the same Kubernetes version failed. The "last run" shown is the newest
// run's finish.
func TestCellComesFromItsPair(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Open(context.Background(), dir, store.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	publish := func(digest string, ago time.Duration, state types.SpecState) store.Build {
		return rundirtest.Publish(t, st, rundirtest.Run{
			Provider: "upgraded", KubernetesVersion: "v1.37.2", KubernetesCommit: "4f1e2d3", CCMDigest: digest,
			Started: now.Add(-ago), Duration: 3 * time.Minute,
			Specs: []rundirtest.Spec{{Suite: "nodeaddress", Text: "initializes nodes", Labels: []string{lkg.ReleaseBlockingLabel}, State: state, Failure: "no"}},
		})
	}
	publish("sha256:good", 4*time.Hour, types.SpecStatePassed)
	publish("sha256:good", 3*time.Hour, types.SpecStatePassed)
	lastGood := publish("sha256:good", 2*time.Hour, types.SpecStatePassed)
	publish("sha256:newer", time.Hour, types.SpecStateFailed)

	out := t.TempDir()
	m, err := Generate(context.Background(), st, out, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 1 || len(m.Rows[0].Cells) != 1 {
		t.Fatalf("want one row with one cell: %+v", m.Rows)
	}
	row, c := m.Rows[0], m.Rows[0].Cells[0]
	wantLink := "runs/" + lastGood.Job + "/" + lastGood.ID + ".html"
	if c.Status != lkg.StatusGreen || c.Pair == nil || c.Pair.CCMDigest != "sha256:good" || c.Pair.Passes != 3 || c.Pair.Failures != 0 || c.Link != wantLink {
		t.Errorf("cell %s, pair %+v, link %s; want green, sha256:good with 3 passes and 0 failures, link %s", c.Status, c.Pair, c.Link, wantLink)
	}
	if want := now.Add(-time.Hour + 3*time.Minute); !row.LastRun.Equal(want) {
		t.Errorf("last run %s, want the newest run's finish %s", row.LastRun, want)
	}
	index, err := os.ReadFile(filepath.Join(out, IndexPage))
	if err != nil {
		t.Fatal(err)
	}
	html := string(index)
	for _, want := range []string{"3 pass · 0 fail", `href="` + wantLink + `"`} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html does not contain %q", want)
		}
	}
	if strings.Contains(html, "0 pass · 1 fail") {
		t.Error("index.html shows the failing pair's counts under a green cell")
	}
}
