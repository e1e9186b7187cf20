package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/cmd/ccm-conformance/app"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// fakeUpstreamE2E writes a stand-in for upstream's e2e binary: it lists
// the cluster's nodes with the kubectl and kubeconfig it is given, which
// works only while the harness's world is still up, and writes a JUnit
// file with one passed spec if it could, one failed spec if not.
func fakeUpstreamE2E(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "e2e.test")
	script := `#!/bin/sh
for a in "$@"; do
  case "$a" in
  --kubeconfig=*) kc=${a#--kubeconfig=} ;;
  --kubectl-path=*) kubectl=${a#--kubectl-path=} ;;
  --report-dir=*) rd=${a#--report-dir=} ;;
  --provider=*) provider=${a#--provider=} ;;
  esac
done
state='status="passed"><system-out></system-out'
if ! "$kubectl" --kubeconfig "$kc" get nodes -o name; then
  state='status="failed"><failure message="the cluster was gone" type="failed"></failure'
fi
cat > "$rd/junit_01.xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="fake" tests="2">
<testcase name="[sig-network] LoadBalancers [Feature:LoadBalancer] should handle load balancer cleanup finalizer for service [Slow]" classname="fake" time="1.5" $state></testcase>
<testcase name="[sig-network] Services left out by the focus" classname="fake" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
</testsuite></testsuites>
XML
[ "$provider" = local ] || exit 5
case "$state" in *passed*) exit 0 ;; esac
exit 1
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// compare-upstream runs our specs, then the upstream binary against the
// same cluster while it is still up, and prints and records both sides.
func TestIntegrationCompareUpstreamPlumbing(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := filepath.Join(t.TempDir(), "cmp")
	profile := referenceProfile(t, t.TempDir(), nil, nil)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "compare-upstream", "--backend", "local", "--provider", profile,
		"--artifacts", artifacts, "--e2e-binary", fakeUpstreamE2E(t),
		"--label-filter", "LoadBalancer && ReleaseBlocking && !LeaderMigration && !DataPath")
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 60), tail(res.stderr, 40))
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`running upstream's \[sig-network\] LoadBalancers e2e specs on the same cluster and CCM \(e2e\.test, \d+ schedulable nodes\)`),
		regexp.MustCompile(`upstream's specs: 1 passed, 0 failed, 0 skipped in `),
		regexp.MustCompile(`(?m)^  ccm-conformance --label-filter '.*' +[1-9]\d* +0 +\d+ +\d+\.\ds$`),
		regexp.MustCompile(`(?m)^  \[sig-network\] LoadBalancers \(upstream e2e, v1\.37\.2\) +1 +0 +0 +\d+\.\ds$`),
		regexp.MustCompile(`(?m)^upstream specs left out \(\d+\):$`),
		regexp.MustCompile(`(?m)^  should be able to create LoadBalancer Service without NodePort and change it: the reference load balancer is a proxy`),
	} {
		if !want.MatchString(res.stdout) {
			t.Errorf("stdout does not match %q:\n%s", want, tail(res.stdout, 60))
		}
	}
	data, err := os.ReadFile(filepath.Join(artifacts, filepath.FromSlash(prow.ComparisonFile)))
	if err != nil {
		t.Fatal(err)
	}
	var c app.Comparison
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", prow.ComparisonFile, err)
	}
	if c.Ours.Passed == 0 || c.Ours.Failed != 0 || c.Ours.WallSeconds <= 0 || c.Upstream.Passed != 1 || len(c.UpstreamSpecs) != 1 || c.Upstream.WallSeconds <= 0 {
		t.Errorf("%s = %+v, want our specs passed and upstream's one spec passed, both timed", prow.ComparisonFile, c)
	}
	log, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "upstream-e2e", "e2e.log"))
	if err != nil || !strings.Contains(string(log), "node/") {
		t.Errorf("upstream-e2e/e2e.log = %q, %v: want the fake binary's node listing", log, err)
	}
	if v := runHarness(t, nil, "validate-artifacts", artifacts); v.code != 0 {
		t.Errorf("validate-artifacts rejects the run directory (exit %d):\n%s%s", v.code, v.stdout, v.stderr)
	}
}
