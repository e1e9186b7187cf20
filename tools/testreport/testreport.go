// Package testreport turns the event stream of `go test -json` into a log a
// person reads: every package's ok or FAIL line as go test prints it, the
// whole output of each test that failed, one line per top-level test that
// was slow or skipped, and at the end where the time went (the slowest
// tests and packages) and a closing count. scripts/test.sh pipes `make
// test` through it, so that every CI log says which tests cost its minutes.
//
// Floor: the tools, programs that build and test the project. They stand on
// the leaves.
package testreport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Options say what to print besides failures and package lines.
type Options struct {
	// Slow is the elapsed time from which a passing top-level test gets a
	// line of its own. Default 10s.
	Slow time.Duration
	// Top is how many of the slowest tests and packages the summary lists.
	// Default 15.
	Top int
}

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events (Go 1.24+)
	Test       string
	Elapsed    float64 // seconds
	Output     string
}

// Counts are the top-level tests by outcome, and the packages that failed
// (a build failure, a test binary that crashed or timed out, a failed test).
type Counts struct {
	Passed, Failed, Skipped int
	FailedPackages          []string
}

type testKey struct{ pkg, name string }

type timing struct {
	name    string
	elapsed time.Duration
}

// Filter reads `go test -json` events from r until it ends and writes the
// report to w. Lines that are not JSON (go vet's, a build's) are copied as
// they are.
func Filter(r io.Reader, w io.Writer, o Options) (Counts, error) {
	if o.Slow == 0 {
		o.Slow = 10 * time.Second
	}
	if o.Top == 0 {
		o.Top = 15
	}
	var (
		c        Counts
		output   = map[testKey]*strings.Builder{} // running tests' output
		build    = map[string]*strings.Builder{}  // packages' build output
		tests    []timing
		packages []timing
		failed   = map[string]bool{}
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		switch {
		case e.Action == "build-output":
			b := build[e.ImportPath]
			if b == nil {
				b = &strings.Builder{}
				build[e.ImportPath] = b
			}
			b.WriteString(e.Output)
		case e.Action == "build-fail":
			if b := build[e.ImportPath]; b != nil {
				io.WriteString(w, b.String())
			}
		case e.Test == "":
			// The package's own lines: its ok or FAIL line, and what a
			// test binary printed outside any test (a panic, a time-out).
			switch e.Action {
			case "output":
				if !strings.HasPrefix(e.Output, "PASS\n") && !strings.HasPrefix(e.Output, "FAIL\n") {
					io.WriteString(w, e.Output)
				}
			case "pass", "fail":
				packages = append(packages, timing{e.Package, seconds(e.Elapsed)})
				if e.Action == "fail" && !failed[e.Package] {
					failed[e.Package] = true
					c.FailedPackages = append(c.FailedPackages, e.Package)
					// Tests still running when the binary died: their
					// output holds the reason.
					for k, b := range output {
						if k.pkg == e.Package {
							fmt.Fprintf(w, "--- UNFINISHED: %s (the test binary ended while it ran)\n%s", k.name, b.String())
							delete(output, k)
						}
					}
				}
			}
		default:
			// A subtest's output goes to its top-level test, whose
			// output is what a failure prints.
			top, _, sub := strings.Cut(e.Test, "/")
			k := testKey{e.Package, top}
			switch {
			case e.Action == "run" && !sub:
				output[k] = &strings.Builder{}
			case e.Action == "output":
				if b := output[k]; b != nil {
					b.WriteString(e.Output)
				}
			case sub:
				// A subtest's end: its parent's says what matters.
			case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
				b := output[k]
				delete(output, k)
				name := shortPackage(e.Package) + "." + e.Test
				d := seconds(e.Elapsed)
				tests = append(tests, timing{name, d})
				switch e.Action {
				case "fail":
					c.Failed++
					if b != nil {
						io.WriteString(w, b.String())
					}
				case "skip":
					c.Skipped++
					fmt.Fprintf(w, "--- SKIP: %s: %s\n", name, skipReason(b))
				case "pass":
					c.Passed++
					if d >= o.Slow {
						fmt.Fprintf(w, "--- PASS: %s (%s)\n", name, d.Round(100*time.Millisecond))
					}
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("reading go test -json: %w", err)
	}
	writeSlowest(w, "slowest tests", tests, o.Top)
	writeSlowest(w, "slowest packages", packages, o.Top)
	return c, nil
}

// skipReason is the message of a t.Skip: the last line of the test's
// output that go test did not write itself.
func skipReason(b *strings.Builder) string {
	reason := "(no reason given)"
	if b == nil {
		return reason
	}
	for _, l := range strings.Split(b.String(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") {
			reason = l
		}
	}
	return reason
}

func writeSlowest(w io.Writer, title string, ts []timing, n int) {
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].elapsed > ts[j].elapsed })
	if len(ts) > n {
		ts = ts[:n]
	}
	for len(ts) > 0 && ts[len(ts)-1].elapsed < time.Second {
		ts = ts[:len(ts)-1] // not worth a line
	}
	if len(ts) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	for _, t := range ts {
		fmt.Fprintf(w, "  %8.1fs  %s\n", t.elapsed.Seconds(), t.name)
	}
}

// shortPackage drops the module path from a package's import path.
func shortPackage(p string) string {
	const module = "github.com/ccm-conformance/ccm-conformance/"
	if s := strings.TrimPrefix(p, module); s != p {
		return s
	}
	return p
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
