package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"

	"golang.org/x/mod/semver"

	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// lbLifeFilter selects the release-blocking specs of the LoadBalancer
// capability alone: a load balancer's life (create, update its ports,
// delete), two Services of one name, no node ports, loadBalancerClass and
// the exclusion label; none
// of the other load balancer capabilities' and not the digit-first name's,
// whose spec depends on the Kubernetes version. The clusters of these tests
// have no nodes, so the create spec and the exclusion label's spec skip
// (each needs a node that can be a backend: one to judge the backends by,
// one to label) and lbLifeSpecs of them run.
const lbLifeFilter = "LoadBalancer && ReleaseBlocking && !DataPath && !LeaderMigration && !LoadBalancerSourceRanges && !LoadBalancerHealthCheckNodePort && !LoadBalancerUDP && !RelaxedServiceNameValidation"

const lbLifeSpecs = 5

// binDir holds kubetest2-tester-ccm and the reference provider, built once
// by TestMain from this checkout, under the names kubetest2 looks for.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, &binDir, append([]string{"./cmd/kubetest2-tester-ccm"}, testbin.ReferenceProvider...)...))
}

func repoRoot() string { return testbin.RepoRoot() }

// result is one run of the tester.
type result struct {
	code           int
	stdout, stderr string
}

// runTester runs the tester the way kubetest2 does: looked up on PATH as
// kubetest2-tester-<name>, with the tester's arguments (what followed `--`
// on kubetest2's command line) and the protocol's environment.
func runTester(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	path := os.Getenv("PATH")
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+path)
	tester, err := exec.LookPath("kubetest2-tester-ccm")
	t.Setenv("PATH", path)
	if err != nil {
		t.Fatalf("kubetest2 would not find the tester: %v", err)
	}
	cmd := exec.Command(tester, args...)
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+path)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running the tester: %v", err)
	}
	return res
}

// kubetest2 shows a tester's usage by running it with --help followed by
// the tester's arguments, and fails when it exits non-zero or prints its
// usage anywhere but stdout.
func TestHelp(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"alone", []string{"--help"}},
		{"before the tester's arguments", []string{"--help", "--provider", "p.yaml", "--label-filter", "LoadBalancer"}},
		{"short", []string{"-h"}},
		{"with an unknown flag", []string{"--help", "--no-such-flag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runTester(t, map[string]string{"KUBECONFIG": "/nonexistent"}, tt.args...)
			if res.code != 0 {
				t.Errorf("exit code %d, want 0; stderr: %s", res.code, res.stderr)
			}
			if res.stderr != "" {
				t.Errorf("stderr is not empty: %s", res.stderr)
			}
			for _, want := range []string{"kubetest2", "--provider", "--label-filter", "ARTIFACTS", "KUBETEST2_RUN_DIR", "Exit codes"} {
				if !strings.Contains(res.stdout, want) {
					t.Errorf("usage does not mention %s:\n%s", want, res.stdout)
				}
			}
		})
	}
}

// Bad input exits 2 with one line on stderr, and leaves no results.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	artifacts := filepath.Join(dir, "artifacts")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no provider", map[string]string{"KUBECONFIG": kubeconfig}, nil, "--provider"},
		{"missing profile", map[string]string{"KUBECONFIG": kubeconfig}, []string{"--provider", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"no cluster", map[string]string{"KUBECONFIG": "", "HOME": dir}, []string{"--provider", "p.yaml"}, "KUBECONFIG"},
		{"unknown flag", map[string]string{"KUBECONFIG": kubeconfig}, []string{"--provider", "p.yaml", "--frobnicate"}, "frobnicate"},
		{"stray argument", map[string]string{"KUBECONFIG": kubeconfig}, []string{"--provider", "p.yaml", "extra"}, "extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"ARTIFACTS": artifacts, "KUBETEST2_RUN_DIR": filepath.Join(dir, "rundir")}
			for k, v := range tt.env {
				env[k] = v
			}
			res := runTester(t, env, tt.args...)
			if res.code != 2 {
				t.Errorf("exit code %d, want 2; stderr: %s", res.code, res.stderr)
			}
			if strings.Count(strings.TrimRight(res.stderr, "\n"), "\n") != 0 || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("stderr is not one line naming %q:\n%s", tt.want, res.stderr)
			}
			if _, err := os.Stat(filepath.Join(artifacts, "metadata.json")); err == nil {
				t.Error("bad input left a metadata.json in $ARTIFACTS")
			}
		})
	}
}

