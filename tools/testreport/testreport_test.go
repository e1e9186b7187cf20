package testreport

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// testdata/mixed.json is what `go test -json -timeout 3s ./...` printed for
// a module with a passing, a slow (1.1 s), a skipped and a failing test
// (whose subtest failed), a package that does not build, and a package
// whose test hangs until the time-out.
func TestFilter(t *testing.T) {
	in, err := os.ReadFile("testdata/mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		opts         Options
		in           string
		want         []string // in this order
		wantAbsent   []string
		wantCounts   Counts
		wantFailPkgs []string
	}{
		{
			name: "mixed outcomes",
			opts: Options{Slow: time.Second},
			in:   string(in),
			want: []string{
				"b/b_test.go:3:32: undefined: undefined", // the build failure, whole
				"FAIL\ttrdemo/b [build failed]",
				"--- PASS: trdemo.TestSlow (1.1s)",
				"--- SKIP: trdemo.TestSkip: a_test.go:5: needs docker: not answering",
				"a_test.go:6: boom: expected 1, saw 2", // a subtest's failure, under its parent
				"--- FAIL: TestFail (0.00s)",
				"FAIL\ttrdemo\t",
				"--- UNFINISHED: TestHangs",
				"c_test.go:3: waiting for the cluster",
				"panic: test timed out after 3s",
				"slowest tests:\n       1.1s  trdemo.TestSlow\n\n", // tests under a second get no line
				"slowest packages:\n       3.0s  trdemo/c\n       1.1s  trdemo\n",
			},
			wantAbsent:   []string{"quiet", "--- PASS: trdemo.TestPass", "\nPASS\n"},
			wantCounts:   Counts{Passed: 2, Failed: 1, Skipped: 1},
			wantFailPkgs: []string{"trdemo/b", "trdemo", "trdemo/c"},
		},
		{
			name:         "a slow test under the default threshold gets no line of its own",
			in:           string(in),
			wantAbsent:   []string{"--- PASS: trdemo.TestSlow"},
			wantCounts:   Counts{Passed: 2, Failed: 1, Skipped: 1},
			wantFailPkgs: []string{"trdemo/b", "trdemo", "trdemo/c"},
		},
		{
			name: "lines that are not JSON pass through",
			in:   "# github.com/x/y\nvet: y.go:1: something\n" + `{"Action":"output","Package":"github.com/ccm-conformance/ccm-conformance/suites","Output":"ok  \tgithub.com/ccm-conformance/ccm-conformance/suites\t0.2s\n"}` + "\n" + `{"Action":"pass","Package":"github.com/ccm-conformance/ccm-conformance/suites","Elapsed":0.2}` + "\n",
			want: []string{"# github.com/x/y\nvet: y.go:1: something\n", "ok  \tgithub.com/ccm-conformance/ccm-conformance/suites\t0.2s\n"},
			// No test and nothing slow: no tables.
			wantAbsent: []string{"slowest"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			c, err := Filter(strings.NewReader(tt.in), &out, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := out.String()
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("output lacks %q after the lines before it; output:\n%s", w, got)
					break
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tt.wantAbsent {
				if strings.Contains(got, w) {
					t.Errorf("output has %q; output:\n%s", w, got)
				}
			}
			if c.Passed != tt.wantCounts.Passed || c.Failed != tt.wantCounts.Failed || c.Skipped != tt.wantCounts.Skipped {
				t.Errorf("counts %+v, want %+v", c, tt.wantCounts)
			}
			if !slices.Equal(c.FailedPackages, tt.wantFailPkgs) {
				t.Errorf("failed packages %q, want %q", c.FailedPackages, tt.wantFailPkgs)
			}
		})
	}
}

func TestFilterRejectsAnOverlongLine(t *testing.T) {
	in := `{"Action":"output","Output":"` + strings.Repeat("x", 17*1024*1024) + `"}`
	if _, err := Filter(strings.NewReader(in), &strings.Builder{}, Options{}); err == nil || !strings.Contains(err.Error(), "go test -json") {
		t.Errorf("error %v, want one naming the input", err)
	}
}
