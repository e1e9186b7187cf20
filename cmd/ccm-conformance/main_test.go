package main_test

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// binDir holds the harness and the reference provider, built once by
// TestMain from this checkout.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, &binDir, slices.Concat([]string{"./cmd/ccm-conformance"}, testbin.ReferenceProvider, testbin.VSphereProvider, testbin.AWSProvider)...))
}

func repoRoot() string { return testbin.RepoRoot() }

// result is one run of the harness binary.
type result struct {
	code           int
	stdout, stderr string
}

func runHarness(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "ccm-conformance"), args...)
	cmd.Env = append(os.Environ(), env...)
	// What a run writes by default (_artifacts) goes into a directory of
	// the test's, not into the source tree.
	cmd.Dir = t.TempDir()
	return runCmd(t, cmd)
}

// runCmd runs cmd and returns its exit code and output; a command that
// could not start fails t.
func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", cmd.Args, err)
	}
	return res
}

// referenceProfile writes a copy of the reference profile into dir, with
// its binaries taken from binDir (see testbin.ReferenceProfile).
func referenceProfile(t *testing.T, dir string, extraCCMArgs []string, mutate func(string) string) string {
	t.Helper()
	return testbin.ReferenceProfile(t, dir, binDir, extraCCMArgs, mutate)
}

// junitSuites is the part of ginkgo's JUnit report the tests read.
type junitSuites struct {
	Suites []struct {
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string `xml:"name,attr"`
	Status  string `xml:"status,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	// Error is where ginkgo reports a spec that panicked or was
	// interrupted.
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
}

// message is what the report says of a spec that did not pass: its
// failure, or the panic or interruption, each with its description.
func (c junitCase) message() string {
	var parts []string
	if c.Failure != nil {
		parts = append(parts, c.Failure.Message, c.Failure.Text)
	}
	if c.Error != nil {
		parts = append(parts, c.Error.Message, c.Error.Text)
	}
	return strings.Join(parts, "\n")
}

// readJUnit reads the cases of every artifacts/junit_*.xml of a run
// directory (one file per suite).
func readJUnit(t *testing.T, runDir string) []junitCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(runDir, "artifacts", "junit_*.xml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no JUnit report under %s/artifacts: %v", runDir, err)
	}
	var cases []junitCase
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading JUnit report: %v", err)
		}
		var s junitSuites
		if err := xml.Unmarshal(data, &s); err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		for _, suite := range s.Suites {
			for _, c := range suite.Cases {
				// Ginkgo reports suite-level nodes as cases in brackets.
				if strings.HasPrefix(c.Name, "[") && strings.HasSuffix(strings.Fields(c.Name)[0], "]") && !strings.Contains(c.Name, ":") {
					continue
				}
				cases = append(cases, c)
			}
		}
	}
	return cases
}

func oneLine(t *testing.T, s string) {
	t.Helper()
	if strings.Count(strings.TrimRight(s, "\n"), "\n") != 0 {
		t.Errorf("stderr is not one line:\n%s", s)
	}
}

func shortTempDir(t testing.TB) string { return testbin.ShortTempDir(t) }

// checkPassed fails t for each of wants that no spec in passed (the names
// of the passed specs) contains.
func checkPassed(t *testing.T, passed map[string]bool, where string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		found := false
		for name := range passed {
			found = found || strings.Contains(name, want)
		}
		if !found {
			t.Errorf("no passed spec %q %s", want, where)
		}
	}
}
