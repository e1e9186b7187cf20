package main_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/reports/rundir/rundirtest"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
	"github.com/ccm-conformance/ccm-conformance/reports/store/storetest"
)

// seedStore publishes runs into a new store at url: a green provider (three
// passing runs and one whose finished.json is truncated afterwards), a
// flaky one, a red one, a stale one (green, but 100 hours ago) and one
// tested on another Kubernetes version only. It returns the path of the
// corrupt record when the store is a directory.
func seedStore(t *testing.T, url string) (corrupt string) {
	t.Helper()
	st, err := store.Open(context.Background(), url, store.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().Truncate(time.Second)
	seed := func(provider, version string, ago time.Duration, pass bool) store.Build {
		state := types.SpecStatePassed
		if !pass {
			state = types.SpecStateFailed
		}
		return rundirtest.Publish(t, st, rundirtest.Run{
			Provider: provider, KubernetesVersion: version, KubernetesCommit: "0123456789abcdef", CCMDigest: "sha256:" + provider,
			Started: now.Add(-ago),
			Specs: []rundirtest.Spec{
				{Suite: "nodeaddress", Text: "initializes nodes", Labels: []string{"InstancesV2", "ReleaseBlocking"}, State: state, Failure: "node ccm-node-1: expected zone a, saw b"},
				{Suite: "loadbalancer", Text: "keeps the source IP", Labels: []string{"LoadBalancer"}, State: types.SpecStateFailed},
			},
		})
	}
	h := time.Hour
	for i, pass := range []bool{true, true, true} {
		seed("green", "v1.37.2", time.Duration(5-i)*h, pass)
	}
	broken := seed("green", "v1.37.2", h, true)
	for i, pass := range []bool{true, false, true, true} {
		seed("flaky", "v1.37.2", time.Duration(5-i)*h, pass)
	}
	seed("red", "v1.37.2", 2*h, false)
	seed("red", "v1.37.2", h, false)
	for i := 0; i < 3; i++ {
		seed("stale", "v1.37.2", time.Duration(102-i)*h, true)
	}
	for i := 0; i < 3; i++ {
		seed("old", "v1.36.5", time.Duration(3-i)*h, true)
	}
	if strings.Contains(url, "://") {
		return ""
	}
	corrupt = filepath.Join(url, "logs", broken.Job, broken.ID, "finished.json")
	if err := os.WriteFile(corrupt, []byte(`{"timestamp": 17`), 0o644); err != nil {
		t.Fatal(err)
	}
	return corrupt
}

type checkJSON struct {
	KubernetesVersion string `json:"kubernetesVersion"`
	OK                bool   `json:"ok"`
	Providers         []struct {
		Provider string `json:"provider"`
		Status   string `json:"status"`
		Reason   string `json:"reason"`
		LKG      *struct {
			CCMDigest string `json:"ccmDigest"`
			Streak    int    `json:"streak"`
		} `json:"lkg"`
	} `json:"providers"`
	Problems []struct {
		Path  string `json:"path"`
		Error string `json:"error"`
	} `json:"problems"`
}

func TestLKGCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	corrupt := seedStore(t, dir)

	t.Run("show", func(t *testing.T) {
		res := runHarness(t, nil, "lkg", "show", "--store", dir)
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		for _, want := range []string{"green", "flaky", "red", "stale is stale", "sha256:green"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("show does not say %q:\n%s", want, res.stdout)
			}
		}
		if !strings.Contains(res.stderr, "skipped "+corrupt) {
			t.Errorf("the corrupt record is not reported with its path %s:\n%s", corrupt, res.stderr)
		}
	})

	t.Run("show json", func(t *testing.T) {
		res := runHarness(t, nil, "lkg", "show", "--store", "file://"+dir, "--provider", "green", "--output", "json")
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		var rep struct {
			Providers []struct {
				Provider string
				Stale    bool
				LKG      *struct{ CCMDigest, State string }
			}
			Problems []struct{ Path string }
		}
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
			t.Fatalf("%v:\n%s", err, res.stdout)
		}
		if len(rep.Providers) != 1 || rep.Providers[0].LKG == nil || rep.Providers[0].LKG.CCMDigest != "sha256:green" || rep.Providers[0].LKG.State != "green" {
			t.Errorf("providers %+v", rep.Providers)
		}
		if len(rep.Problems) != 1 || rep.Problems[0].Path != corrupt {
			t.Errorf("problems %+v, want %s", rep.Problems, corrupt)
		}
	})

	t.Run("check", func(t *testing.T) {
		tests := []struct {
			name string
			args []string
			code int
			want map[string]string // provider: status
		}{
			{"green provider", []string{"--providers", "green"}, 0, map[string]string{"green": "green"}},
			{"another version", []string{"--providers", "green,old", "--kubernetes", "v1.36.5"}, 1, map[string]string{"green": "untested", "old": "green"}},
			{"every provider", nil, 1, map[string]string{"green": "green", "flaky": "flaky", "red": "red", "stale": "stale", "old": "untested"}},
			{"a provider with no runs", []string{"--providers", "green,absent"}, 1, map[string]string{"green": "green", "absent": "untested"}},
			{"a longer stale-after", []string{"--providers", "stale", "--stale-after", "200h"}, 0, map[string]string{"stale": "green"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				args := append([]string{"lkg", "check", "--store", dir, "--kubernetes", "v1.37.2", "--output", "json"}, tt.args...)
				res := runHarness(t, nil, args...)
				if res.code != tt.code {
					t.Errorf("exit %d, want %d; stderr:\n%s", res.code, tt.code, res.stderr)
				}
				var c checkJSON
				if err := json.Unmarshal([]byte(res.stdout), &c); err != nil {
					t.Fatalf("%v:\n%s", err, res.stdout)
				}
				if c.OK != (tt.code == 0) {
					t.Errorf("ok %v with exit %d", c.OK, res.code)
				}
				got := map[string]string{}
				for _, p := range c.Providers {
					got[p.Provider] = p.Status
					if p.Status != "green" && !strings.Contains(res.stderr, p.Provider+" ("+p.Status+")") {
						t.Errorf("stderr does not name %s as %s:\n%s", p.Provider, p.Status, res.stderr)
					}
				}
				for p, s := range tt.want {
					if got[p] != s {
						t.Errorf("%s: %q, want %q (all: %v)", p, got[p], s, got)
					}
				}
				if len(got) != len(tt.want) {
					t.Errorf("providers %v, want %v", got, tt.want)
				}
			})
		}
	})

	// Each provider's CI owns its store; the release team reads them all.
	// A second store holds one provider, green on v1.37.2; its newest run
	// was also published to the first store, and counts once.
	t.Run("check two stores", func(t *testing.T) {
		second := filepath.Join(t.TempDir(), "second")
		st, err := store.Open(context.Background(), second, store.WithCreate())
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().Truncate(time.Second)
		run := func(i int) rundirtest.Run {
			return rundirtest.Run{
				Provider: "second", KubernetesVersion: "v1.37.2", KubernetesCommit: "0123456789abcdef", CCMDigest: "sha256:second",
				Started: now.Add(-time.Duration(3-i) * time.Hour),
				Specs:   []rundirtest.Spec{{Suite: "nodeaddress", Text: "initializes nodes", Labels: []string{"InstancesV2", "ReleaseBlocking"}, State: types.SpecStatePassed}},
			}
		}
		for i := 0; i < 3; i++ {
			rundirtest.Publish(t, st, run(i))
		}
		st.Close()
		first, err := store.Open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		rundirtest.Publish(t, first, run(2)) // the newest run, published to both stores
		first.Close()
		for _, tt := range []struct {
			name   string
			stores []string
			code   int
			want   map[string]string
		}{
			{"the second store alone", []string{second}, 1, map[string]string{"second": "green", "green": "untested"}},
			{"both stores", []string{dir, second}, 0, map[string]string{"second": "green", "green": "green"}},
			{"both, in the other order", []string{"file://" + second, dir}, 0, map[string]string{"second": "green", "green": "green"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				args := []string{"lkg", "check", "--kubernetes", "v1.37.2", "--providers", "green,second", "--output", "json"}
				for _, s := range tt.stores {
					args = append(args, "--store", s)
				}
				res := runHarness(t, nil, args...)
				if res.code != tt.code {
					t.Errorf("exit %d, want %d; stderr:\n%s", res.code, tt.code, res.stderr)
				}
				var c checkJSON
				if err := json.Unmarshal([]byte(res.stdout), &c); err != nil {
					t.Fatalf("%v:\n%s", err, res.stdout)
				}
				got := map[string]string{}
				for _, p := range c.Providers {
					got[p.Provider] = p.Status
				}
				if !maps.Equal(got, tt.want) {
					t.Errorf("statuses %v, want %v", got, tt.want)
				}
				if len(tt.stores) == 2 && !strings.Contains(res.stdout, "published again; counted once") {
					t.Errorf("the run in both stores is not reported as counted once:\n%s", res.stdout)
				}
			})
		}
		res := runHarness(t, nil, "lkg", "check", "--kubernetes", "v1.37.2", "--store", second, "--store", filepath.Join(second, "nope"))
		if res.code != 2 || !strings.Contains(res.stderr, filepath.Join(second, "nope")) {
			t.Errorf("an unreadable second store: exit %d, stderr %q; want 2 naming it", res.code, res.stderr)
		}
	})

	t.Run("check table", func(t *testing.T) {
		res := runHarness(t, nil, "lkg", "check", "--store", dir, "--kubernetes", "v1.37.2", "--providers", "green,flaky")
		if res.code != 1 {
			t.Errorf("exit %d, want 1", res.code)
		}
		for _, want := range []string{"PROVIDER", "green", "flaky", "passed 3 and failed 1 of 4 runs", "1 of 2 provider(s) green"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("table lacks %q:\n%s", want, res.stdout)
			}
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"lkg", "check", "--store", dir, "--kubernetes", "latest"}, "--kubernetes"},
			{[]string{"lkg", "check", "--store", dir}, "kubernetes"},
			{[]string{"lkg", "show", "--store", dir, "--output", "xml"}, "--output"},
			{[]string{"lkg", "show", "--store", filepath.Join(dir, "nope")}, "--store"},
			{[]string{"lkg", "show", "--store", "ftp://x"}, "--store"},
			{[]string{"publish", "--store", dir, filepath.Join(repoRoot(), "reports", "prow", "testdata", "invalid-no-junit")}, "no junit file"},
		} {
			res := runHarness(t, nil, tt.args...)
			if res.code != 2 {
				t.Errorf("%v: exit %d, want 2; stderr %s", tt.args, res.code, res.stderr)
			}
			oneLine(t, res.stderr)
			if !strings.Contains(res.stderr, tt.want) {
				t.Errorf("%v: stderr %q does not name %s", tt.args, res.stderr, tt.want)
			}
		}
		if res := runHarness(t, nil, "lkg", "show", "--store", dir, "--provider", "absent"); res.code != 1 {
			t.Errorf("show of a provider with no runs: exit %d, want 1", res.code)
		}
	})
}

