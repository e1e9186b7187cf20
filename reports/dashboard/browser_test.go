package dashboard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/checkout"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir"
)

// chromiumPath finds Debian's chromium: $CHROMIUM, else chromium on PATH.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactsDir is where the test leaves what a person should look at:
// $ARTIFACTS/dashboard when ARTIFACTS is set (as under Prow), else
// _artifacts/dashboard at the repository's root.
func artifactsDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv(rundir.EnvArtifacts)
	if base == "" {
		base = filepath.Join(checkout.MustRoot(), runner.DefaultArtifactsDir)
	}
	dir := filepath.Join(base, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openChromium starts a headless Chromium for the test (skipped under
// -short, or where chromium is not installed outside CI) and returns its
// context; it closes when the test ends.
func openChromium(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a headless Chromium")
	}
	browser := chromiumPath()
	if browser == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it (apt-get install chromium)")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium puts its singleton socket in a directory of $TMPDIR
		// (org.chromium.Chromium.*) that it leaves behind.
		chromedp.Env("TMPDIR="+t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}

// cellState is one matrix cell as the browser shows it.
type cellState struct {
	Provider   string `json:"provider"`
	Version    string `json:"version"`
	State      string `json:"state"`
	LKG        bool   `json:"lkg"`
	Text       string `json:"text"`
	Background string `json:"background"`
}

// The dashboard of a seeded store, opened in a real headless Chromium,
// shows each provider's state for each Kubernetes version (pass streak,
// flaky pair, stale provider, untested versions), marks the LKG pairs,
// lists the corrupt record, loads its badges and charts, and shows a
// failure message full of markup as text without running it.
func TestIntegrationDashboardInChromium(t *testing.T) {
	bctx := openChromium(t)
	s, m, out := generate(t)

	index := "file://" + filepath.Join(out, IndexPage)
	if err := chromedp.Do(bctx, chromedp.Navigate(index), chromedp.WaitVisible("#matrix")); err != nil {
		t.Fatalf("opening %s: %v", index, err)
	}
	cells, err := chromedp.Run(bctx, chromedp.Evaluate[[]cellState](`Array.from(document.querySelectorAll('#matrix td.cell')).map(td => ({
		provider: td.dataset.provider, version: td.dataset.version, state: td.dataset.state,
		lkg: td.querySelector('.lkg') !== null, text: td.innerText,
		background: getComputedStyle(td).backgroundColor}))`))
	if err != nil {
		t.Fatal(err)
	}
	backgrounds := map[string]string{}
	seen := 0
	for _, c := range cells {
		want := wantCells[c.Provider][c.Version]
		got := c.State
		if c.LKG {
			got += "*"
		}
		if got != want {
			t.Errorf("cell %s %s shows %s, want %s", c.Provider, c.Version, got, want)
		}
		if !strings.HasPrefix(c.Text, c.State) {
			t.Errorf("cell %s %s reads %q, want it to start with %q", c.Provider, c.Version, c.Text, c.State)
		}
		if c.LKG && !strings.Contains(c.Text, "LKG") {
			t.Errorf("cell %s %s is the LKG pair but does not say so: %q", c.Provider, c.Version, c.Text)
		}
		if b, ok := backgrounds[c.State]; ok && b != c.Background {
			t.Errorf("state %s has two colours: %s and %s", c.State, b, c.Background)
		}
		backgrounds[c.State] = c.Background
		seen++
	}
	if want := len(wantCells) * 2; seen != want {
		t.Errorf("the matrix has %d cells, want %d", seen, want)
	}
	colours := map[string]string{}
	for state, b := range backgrounds {
		if other, ok := colours[b]; ok {
			t.Errorf("states %s and %s share the colour %s", state, other, b)
		}
		colours[b] = state
	}

	problems, err := chromedp.Run(bctx, chromedp.Text("#problems + p + ul.problems"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(problems, s.corrupt) {
		t.Errorf("the skipped records do not name %s: %q", s.corrupt, problems)
	}
	badges, err := chromedp.Run(bctx, chromedp.Evaluate[[]int](`Array.from(document.querySelectorAll('img[data-provider]')).map(i => i.complete ? i.naturalWidth : -1)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(badges) != len(m.Rows) {
		t.Errorf("%d badges shown, want %d", len(badges), len(m.Rows))
	}
	for i, w := range badges {
		if w <= 0 {
			t.Errorf("badge %d did not load (width %d)", i, w)
		}
	}
	points := 0
	for _, c := range m.Charts {
		for _, se := range c.Series {
			points += len(se.Points)
		}
	}
	circles, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('.chart svg circle').length`))
	if err != nil {
		t.Fatal(err)
	}
	if circles != points || points == 0 {
		t.Errorf("the charts draw %d points, want %d", circles, points)
	}
	dir := artifactsDir(t)
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	indexShot := filepath.Join(dir, "index.png")
	if err := os.WriteFile(indexShot, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the dashboard: %s", indexShot)

	// The run whose failure message holds a <script> element.
	var runPage string
	for _, r := range m.Runs {
		if r.Build == s.xssRun {
			runPage = r.Page
		}
	}
	url := "file://" + filepath.Join(out, filepath.FromSlash(runPage))
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible("#failing")); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	msg, err := chromedp.Run(bctx, chromedp.Text("#failing .message"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "<script>window.pwned = true</script>") || !strings.Contains(msg, "<b>bold</b>") {
		t.Errorf("the failure message is not shown as text: %q", msg)
	}
	pill, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('#summary .pill').className`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pill, "s-red") {
		t.Errorf("the failed run's result is shown as %q, want red", pill)
	}
	ran, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.pwned === true || document.querySelector('#failing b') !== null`))
	if err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("markup from a failure message became part of the page")
	}
	shot, err = chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	runShot := filepath.Join(dir, "run-failing.png")
	if err := os.WriteFile(runShot, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of a failing run: %s", runShot)
}
