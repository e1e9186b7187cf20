package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// matrixStore is a results store made on this project's machines by three
// `ccm-conformance matrix --kubernetes v1.35.4,v1.36.3,v1.37.2` runs of
// the reference provider (docs/lkg.md shows them), kept without the
// component logs, JUnit files and build logs, which no page reads, and
// with ccm-env (the names of the CCM's environment variables, most of
// them the build machine's own) cut to the ones the profile sets.
const matrixStore = "testdata/matrix-store"

// matrixVersions are its columns, newest first.
var matrixVersions = []string{"v1.37.2", "v1.36.3", "v1.35.4"}

// cellBox is a matrix cell as Chromium lays it out, relative to the
// matrix table, in CSS pixels.
type cellBox struct {
	Version    string  `json:"version"`
	State      string  `json:"state"`
	LKG        bool    `json:"lkg"`
	Background string  `json:"background"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
	Width      float64 `json:"width"`
	Height     float64 `json:"height"`
}

// The dashboard of the three-version store that `matrix` made, in a real
// headless Chromium: one row for the reference provider, a column per
// Kubernetes version, each green, the newest marked last-known-good. The
// screenshot of the matrix shows each cell in its state's colour where the
// layout puts it.
func TestIntegrationMatrixStoreInChromium(t *testing.T) {
	bctx := openChromium(t)
	ctx := context.Background()
	st, err := store.Open(ctx, matrixStore)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snap, err := st.ReadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Problems) > 0 {
		t.Fatalf("%s has unreadable records: %+v", matrixStore, snap.Problems)
	}
	// Judge as of an hour after the last run, so that nothing is stale.
	var last time.Time
	for _, r := range snap.Runs {
		if r.Finished.After(last) {
			last = r.Finished
		}
	}
	out := t.TempDir()
	m, err := Generate(ctx, st, out, Options{LKG: lkg.Config{Now: func() time.Time { return last.Add(time.Hour) }}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Versions, matrixVersions) {
		t.Fatalf("the matrix's columns are %v, want %v", m.Versions, matrixVersions)
	}

	index := "file://" + filepath.Join(out, IndexPage)
	if err := chromedp.Do(bctx, chromedp.Navigate(index), chromedp.WaitVisible("#matrix")); err != nil {
		t.Fatalf("opening %s: %v", index, err)
	}
	headers, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#matrix thead th[data-version]')).map(th => th.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(headers, matrixVersions) {
		t.Errorf("the page's version columns read %v, want %v", headers, matrixVersions)
	}
	cells, err := chromedp.Run(bctx, chromedp.Evaluate[[]cellBox](`(() => {
		const table = document.querySelector('#matrix').getBoundingClientRect();
		return Array.from(document.querySelectorAll('#matrix td.cell')).map(td => {
			const r = td.getBoundingClientRect();
			return {version: td.dataset.version, state: td.dataset.state, lkg: td.dataset.lkg === 'true',
				background: getComputedStyle(td).backgroundColor,
				x: r.left - table.left, y: r.top - table.top, width: r.width, height: r.height};
		});
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != len(matrixVersions) {
		t.Fatalf("the matrix has %d cells, want %d (one provider, three versions)", len(cells), len(matrixVersions))
	}
	shot, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.ID("matrix")))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artifactsDir(t), "matrix-three-versions.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the matrix: %s", path)
	img, _, err := image.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	for _, c := range cells {
		wantLKG := c.Version == matrixVersions[0]
		if c.State != string(lkg.StatusGreen) || c.LKG != wantLKG {
			t.Errorf("cell %s is %s (LKG %v), want green (LKG %v)", c.Version, c.State, c.LKG, wantLKG)
		}
		// A few pixels inside the cell's top left corner is padding: the
		// cell's own background, as the screenshot shows it.
		got := rgbAt(img, int(c.X)+3, int(c.Y)+3)
		if got != c.Background {
			t.Errorf("cell %s: the screenshot shows %s at its corner, want its background %s", c.Version, got, c.Background)
		}
	}
	if cells[0].Background == "rgba(0, 0, 0, 0)" {
		t.Error("green cells have no background colour")
	}
}

// rgbAt is the colour of a pixel as CSS writes a computed colour.
func rgbAt(img image.Image, x, y int) string {
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
	return fmt.Sprintf("rgb(%d, %d, %d)", r>>8, g>>8, bl>>8)
}
