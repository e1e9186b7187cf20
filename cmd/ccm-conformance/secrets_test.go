package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework"
)

// TestIntegrationSecretsStayOut plants a recognizable secret in the
// harness's environment, hands it to the CCM through the profile's
// ${env:NAME} (an argument, which the harness's build log and the CCM's own
// log at --v=2 print) and to the cloud driver, and greps every file of the
// run directory, and the program's output, for it: it must be nowhere,
// and the marks that stand for it must be there (so the secret did reach
// what would have leaked it). Without the variable set, the run is bad
// input naming it.
func TestIntegrationSecretsStayOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the harness")
	}
	secret := framework.UniqueName("ccmc-planted-secret") + "-" + framework.UniqueName("x")
	dir := shortTempDir(t)
	profile := referenceProfile(t, dir, []string{"--cluster-name=${env:CCM_TEST_CLOUD_TOKEN}"}, func(s string) string {
		return strings.Replace(s, "cloudDriver:\n  command: [", "cloudDriver:\n  env:\n    CLOUD_TOKEN: ${env:CCM_TEST_CLOUD_TOKEN}\n  command: [", 1)
	})
	if data, _ := os.ReadFile(profile); !strings.Contains(string(data), "CLOUD_TOKEN: ${env:CCM_TEST_CLOUD_TOKEN}") {
		t.Fatalf("the test's profile edit did not take:\n%s", data)
	}
	artifacts := filepath.Join(dir, "artifacts")
	res := runHarness(t, []string{"CCM_TEST_CLOUD_TOKEN=" + secret}, "run", "--provider", profile, "--artifacts", artifacts,
		"--label-filter", "InstancesV2 && ReleaseBlocking && !NodeIPAnnotation")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, tail(res.stdout, 30), res.stderr)
	}
	checkSecretKeptOut(t, artifacts, secret, res)

	// The variable unset (the test's own environment lacks it): bad
	// input, one line naming it; and an empty one cannot be kept out.
	res = runHarness(t, nil, "run", "--provider", profile, "--artifacts", filepath.Join(dir, "unset"))
	if res.code != 2 || !strings.Contains(res.stderr, "CCM_TEST_CLOUD_TOKEN is not set in the harness's environment") {
		t.Errorf("unset: exit %d, stderr %q", res.code, res.stderr)
	}
	res = runHarness(t, []string{"CCM_TEST_CLOUD_TOKEN=abc"}, "run", "--provider", profile, "--artifacts", filepath.Join(dir, "short"))
	if res.code != 2 || !strings.Contains(res.stderr, "secret CCM_TEST_CLOUD_TOKEN is shorter than 4 characters") {
		t.Errorf("a short secret: exit %d, stderr %q", res.code, res.stderr)
	}
}
