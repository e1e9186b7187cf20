package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// awsFindings are the specs the AWS CCM fails, each a finding of
// docs/findings.md that blames the CCM with its evidence. The test below
// fails when one of them passes (re-check the finding, then update the
// record) or when any other spec fails (triage it first: harness or CCM?).
// This list never makes a run pass: the run still exits 1 and is red.
var awsFindings = map[string]string{}

// The AWS CCM, built unmodified from k8s.io/cloud-provider-aws at the
// profile's version (cached like the Kubernetes binaries), runs the whole
// suite against the project's EC2 and ELB emulator. Exactly the recorded
// findings fail; every other spec passes or is skipped for a capability
// the profile does not claim. The run's metadata names the module.
func TestIntegrationAWSFindings(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := testbin.AWSProfile(t, t.TempDir(), binDir, nil)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts)
	wantCode := 0
	if len(awsFindings) > 0 {
		wantCode = 1
	}
	if res.code != wantCode {
		t.Errorf("exit code %d, want %d (%d findings)\nstdout:\n%s\nstderr:\n%s", res.code, wantCode, len(awsFindings), tail(res.stdout, 60), tail(res.stderr, 20))
	}

	data, err := os.ReadFile(filepath.Join(artifacts, prow.SpecsFile))
	if err != nil {
		t.Fatal(err)
	}
	var specs prow.SpecRecords
	if err := json.Unmarshal(data, &specs); err != nil {
		t.Fatal(err)
	}
	failing := map[string]bool{}
	passed := 0
	for _, s := range specs.Specs {
		finding := ""
		for id, text := range awsFindings {
			if strings.Contains(s.Text, text) {
				finding = id
			}
		}
		switch {
		case s.Failed() && finding != "":
			failing[finding] = true
		case s.Failed():
			t.Errorf("spec %q failed and is no finding of docs/findings.md: triage it (harness or CCM?): %s", s.Text, firstLine(s.Failure))
		case finding != "":
			t.Errorf("finding %s no longer fails (spec %q: %s): re-check it and update docs/findings.md", finding, s.Text, s.State)
		case s.Passed():
			passed++
		case s.Skipped() && !strings.Contains(s.SkipReason, "does not declare capability"):
			t.Errorf("spec %q skipped for a reason docs/providers.md does not give for AWS: %s", s.Text, s.SkipReason)
		}
	}
	for id := range awsFindings {
		if !failing[id] {
			t.Errorf("finding %s did not fail", id)
		}
	}
	if passed < 30 {
		t.Errorf("%d specs passed, want the AWS CCM's node, load balancer, route and leader migration specs (at least 30)", passed)
	}

	// The metadata proves which module ran, and the skew.
	meta := map[string]any{}
	if data, err := os.ReadFile(filepath.Join(artifacts, prow.MetadataFile)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{prow.MetaCCMModule: "k8s.io/cloud-provider-aws@v1.37.1", prow.MetaCCMCloudProvider: "v0.37.0", prow.MetaKubernetesVersion: "v1.37.2"} {
		if got, _ := meta[key].(string); got != want {
			t.Errorf("metadata %s = %q, want %q", key, got, want)
		}
	}
}