// referenceProfile writes a copy of the reference profile with its
// binaries taken from binDir and the CCM's extra args appended.
func referenceProfile(t *testing.T, dir string, extraCCMArgs ...string) string {
	t.Helper()
	return testbin.ReferenceProfile(t, dir, binDir, extraCCMArgs, nil)
}

func shortTempDir(t *testing.T) string { return testbin.ShortTempDir(t) }

type junitCase struct {
	Name    string    `xml:"name,attr"`
	Status  string    `xml:"status,attr"`
	Failure *struct{} `xml:"failure"`
}

// junitCases reads the cases of the junit_*.xml files directly in dir.
func junitCases(t *testing.T, dir string) map[string]junitCase {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "junit_*.xml"))
	cases := map[string]junitCase{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Suites []struct {
				Cases []junitCase `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, suite := range s.Suites {
			for _, c := range suite.Cases {
				cases[c.Name] = c
			}
		}
	}
	return cases
}

// The tester, run by kubetest2's rules against a cluster brought up
// beforehand (the embedded local cluster, standing in for a deployer's),
// with the reference provider's CCM: junit files and records land directly
// in $ARTIFACTS beside what kubetest2 wrote there, its keys are merged into
// $ARTIFACTS/metadata.json, the complete run directory is kept under
// $KUBETEST2_RUN_DIR, and the exit code says whether a spec failed.
func TestIntegrationTesterOnAnExistingCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts a local cluster and the reference provider")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cluster := startCluster(t, ctx)

	tests := []struct {
		name     string
		ccmArgs  []string
		wantCode int
		failing  string
	}{
		{name: "passing", wantCode: 0},
		{name: "a defect", ccmArgs: []string{"--reference-defects=keep-lb-on-delete"}, wantCode: 1, failing: "deletes the cloud load balancer and then the finalizer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			artifacts := filepath.Join(dir, "artifacts")
			runDir := filepath.Join(dir, "rundir", "run-1")
			// What kubetest2 leaves in $ARTIFACTS before it runs the tester.
			if err := os.MkdirAll(artifacts, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(artifacts, "metadata.json"), []byte(`{"kubetest-version": "v0.0.0-test", "deployer-version": "local"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(artifacts, "junit_runner.xml"), []byte(`<testsuites></testsuites>`), 0o644); err != nil {
				t.Fatal(err)
			}
			profile := referenceProfile(t, dir, tt.ccmArgs...)
			env := map[string]string{
				"ARTIFACTS":         artifacts,
				"KUBECONFIG":        cluster.Kubeconfig(),
				"KUBETEST2_RUN_DIR": runDir,
				"KUBETEST2_RUN_ID":  "run-1",
				"TMPDIR":            shortTempDir(t),
			}
			res := runTester(t, env, "--provider", profile, "--label-filter", lbLifeFilter)
			if res.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", res.code, tt.wantCode, tail(res.stdout, 60), res.stderr)
			}

			checkLoadBalancerSpecs(t, artifacts, tt.failing)
			for _, name := range []string{"junit_runner.xml", "specs.json", "timings.json", "logs/ccm.log"} {
				if _, err := os.Stat(filepath.Join(artifacts, name)); err != nil {
					t.Errorf("$ARTIFACTS/%s: %v", name, err)
				}
			}
			if _, err := os.Stat(filepath.Join(artifacts, "artifacts")); err == nil {
				t.Error("$ARTIFACTS has a nested artifacts/ directory")
			}

			var meta map[string]any
			data, err := os.ReadFile(filepath.Join(artifacts, "metadata.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &meta); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"kubetest-version":         "v0.0.0-test",
				"deployer-version":         "local",
				prow.MetaKubernetesVersion: local.DefaultKubernetesVersion,
				prow.MetaJobVersion:        local.DefaultKubernetesVersion,
				prow.MetaProvider:          "reference",
				"kubetest2-run-id":         "run-1",
			}
			for k, v := range want {
				if meta[k] != v {
					t.Errorf("$ARTIFACTS/metadata.json %s = %v, want %q", k, meta[k], v)
				}
			}
			// The tester's version: "devel", or, where the go command
			// stamps a build in a git checkout, the module's pseudo-version
			// (internal/harnessversion).
			if v, _ := meta["tester-version"].(string); v != "devel" && !semver.IsValid(strings.TrimSuffix(v, "+dirty")) {
				t.Errorf("$ARTIFACTS/metadata.json tester-version = %q, want devel or a module version", v)
			}
			if d, _ := meta[prow.MetaCCMDigest].(string); !strings.HasPrefix(d, "sha256:") {
				t.Errorf("$ARTIFACTS/metadata.json ccm-digest = %v, want the binary's sha256", meta[prow.MetaCCMDigest])
			}

			kept := filepath.Join(runDir, "ccm-conformance")
			v, err := prow.Validate(kept)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Valid() {
				t.Errorf("the run directory %s is not valid: %v", kept, v.Problems)
			}
			if wantResult := map[int]string{0: prow.ResultSuccess, 1: prow.ResultFailure}[tt.wantCode]; v.Result != wantResult {
				t.Errorf("the run directory's result is %s, want %s", v.Result, wantResult)
			}
			if tt.wantCode == 0 {
				// The suites record the load balancer's latency.
				data, err := os.ReadFile(filepath.Join(artifacts, "timings.json"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(data), `"load-balancer-ready"`) {
					t.Errorf("timings.json has no load-balancer-ready latency:\n%s", data)
				}
			}
		})
	}

	// The specs a node IP needs register a kubelet of their own, which the
	// harness cannot on a cluster a deployer made: every one skips, the
	// run tested nothing, and the job must not turn green.
	t.Run("nothing tested", func(t *testing.T) {
		dir := t.TempDir()
		artifacts := filepath.Join(dir, "artifacts")
		env := map[string]string{
			"ARTIFACTS":         artifacts,
			"KUBECONFIG":        cluster.Kubeconfig(),
			"KUBETEST2_RUN_DIR": filepath.Join(dir, "rundir", "run-2"),
			"KUBETEST2_RUN_ID":  "run-2",
			"TMPDIR":            shortTempDir(t),
		}
		res := runTester(t, env, "--provider", referenceProfile(t, dir), "--label-filter", "NodeIPAnnotation")
		if res.code != 2 || !strings.Contains(res.stderr, "nothing was tested: all ") || !strings.Contains(res.stderr, " selected specs were skipped") {
			t.Errorf("exit %d, stderr %q; want 2 and the line that says nothing was tested\nstdout:\n%s", res.code, res.stderr, tail(res.stdout, 30))
		}
	})
}