// publish puts run directories into bucket stores (gs:// in a GCS emulator,
// s3:// in an S3 emulator, both started by the test), and lkg reads them
// back from there.
func TestPublishToBuckets(t *testing.T) {
	for _, tt := range []struct {
		scheme string
		open   func(t *testing.T) string
	}{
		{"gs", func(t *testing.T) string { return storetest.FakeGCS(t, "ccm-results") + "/ci" }},
		{"s3", func(t *testing.T) string { return storetest.FakeS3(t, "ccm-results", "ci") }},
	} {
		t.Run(tt.scheme, func(t *testing.T) {
			url := tt.open(t)
			for i := 0; i < 3; i++ {
				run := t.TempDir()
				rundirtest.WriteRunDir(t, run, rundirtest.Run{
					Provider: "reference", KubernetesVersion: "v1.37.2", KubernetesCommit: "abc", CCMDigest: "sha256:ref",
					Started: time.Now().Add(-time.Duration(3-i) * time.Hour).Truncate(time.Second),
					Specs:   []rundirtest.Spec{{Suite: "nodeaddress", Text: "initializes nodes", Labels: []string{"ReleaseBlocking"}}},
				})
				res := runHarness(t, nil, "publish", "--store", url, run)
				if res.code != 0 {
					t.Fatalf("publish: exit %d: %s", res.code, res.stderr)
				}
				if where := tt.scheme + "://ccm-results/ci/logs/ccm-conformance-reference/"; !strings.Contains(res.stdout, where) {
					t.Errorf("publish does not say where (%s): %s", where, res.stdout)
				}
			}
			res := runHarness(t, nil, "lkg", "check", "--store", url, "--kubernetes", "v1.37.2")
			if res.code != 0 {
				t.Errorf("lkg check on %s://: exit %d\n%s%s", tt.scheme, res.code, res.stdout, res.stderr)
			}
			if !strings.Contains(res.stdout, "reference") {
				t.Errorf("lkg check does not name the provider:\n%s", res.stdout)
			}
		})
	}
}

