package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

func TestParseVersions(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string // substring of the error; "" for none
	}{
		{in: "v1.37.2", want: []string{"v1.37.2"}},
		{in: "v1.35.4,v1.36.3,v1.37.2", want: []string{"v1.35.4", "v1.36.3", "v1.37.2"}},
		{in: " v1.37.2 , v1.36.3", want: []string{"v1.37.2", "v1.36.3"}}, // order kept
		{in: "", wantErr: "want a comma-separated list"},
		{in: "  ", wantErr: "want a comma-separated list"},
		{in: "v1.36.3,,v1.37.2", wantErr: "an empty version"},
		{in: "v1.37.2,", wantErr: "an empty version"},
		{in: "1.37.2", wantErr: `Kubernetes version "1.37.2": want a release such as`},
		{in: "v1.37", wantErr: "want a release such as"},
		{in: "v1.38.0-rc.0,v1.37.2", want: []string{"v1.38.0-rc.0", "v1.37.2"}},
		{in: "v1.37.x", wantErr: "want a release such as"},
		{in: "v1.37.2 v1.36.3", wantErr: "want a release such as"},
		{in: "v1.37.2,v1.36.3,v1.37.2", wantErr: "v1.37.2 is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseVersions(tt.in)
			if tt.wantErr == "" {
				if err != nil || !slices.Equal(got, tt.want) {
					t.Errorf("parseVersions(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("parseVersions(%q) error %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "--kubernetes ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q does not name --kubernetes in one line", err)
			}
		})
	}
}

// The matrix runs the versions in order, prints a row per cell and the
// final table, publishes finished cells, and turns the cells into an exit
// code.
func TestMatrixRun(t *testing.T) {
	pass := cellResult{Passed: 5, Skipped: 2, Duration: 61 * time.Second}
	fail := cellResult{Code: 1, Passed: 4, Failed: 1, Skipped: 2, Duration: 70 * time.Second, Err: errors.New("run exited 1")}
	harness := cellResult{Code: 2, Err: errors.New("run exited 2")}
	tests := []struct {
		name      string
		versions  []string
		cells     map[string]cellResult
		interrupt string // cancel the context while this version runs
		publish   error  // the publish result; nil publishes
		noStore   bool
		wantCode  int
		wantRan   []string
		wantRows  []string // substrings of the final table's rows, in order
		wantErr   string
	}{
		{
			name: "all pass", versions: []string{"v1.36.3", "v1.37.2"},
			cells:    map[string]cellResult{"v1.36.3": pass, "v1.37.2": pass},
			wantCode: 0, wantRan: []string{"v1.36.3", "v1.37.2"},
			wantRows: []string{"v1.36.3 passed 5 0 2 1m1s store/v1.36.3", "v1.37.2 passed"},
		},
		{
			name: "a failed spec", versions: []string{"v1.35.4", "v1.36.3", "v1.37.2"},
			cells:    map[string]cellResult{"v1.35.4": pass, "v1.36.3": fail, "v1.37.2": pass},
			wantCode: 1, wantRan: []string{"v1.35.4", "v1.36.3", "v1.37.2"},
			wantRows: []string{"v1.35.4 passed", "v1.36.3 failed 4 1 2 1m10s run exited 1", "v1.37.2 passed"},
			wantErr:  "matrix: v1.36.3 failed",
		},
		{
			name: "a harness error outweighs a failed spec", versions: []string{"v1.36.3", "v1.37.2"},
			cells:    map[string]cellResult{"v1.36.3": fail, "v1.37.2": harness},
			wantCode: 2, wantRan: []string{"v1.36.3", "v1.37.2"},
			wantRows: []string{"v1.36.3 failed", "v1.37.2 error"},
			wantErr:  "matrix: v1.36.3 failed; v1.37.2 error",
		},
		{
			name: "a failed publish", versions: []string{"v1.37.2"},
			cells: map[string]cellResult{"v1.37.2": pass}, publish: errors.New("bucket gone"),
			wantCode: 2, wantRan: []string{"v1.37.2"},
			wantRows: []string{"v1.37.2 error 5 0 2 1m1s publishing " + filepath.Join("art", "v1.37.2") + ": bucket gone"},
			wantErr:  "v1.37.2 error",
		},
		{
			name: "no store publishes nothing", versions: []string{"v1.37.2"}, noStore: true,
			cells:    map[string]cellResult{"v1.37.2": pass},
			wantCode: 0, wantRan: []string{"v1.37.2"},
			wantRows: []string{"v1.37.2 passed 5 0 2 1m1s"},
		},
		{
			name: "interrupted", versions: []string{"v1.35.4", "v1.36.3", "v1.37.2"},
			cells:     map[string]cellResult{"v1.35.4": pass, "v1.36.3": {Passed: 1, Duration: 3 * time.Second}, "v1.37.2": pass},
			interrupt: "v1.36.3",
			wantCode:  2, wantRan: []string{"v1.35.4", "v1.36.3"},
			wantRows: []string{"v1.35.4 passed", "v1.36.3 interrupted 1 0 0 3s"},
			wantErr:  "matrix: v1.36.3 interrupted; not run: v1.37.2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ran, published []string
			var out bytes.Buffer
			m := &matrix{
				versions:  tt.versions,
				artifacts: "art",
				out:       &out,
				run: func(ctx context.Context, v, dir string) cellResult {
					if dir != filepath.Join("art", v) {
						t.Errorf("cell %s runs in %s", v, dir)
					}
					ran = append(ran, v)
					if v == tt.interrupt {
						cancel()
					}
					return tt.cells[v]
				},
			}
			if !tt.noStore {
				m.publish = func(_ context.Context, dir string) (string, error) {
					published = append(published, filepath.Base(dir))
					return "store/" + filepath.Base(dir), tt.publish
				}
			}
			code, err := m.Run(ctx)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (err %v)", code, tt.wantCode, err)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			if !slices.Equal(ran, tt.wantRan) {
				t.Errorf("ran %q, want %q", ran, tt.wantRan)
			}
			wantPublished := tt.wantRan
			if tt.interrupt != "" {
				wantPublished = slices.DeleteFunc(slices.Clone(tt.wantRan), func(v string) bool { return v == tt.interrupt })
			}
			if tt.noStore {
				wantPublished = nil
			}
			if !slices.Equal(published, wantPublished) {
				t.Errorf("published %q, want %q", published, wantPublished)
			}
			// Each row is printed as its cell finishes, then again in
			// the final table.
			live, final, ok := strings.Cut(out.String(), "\nmatrix:\n")
			if !ok {
				t.Fatalf("no final table:\n%s", out.String())
			}
			for _, table := range []string{live, final} {
				if !strings.HasPrefix(table, "KUBERNETES   STATUS        PASSED  FAILED  SKIPPED      TIME  NOTE") {
					t.Errorf("table has no header:\n%s", table)
				}
				lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")[1:]
				if len(lines) != len(tt.wantRan) {
					t.Errorf("table has %d rows, want %d:\n%s", len(lines), len(tt.wantRan), table)
					continue
				}
				for i, want := range tt.wantRows {
					got := strings.Join(strings.Fields(lines[i]), " ")
					if got != want && !strings.HasPrefix(got, want+" ") {
						t.Errorf("row %d is %q, want it to start with %q", i, got, want)
					}
					if tt.noStore && len(strings.Fields(lines[i])) != 6 {
						t.Errorf("row %d has a note without a store: %q", i, lines[i])
					}
				}
			}
		})
	}
}