func tail(s string, n int) string { return testbin.Tail(s, n) }

// checkLoadBalancerSpecs reads the JUnit in dir: the lbLifeSpecs
// release-blocking load balancer specs ran, and only the one whose name
// contains failing (none when it is empty) failed.
func checkLoadBalancerSpecs(t *testing.T, dir, failing string) {
	t.Helper()
	ran := 0
	for name, c := range junitCases(t, dir) {
		if !strings.HasPrefix(name, "[loadbalancer]") || c.Status == "skipped" {
			continue
		}
		ran++
		wantFailed := failing != "" && strings.Contains(name, failing)
		if failed := c.Failure != nil; failed != wantFailed {
			t.Errorf("spec %q: failed %v, want %v", name, failed, wantFailed)
		}
	}
	if ran != lbLifeSpecs {
		t.Errorf("%d load balancer specs ran by the junit_*.xml of %s, want the %d release-blocking ones", ran, dir, lbLifeSpecs)
	}
}

// startCluster starts the embedded local cluster to stand in for the one a
// kubetest2 deployer made, and stops it when the test ends.
func startCluster(t *testing.T, ctx context.Context) *local.Cluster {
	t.Helper()
	cluster, err := local.Start(ctx, local.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatalf("starting the local cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(context.Background()); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
	})
	return cluster
}
