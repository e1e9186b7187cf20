package dashboard

import (
	"context"
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir/rundirtest"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The matrix shows what `lkg check` says for each provider and version,
// and marks each provider's LKG pair.
func TestMatrixMatchesTheRules(t *testing.T) {
	_, m, _ := generate(t)
	if got, want := strings.Join(m.Versions, " "), "v1.37.2 v1.36.5"; got != want {
		t.Errorf("columns %q, want %q", got, want)
	}
	if len(m.Rows) != len(wantCells) {
		t.Errorf("%d rows, want %d", len(m.Rows), len(wantCells))
	}
	for _, row := range m.Rows {
		want, ok := wantCells[row.Provider]
		if !ok {
			t.Errorf("unexpected provider %q", row.Provider)
			continue
		}
		for _, c := range row.Cells {
			got := string(c.Status)
			if c.IsLKG {
				got += "*"
			}
			if got != want[c.Version] {
				t.Errorf("%s %s: %s (%s), want %s", row.Provider, c.Version, got, c.Reason, want[c.Version])
			}
		}
	}
}

// A truncated record is a problem on the page, and the rest is read.
func TestCorruptRecordIsAProblem(t *testing.T) {
	s, m, out := generate(t)
	if len(m.Problems) != 1 || m.Problems[0].Path != s.corrupt {
		t.Fatalf("problems %v, want one for %s", m.Problems, s.corrupt)
	}
	index, err := os.ReadFile(filepath.Join(out, IndexPage))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(index), s.corrupt) {
		t.Errorf("index.html does not name the corrupt record %s", s.corrupt)
	}
	if got := len(m.Runs); got != 13 {
		t.Errorf("%d runs, want the 13 readable ones", got)
	}
}

// Text from results is escaped wherever it appears, and terminal colour
// codes are dropped.
func TestResultsAreEscaped(t *testing.T) {
	s, m, out := generate(t)
	var page string
	for _, r := range m.Runs {
		if r.Build == s.xssRun {
			page = r.Page
		}
	}
	if page == "" {
		t.Fatal("no page for the run with the markup in its message")
	}
	data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	for _, bad := range []string{"<script>window.pwned", "<b>bold</b>", "\x1b"} {
		if strings.Contains(html, bad) {
			t.Errorf("%s contains %q unescaped", page, bad)
		}
	}
	if !strings.Contains(html, "&lt;script&gt;window.pwned = true&lt;/script&gt;") {
		t.Errorf("%s does not show the message's markup as text", page)
	}
	// The failing spec's text also reaches the provider page and the
	// matrix's cell title, escaped there too.
	for _, name := range []string{IndexPage, "providers/flaky.html"} {
		data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "<script>") {
			t.Errorf("%s contains a <script> element", name)
		}
	}
}