// A cell is counted from its run's specs.json, as the run's summary line
// counts: suite-level nodes and the specs the label filter left out are
// not counted, a spec an interrupt cut short is a failure.
func TestCountSpecs(t *testing.T) {
	spec := func(state, reason string) string {
		return fmt.Sprintf(`{"suite":"s","text":"t","labels":[],"state":%q,"skipReason":%q}`, state, reason)
	}
	tests := []struct {
		name, content           string
		passed, failed, skipped int
	}{
		{"a finished run", `{"version":1,"provider":"p","specs":[` + strings.Join([]string{
			spec("passed", ""), spec("passed", ""), spec("failed", ""), spec("interrupted", ""),
			spec("skipped", `profile "p" does not declare capability IPv6`), spec("skipped", ""),
			`{"suite":"","text":"[BeforeSuite]","labels":[],"node":"BeforeSuite","state":"passed"}`,
		}, ",") + `]}`, 2, 2, 1},
		{"a harness error before the specs", `{"version":1,"provider":"p","specs":[],"harnessError":"boom"}`, 0, 0, 0},
		{"no specs.json", "", 0, 0, 0},
		{"a corrupt specs.json", "{", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.content != "" {
				path := filepath.Join(dir, filepath.FromSlash(prow.SpecsFile))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var c cellResult
			countSpecs(dir, &c)
			if c.Passed != tt.passed || c.Failed != tt.failed || c.Skipped != tt.skipped {
				t.Errorf("counts %d/%d/%d, want %d/%d/%d", c.Passed, c.Failed, c.Skipped, tt.passed, tt.failed, tt.skipped)
			}
		})
	}
}

// Bad input is one line naming the flag, exit 2, and runs nothing.
func TestMatrixCommandBadInput(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(profile, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"empty list", []string{"--provider", profile, "--kubernetes", ""}, "--kubernetes"},
		{"malformed", []string{"--provider", profile, "--kubernetes", "v1.37"}, `Kubernetes version "v1.37": want a release such as`},
		{"duplicate", []string{"--provider", profile, "--kubernetes", "v1.37.2,v1.37.2"}, "listed twice"},
		{"no list", []string{"--provider", profile}, "kubernetes"},
		{"missing profile", []string{"--provider", profile + ".absent", "--kubernetes", "v1.37.2"}, "--provider"},
		{"bad store", []string{"--provider", profile, "--kubernetes", "v1.37.2", "--store", "ftp://x"}, "--store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"matrix", "--artifacts", t.TempDir()}, tt.args...)
			if code := Main(args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2; stderr %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr %q, want one line containing %q", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
