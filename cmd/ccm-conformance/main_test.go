package main_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// binDir holds the harness and the reference provider, built once by
// TestMain from this checkout.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ccm-conformance-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := func() int {
		defer os.RemoveAll(dir)
		for _, pkg := range []string{
			"./cmd/ccm-conformance",
			"./providers/reference/cmd/reference-ccm",
			"./providers/reference/cmd/reference-cloud",
			"./providers/reference/cmd/reference-cloud-driver",
		} {
			cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, filepath.Base(pkg)), pkg)
			cmd.Dir = repoRoot()
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
				return 2
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// result is one run of the harness binary.
type result struct {
	code           int
	stdout, stderr string
}

func runHarness(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "ccm-conformance"), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running ccm-conformance: %v", err)
	}
	return res
}

// referenceProfile writes a copy of the reference profile into dir, with
// its binaries taken from binDir, the CCM's extra args appended, and
// mutate applied to the text. It returns the copy's path.
func referenceProfile(t *testing.T, dir string, extraCCMArgs []string, mutate func(string) string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "providers", "profiles", "reference.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "../../bin/", binDir+"/")
	if len(extraCCMArgs) > 0 {
		var b strings.Builder
		for _, a := range extraCCMArgs {
			fmt.Fprintf(&b, "      - %s\n", a)
		}
		text = strings.Replace(text, "      - --cloud-provider=reference\n", "      - --cloud-provider=reference\n"+b.String(), 1)
	}
	if mutate != nil {
		text = mutate(text)
	}
	path := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
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

// shortTempDir is a temporary directory with a short path: the reference
// cloud listens on a unix socket below TMPDIR, and socket paths are limited
// to 108 bytes, which t.TempDir's long names can exceed.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ccmc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