// A run narrowed by a label filter is no last-known-good evidence, however
// often it passed: lkg check says the pair is partial and why, and exits 1.
func TestLKGCheckRefusesLabelFilteredRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	st, err := store.Open(context.Background(), dir, store.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().Truncate(time.Second)
	for i := 0; i < 3; i++ {
		rundirtest.Publish(t, st, rundirtest.Run{
			Provider: "narrowed", KubernetesVersion: "v1.37.2", KubernetesCommit: "0123456789abcdef", CCMDigest: "sha256:narrowed",
			Started: now.Add(-time.Duration(3-i) * time.Hour), LabelFilter: "NodeLifecycle",
			Capabilities: []string{"InstancesV2", "NodeLifecycle"},
			Specs: []rundirtest.Spec{
				{Suite: "nodelifecycle", Text: "deletes the Node of a deleted instance", Labels: []string{"NodeLifecycle", "ReleaseBlocking"}},
				// Left out by the filter: skipped without a message.
				{Suite: "nodeaddress", Text: "initializes nodes", Labels: []string{"InstancesV2", "ReleaseBlocking"}, State: types.SpecStateSkipped},
			},
		})
	}

	res := runHarness(t, nil, "lkg", "check", "--store", dir, "--kubernetes", "v1.37.2", "--providers", "narrowed")
	if res.code != 1 {
		t.Errorf("exit %d, want 1: a label-filtered run is no LKG evidence\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, want := range []string{"partial", `narrowed by the label filter "NodeLifecycle"`, "did not run: [nodeaddress] initializes nodes", "0 of 1 provider(s) green"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("lkg check does not say %q:\n%s", want, res.stdout)
		}
	}
	if !strings.Contains(res.stderr, "narrowed (partial)") {
		t.Errorf("stderr does not name the provider as partial:\n%s", res.stderr)
	}

	res = runHarness(t, nil, "lkg", "check", "--store", dir, "--kubernetes", "v1.37.2", "--providers", "narrowed", "--output", "json")
	var c checkJSON
	if err := json.Unmarshal([]byte(res.stdout), &c); err != nil {
		t.Fatalf("%v:\n%s", err, res.stdout)
	}
	if c.OK || len(c.Providers) != 1 || c.Providers[0].Status != "partial" || c.Providers[0].LKG != nil {
		t.Errorf("json %+v, want the provider partial without an LKG", c)
	}

	res = runHarness(t, nil, "lkg", "show", "--store", dir)
	if res.code != 0 || !strings.Contains(res.stdout, "partial") || !strings.Contains(res.stdout, `label filter "NodeLifecycle"`) {
		t.Errorf("lkg show (exit %d) does not show the pair as partial with its reason:\n%s%s", res.code, res.stdout, res.stderr)
	}
}
