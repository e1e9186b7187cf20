package main_test

import (
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// nullCCMArgs turn the reference CCM into one that does nothing: every
// cloud controller of k8s.io/cloud-provider's app is disabled, and only
// /healthz (and the rest of the secure serving) is left.
var nullCCMArgs = []string{"--controllers=-cloud-node-controller,-cloud-node-lifecycle-controller,-service-lb-controller,-node-route-controller"}

// The full suite against a CCM that never acts: every spec the profile
// claims must fail, or be skipped with a stated reason; a spec that passes
// would pass whatever the CCM does, and is named.
func TestIntegrationNullCCMPassesNothing(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := referenceProfile(t, t.TempDir(), nullCCMArgs, testbin.FailFast)
	// Every spec waits out its (fail-fast) timeouts here, so the run takes
	// four lanes, each with a local cluster of its own, rather than the
	// package's shared cluster, on which it would run one spec at a time.
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts,
		"--parallel", "4")
	if res.code != 1 && res.code != 2 {
		t.Fatalf("exit code %d, want 1 (specs failed) or 2\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
	}
	cases := readJUnit(t, artifacts)
	if len(cases) == 0 {
		t.Fatal("the JUnit report has no specs")
	}
	var passed []string
	failed, skipped := 0, 0
	for _, c := range cases {
		switch c.Status {
		case "failed":
			failed++
			if c.Failure != nil {
				t.Logf("failed: %s: %s", shortSpec(c.Name), firstLine(c.Failure.Message))
			}
		case "skipped":
			skipped++
			if c.Skipped == nil || strings.TrimSpace(c.Skipped.Message) == "" {
				t.Errorf("spec %q: skipped without a reason", c.Name)
			}
		case "passed":
			passed = append(passed, c.Name)
		default:
			t.Errorf("spec %q: %s, want failed or skipped", c.Name, c.Status)
		}
	}
	t.Logf("null CCM: %d specs: %d failed, %d skipped, %d passed", len(cases), failed, skipped, len(passed))
	if len(passed) > 0 {
		t.Errorf("%d spec(s) pass against a CCM that does nothing:\n  %s", len(passed), strings.Join(passed, "\n  "))
	}
}
