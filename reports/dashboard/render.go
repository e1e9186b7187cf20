package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

//go:embed templates
var templateFS embed.FS

// Page files of a dashboard, relative to its root.
const (
	IndexPage = "index.html"
)

// page is what one page's template gets.
type page struct {
	*Model
	// Root leads from the page back to the dashboard's root ("", "../").
	Root string
	// Heading of the page; the dashboard's title for the index.
	Heading string
	Row     *Row
	Run     *RunPage
}

var ansiEscapes = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"duration": func(a, b time.Time) string {
		if a.IsZero() || b.IsZero() || b.Before(a) {
			return "-"
		}
		return b.Sub(a).Round(time.Second).String()
	},
	"short": func(s string, n int) string {
		if s == "" {
			return "-"
		}
		if len(s) > n {
			return s[:n] + "…"
		}
		return s
	},
	"seconds": FormatSeconds,
	"secondsf": func(s float64) string {
		return fmt.Sprintf("%.1fs", s)
	},
	// plain removes the terminal colour codes ginkgo puts in messages.
	"plain":     func(s string) string { return ansiEscapes.ReplaceAllString(s, "") },
	"word":      func(s lkg.Status) string { return statusWords[s] },
	"join":      strings.Join,
	"hasPrefix": strings.HasPrefix,
	"meta": func(m map[string]any, key string) string {
		s, _ := m[key].(string)
		return s
	},
	// keys names the metadata keys a template reads by their reports/prow
	// constants: (keys).CCMImage.
	"keys": func() metadataKeys {
		return metadataKeys{prow.MetaCCMImage, prow.MetaReleaseCheck, prow.MetaReleaseCheckImage}
	},
	"latencyTitle": func(name string) string {
		if t := latencyTitles[name]; t != "" {
			return t
		}
		return name
	},
}

type metadataKeys struct{ CCMImage, ReleaseCheck, ReleaseCheckImage string }

type templates struct {
	index, provider, run, badge *template.Template
}

func parseTemplates() (*templates, error) {
	parse := func(files ...string) (*template.Template, error) {
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = "templates/" + f
		}
		t, err := template.New(files[0]).Funcs(funcs).ParseFS(templateFS, paths...)
		if err != nil {
			return nil, fmt.Errorf("dashboard templates: %w", err)
		}
		return t, nil
	}
	var t templates
	var err error
	if t.index, err = parse("index.html", "base.html"); err != nil {
		return nil, err
	}
	if t.provider, err = parse("provider.html", "base.html"); err != nil {
		return nil, err
	}
	if t.run, err = parse("run.html", "base.html"); err != nil {
		return nil, err
	}
	if t.badge, err = parse("badge.svg"); err != nil {
		return nil, err
	}
	return &t, nil
}

// Write renders the dashboard into dir: index.html, a page per provider
// under providers/, a page per run under runs/<job>/, and a badge per
// provider under badges/. Files of an earlier dashboard in dir that this
// one does not write are left alone.
func (m *Model) Write(dir string) error {
	t, err := parseTemplates()
	if err != nil {
		return err
	}
	render := func(tmpl *template.Template, rel string, data any) error {
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, data); err != nil {
			return fmt.Errorf("rendering %s: %w", rel, err)
		}
		return writeFile(filepath.Join(dir, filepath.FromSlash(rel)), buf.Bytes())
	}
	if err := render(t.index, IndexPage, page{Model: m, Heading: m.Title}); err != nil {
		return err
	}
	for _, row := range m.Rows {
		if err := render(t.provider, row.Page, page{Model: m, Root: "../", Heading: row.Provider, Row: row}); err != nil {
			return err
		}
		if err := render(t.badge, row.Badge.Path, row.Badge); err != nil {
			return err
		}
		for _, r := range row.Runs {
			p := page{Model: m, Root: "../../", Heading: row.Provider + " build " + r.ID, Row: row, Run: r}
			if err := render(t.run, r.Page, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFile writes data to path through a temporary file, so that a web
// server never serves half a page.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