// Every page and badge is written, and the pages need nothing from
// outside: no script, no stylesheet or image from another host.
func TestPagesAreSelfContained(t *testing.T) {
	_, m, out := generate(t)
	want := []string{IndexPage}
	for _, row := range m.Rows {
		want = append(want, row.Page, row.Badge.Path)
		for _, r := range row.Runs {
			want = append(want, r.Page)
		}
	}
	for _, name := range want {
		data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, bad := range []string{"<script", "http://", "https://", "<link"} {
			if strings.Contains(string(data), bad) && !(bad == "http://" && strings.Contains(string(data), `xmlns="http://www.w3.org/2000/svg"`)) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
	var charts []string
	for _, c := range m.Charts {
		charts = append(charts, c.Name)
	}
	if got, want := strings.Join(charts, " "), "load-balancer-ready node-initialized observation-lag-p99 setup"; got != want {
		t.Fatalf("charts %s, want %s", got, want)
	}
	lb := m.Charts[0]
	if len(lb.Series) != 4 {
		t.Errorf("load balancer chart has %d series, want one per provider", len(lb.Series))
	}
	for _, se := range lb.Series {
		for _, p := range se.Points {
			if p.X < float64(lb.Left) || p.X > float64(lb.Right) || p.Y < float64(lb.Top) || p.Y > float64(lb.Bottom) {
				t.Errorf("%s: point %+v outside the plot", se.Provider, p)
			}
		}
	}
}

// Badges are valid SVG, one per status, compared with golden files.
func TestBadges(t *testing.T) {
	tmpl, err := parseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		status lkg.Status
		pairs  []lkg.PairStatus
		stale  bool
	}{
		{"green", lkg.StatusGreen, []lkg.PairStatus{{Pair: lkg.Pair{KubernetesVersion: "v1.37.2"}, State: lkg.PairGreen}}, false},
		{"flaky", lkg.StatusFlaky, []lkg.PairStatus{{Pair: lkg.Pair{KubernetesVersion: "v1.37.2"}, State: lkg.PairFlaky}}, false},
		{"red", lkg.StatusRed, []lkg.PairStatus{{Pair: lkg.Pair{KubernetesVersion: "v1.36.5"}, State: lkg.PairRed}}, false},
		{"stale", lkg.StatusStale, []lkg.PairStatus{{Pair: lkg.Pair{KubernetesVersion: "v1.37.2"}, State: lkg.PairGreen}}, true},
		{"untested", lkg.StatusUntested, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := lkg.ProviderStatus{Provider: "p<&>", LastRun: now, Stale: tt.stale, Pairs: tt.pairs}
			if len(tt.pairs) > 0 && tt.pairs[0].State == lkg.PairGreen {
				ps.LKG = &tt.pairs[0]
			}
			rep := &lkg.Report{GeneratedAt: now, StaleAfter: "72h0m0s", Streak: 3, Providers: []lkg.ProviderStatus{ps}}
			b := providerBadge(rep, &ps)
			if b.Status != tt.status {
				t.Errorf("status %s, want %s", b.Status, tt.status)
			}
			if b.Path != "badges/p_.svg" {
				t.Errorf("path %q", b.Path)
			}
			var buf strings.Builder
			if err := tmpl.badge.Execute(&buf, b); err != nil {
				t.Fatal(err)
			}
			if err := xml.Unmarshal([]byte(buf.String()), new(struct{})); err != nil {
				t.Errorf("badge is not XML: %v\n%s", err, buf.String())
			}
			golden(t, filepath.Join("testdata", "badge-"+tt.name+".svg"), buf.String())
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (go test -update rewrites it):\n%s", path, got)
	}
}

func TestSortVersions(t *testing.T) {
	tests := []struct{ in, want string }{
		{"v1.36.5 v1.37.2 v1.37.10", "v1.37.10 v1.37.2 v1.36.5"},
		{"v1.38.0-alpha.1 v1.37.2 v1.38.0", "v1.38.0 v1.38.0-alpha.1 v1.37.2"},
		{"weird v1.37.2 other", "v1.37.2 weird other"},
	}
	for _, tt := range tests {
		vs := strings.Fields(tt.in)
		sortVersions(vs)
		if got := strings.Join(vs, " "); got != tt.want {
			t.Errorf("sortVersions(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestFormatSeconds(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{{0, "0"}, {0.0025, "2.5ms"}, {0.0075, "7.5ms"}, {0.15, "150ms"}, {1.234, "1.2s"}, {30, "30s"}, {150, "2m30s"}}
	for _, tt := range tests {
		if got := FormatSeconds(tt.in); got != tt.want {
			t.Errorf("FormatSeconds(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSafeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ccm-conformance-aws", "ccm-conformance-aws"},
		{"../../etc", ".._.._etc"},
		{"..", "_.."},
		{"", "_"},
		{"a b/c", "a_b_c"},
	}
	for _, tt := range tests {
		if got := safeName(tt.in); got != tt.want {
			t.Errorf("safeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A provider whose runs were all narrowed by a label filter is partial in
// its cell, never green, and its run pages say why.
func TestPartialRunsArePartial(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Open(context.Background(), dir, store.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := 0; i < 3; i++ {
		rundirtest.Publish(t, st, rundirtest.Run{
			Provider: "narrowed", KubernetesVersion: "v1.37.2", KubernetesCommit: "4f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6", CCMDigest: "sha256:narrowed",
			Started: now.Add(-time.Duration(3-i) * time.Hour), LabelFilter: "LoadBalancer",
			Specs: []rundirtest.Spec{{Suite: "loadbalancer", Text: "gives a new Service an ingress", Labels: []string{"LoadBalancer", lkg.ReleaseBlockingLabel}}},
		})
	}
	out := t.TempDir()
	m, err := Generate(context.Background(), st, out, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 1 || len(m.Rows[0].Cells) != 1 {
		t.Fatalf("rows %+v, want one provider with one cell", m.Rows)
	}
	c := m.Rows[0].Cells[0]
	if c.Status != lkg.StatusPartial || c.IsLKG || !strings.Contains(c.Reason, `narrowed by the label filter "LoadBalancer"`) {
		t.Errorf("cell %s (%s), LKG %v: want partial, naming the label filter", c.Status, c.Reason, c.IsLKG)
	}
	index, err := os.ReadFile(filepath.Join(out, IndexPage))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(index), `data-state="partial"`) {
		t.Errorf("index.html does not show the cell as partial")
	}
	run, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(m.Rows[0].Runs[0].Page)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(run), "partial: narrowed by the label filter &#34;LoadBalancer&#34;") {
		t.Errorf("the run page does not give the verdict partial with its reason:\n%s", run)
	}
}

// A run stored with a release check (release-check --run-dir) shows its
// result next to the conformance result: green when it passed, red naming
// the failed items when not. A run without one has no such row.
func TestRunPageShowsTheReleaseCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Open(context.Background(), dir, store.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checks := []map[string]string{
		{"release-check": "pass (11 passed, 1 warned, 0 failed)", "release-check-image": "reference-ccm:v0.4.0"},
		{"release-check": "fail: RG1, RG3 (9 passed, 0 warned, 2 failed)", "release-check-image": "broken-ccm:v0.0.1"},
		nil,
	}
	for i, meta := range checks {
		rundirtest.Publish(t, st, rundirtest.Run{
			Provider: fmt.Sprintf("p%d", i), KubernetesVersion: "v1.37.2", KubernetesCommit: "4f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6", CCMDigest: "sha256:p",
			Started: now.Add(-time.Hour), Metadata: meta,
			Specs: []rundirtest.Spec{{Suite: "loadbalancer", Text: "gives a new Service an ingress", Labels: []string{"LoadBalancer", lkg.ReleaseBlockingLabel}}},
		})
	}
	out := t.TempDir()
	m, err := Generate(context.Background(), st, out, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"p0": {`<span id="release-check" class="pill s-green">pass (11 passed, 1 warned, 0 failed)</span>`, "reference-ccm:v0.4.0"},
		"p1": {`<span id="release-check" class="pill s-red">fail: RG1, RG3 (9 passed, 0 warned, 2 failed)</span>`, "broken-ccm:v0.0.1"},
		"p2": nil,
	}
	for _, r := range m.Rows {
		page, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(r.Runs[0].Page)))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want[r.Provider] {
			if !strings.Contains(string(page), w) {
				t.Errorf("%s's run page lacks %q", r.Provider, w)
			}
		}
		if want[r.Provider] == nil && strings.Contains(string(page), "Release check") {
			t.Errorf("%s's run page shows a release check the run does not have", r.Provider)
		}
	}
}
