package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
	"github.com/ccm-conformance/ccm-conformance/kubeversion"
)

// TestIntegrationStockGinkgoTester runs the suites the way kubetest2's own
// ginkgo tester (sigs.k8s.io/kubetest2, pkg/testers/ginkgo) runs an
// e2e.test, read from its source: kubetest2 is not on the module proxy, so
// this test plays its part exactly.
//
//   - With --use-built-binaries it stats ginkgo, e2e.test and kubectl in
//     $KUBETEST2_RUN_DIR (ginkgo.go, and build.CommonTestBinaries).
//   - It runs the ginkgo CLI with `--nodes=<parallel>`, the e2e.test path,
//     `--`, then --kubeconfig=$KUBECONFIG, --kubectl-path=,
//     --ginkgo.skip=, --ginkgo.focus=, --ginkgo.label-filter=,
//     --provider=, --report-dir=$ARTIFACTS, --ginkgo.timeout=24h0m0s,
//     then its --test-args, shell-split (ginkgo.go, the run function).
//   - The child inherits kubetest2's environment: ARTIFACTS,
//     KUBETEST2_RUN_DIR, KUBETEST2_RUN_ID, KUBECONFIG, PATH with the run
//     directory first (app.go).
//
// A correct CCM passes, a CCM with a defect fails the right spec, both
// through the ginkgo CLI's exit code and the JUnit in $ARTIFACTS.
func TestIntegrationStockGinkgoTester(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds e2e.test and the ginkgo CLI, starts a local cluster and the reference provider")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// The three binaries, as `make e2e-binaries` puts them side by side.
	built := t.TempDir()
	build := func(args ...string) {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("go %s: %s", args[0], time.Since(start).Round(time.Second))
	}
	build("test", "-c", "-tags", "e2etest", "-o", filepath.Join(built, "e2e.test"), "./cmd/kubetest2-tester-ccm/e2etest")
	build("build", "-o", filepath.Join(built, "ginkgo"), "github.com/onsi/ginkgo/v2/ginkgo")
	kubectl, err := k8sbin.Ensure(ctx, k8sbin.Request{Name: k8sbin.Kubectl, Version: kubeversion.Pinned, Progress: os.Stderr})
	if err != nil {
		t.Fatalf("kubectl: %v", err)
	}

	cluster := startCluster(t, ctx)
	for _, tt := range []struct {
		name    string
		ccmArgs []string
		passes  bool
		failing string
	}{
		{name: "passing", passes: true},
		{name: "a defect", ccmArgs: []string{"--reference-defects=keep-lb-on-delete"}, failing: "deletes the cloud load balancer and then the finalizer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			runDir := filepath.Join(dir, "_rundir", "run-1")
			artifacts := filepath.Join(dir, "_artifacts")
			for _, d := range []string{runDir, artifacts} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, src := range map[string]string{"e2e.test": filepath.Join(built, "e2e.test"), "ginkgo": filepath.Join(built, "ginkgo"), "kubectl": kubectl} {
				if err := os.Symlink(src, filepath.Join(runDir, name)); err != nil {
					t.Fatal(err)
				}
			}
			profile := referenceProfile(t, dir, tt.ccmArgs...)

			// --use-built-binaries: each must be there.
			for _, name := range []string{"kubectl", "e2e.test", "ginkgo"} {
				if _, err := os.Stat(filepath.Join(runDir, name)); err != nil {
					t.Fatalf("the ginkgo tester would stop: %v", err)
				}
			}
			args := []string{
				"--nodes=1",
				filepath.Join(runDir, "e2e.test"),
				"--",
				"--kubeconfig=" + cluster.Kubeconfig(),
				"--kubectl-path=" + filepath.Join(runDir, "kubectl"),
				"--ginkgo.skip=",
				"--ginkgo.focus=",
				"--ginkgo.label-filter=" + lbLifeFilter,
				"--provider=",
				"--report-dir=" + artifacts,
				"--ginkgo.timeout=24h0m0s",
				"--ccm-profile=" + profile, // --test-args
			}
			cmd := exec.CommandContext(ctx, filepath.Join(runDir, "ginkgo"), args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(),
				"ARTIFACTS="+artifacts,
				"KUBETEST2_RUN_DIR="+runDir,
				"KUBETEST2_RUN_ID=run-1",
				"KUBECONFIG="+cluster.Kubeconfig(),
				"PATH="+runDir+string(os.PathListSeparator)+os.Getenv("PATH"),
				"TMPDIR="+shortTempDir(t),
			)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if passed := err == nil; passed != tt.passes {
				t.Fatalf("ginkgo exited with %v, want passed=%v\n%s", err, tt.passes, tail(out.String(), 60))
			}

			checkLoadBalancerSpecs(t, artifacts, tt.failing)
			if _, err := os.Stat(filepath.Join(runDir, "ccm-conformance", "finished.json")); err != nil {
				t.Errorf("the run directory is not kept in $KUBETEST2_RUN_DIR/ccm-conformance: %v", err)
			}
		})
	}

	// What the harness cannot honour is refused in one line, not run
	// differently from what was asked.
	t.Run("focus refused", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.CommandContext(ctx, filepath.Join(built, "ginkgo"), "--nodes=1", filepath.Join(built, "e2e.test"), "--",
			"--kubeconfig="+cluster.Kubeconfig(), "--ginkgo.focus=finalizer", "--provider=", "--report-dir="+dir,
			"--ccm-profile="+referenceProfile(t, dir))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "select specs with --label-filter") {
			t.Errorf("ginkgo: %v\n%s", err, out)
		}
	})
}
