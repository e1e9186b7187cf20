package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// awsFindings are the specs the AWS CCM fails, each a finding of
// docs/findings.md that blames the CCM with its evidence. The test below
// fails when one of them passes (re-check the finding, then update the
// record) or when any other spec fails (triage it first: harness or CCM?).
// This list never makes a run pass: the run still exits 1 and is red.
var awsFindings = map[string]string{
	"F2": "gives the cloud no node ports when allocateLoadBalancerNodePorts is false",
	"F3": "removes a route inside the cluster CIDR that belongs to no node",
}

// awsWedgedDeletionLog is F4 of docs/findings.md, a race, in the CCM's
// log: once it strikes, the CCM's service controller waits up to 10
// minutes on a security group it cannot delete, and meanwhile no Service of
// that cluster gets, changes or loses a load balancer. Which load balancer
// spec then fails, and how, depends on what runs next in that lane (most
// often "expected a load balancer ingress, saw none (finalizers [])": the
// CCM never saw the Service). So in a run whose CCM log shows the wait, a
// failing load balancer spec about a Service counts as F4's, and is logged
// as such; in a run without it, none does. It does not strike in every run,
// so its not failing is no news.
const awsWedgedDeletionLog = "to delete/detach from SG so we can delete security groups"

// The AWS CCM, built unmodified from k8s.io/cloud-provider-aws at the
// profile's version (cached like the Kubernetes binaries), runs the whole
// suite against the project's EC2 and ELB emulator. Exactly the recorded
// findings fail; every other spec passes or is skipped for a capability
// the profile does not claim, and the data path's specs pass through the
// emulator's load balancers. The run's metadata names the module.
func TestIntegrationAWSFindings(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := testbin.AWSProfile(t, t.TempDir(), binDir, nil)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts)
	if res.code != 1 {
		t.Errorf("exit code %d, want 1 (the findings fail)\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 60), tail(res.stderr, 20))
	}

	passed := findingsCheck{
		findings: awsFindings,
		failOK: func(s prow.SpecRecord) (string, bool) {
			return "F4 (a Service deletion wedged the CCM's service controller)",
				slices.Contains(s.Labels, "LoadBalancer") && strings.Contains(s.Failure, "Service ") && logsShow(t, artifacts, awsWedgedDeletionLog)
		},
		// The specs that need real pods on real nodes skip on the local
		// backend's simulated nodes (docs/providers.md says so).
		skipOK: func(reason string) bool { return strings.Contains(reason, "(run it on kind)") },
		// Traffic through the CCM's classic load balancers: the emulator's
		// listeners, the health checks the CCM configured, and the
		// security-group rules it wrote from loadBalancerSourceRanges.
		mustPass: []string{
			"delivers TCP traffic sent to the ingress to a backend",
			"admits clients inside loadBalancerSourceRanges and turns away the rest",
		},
	}.check(t, artifacts)
	if passed < 30 {
		t.Errorf("%d specs passed, want the AWS CCM's node, load balancer, route and leader migration specs (at least 30)", passed)
	}
	checkMetadata(t, artifacts, map[string]string{prow.MetaCCMModule: "k8s.io/cloud-provider-aws@v1.37.1", prow.MetaCCMCloudProvider: "v0.37.0", prow.MetaKubernetesVersion: "v1.37.2"})

	// Published, the release team's check answers red, naming the two
	// release-blocking findings.
	storeURL := publishToNewStore(t, artifacts)
	check := runHarness(t, nil, "lkg", "check", "--store", storeURL, "--kubernetes", "v1.37.2", "--providers", "aws", "-o", "json")
	if check.code != 1 {
		t.Fatalf("lkg check: exit %d, want 1 (not green)\n%s%s", check.code, check.stdout, check.stderr)
	}
	var answer lkg.CheckReport
	if err := json.Unmarshal([]byte(check.stdout), &answer); err != nil {
		t.Fatalf("lkg check -o json: %v", err)
	}
	if len(answer.Providers) != 1 || answer.Providers[0].Status != lkg.StatusRed ||
		!strings.Contains(answer.Providers[0].Reason, awsFindings["F2"]) || !strings.Contains(answer.Providers[0].Reason, awsFindings["F3"]) {
		t.Errorf("lkg check for aws: want red naming F2's and F3's specs, got %s", tail(check.stdout, 30))
	}
}

// The same CCM with aws-nlb.yaml, whose annotation makes every load
// balancer a Network Load Balancer: the load balancer and leader migration
// suites (label LoadBalancer; the node and route suites take no load
// balancer and run in TestIntegrationAWSFindings). The one finding is F2,
// which the NLB path shares with the classic one; traffic and source ranges
// go through the emulator's NLBs (target groups, the nodes' security group
// rules the CCM writes), and the emulator's log shows only NLBs carrying
// traffic.
func TestIntegrationAWSNLBFindings(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := testbin.AWSNLBProfile(t, t.TempDir(), binDir, nil)
	const label = "LoadBalancer"
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts, "--label-filter", label)
	if res.code != 1 {
		t.Errorf("exit code %d, want 1 (the findings fail)\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 60), tail(res.stderr, 20))
	}
	passed := findingsCheck{
		findings:    map[string]string{"F2": awsFindings["F2"]},
		skipOK:      func(reason string) bool { return strings.Contains(reason, "(run it on kind)") },
		labelFilter: label,
		mustPass: []string{
			"delivers TCP traffic sent to the ingress to a backend",
			"admits clients inside loadBalancerSourceRanges and turns away the rest",
			"health-checks the Service's healthCheckNodePort when externalTrafficPolicy is Local",
			"takes the migration lease once its holder stops, and the pending Service gets its load balancer",
			"carries UDP ports",
			"delivers UDP traffic sent to the ingress to a backend",
		},
	}.check(t, artifacts)
	if passed < 18 {
		t.Errorf("%d specs passed, want the load balancer and leader migration specs (at least 18)", passed)
	}
	emulatorLogs, err := filepath.Glob(filepath.Join(artifacts, "artifacts", "logs", "*", "service-ec2.log"))
	if err != nil || len(emulatorLogs) == 0 {
		t.Fatalf("the emulator's logs: %v %v", emulatorLogs, err)
	}
	var all strings.Builder
	for _, l := range emulatorLogs {
		data, _ := os.ReadFile(l)
		all.Write(data)
	}
	// The data path logs each target's health by the load balancer's
	// kind: every one here must be a Network Load Balancer's.
	inService := 0
	for _, line := range strings.Split(all.String(), "\n") {
		if !strings.Contains(line, " InService ") {
			continue
		}
		inService++
		if !strings.Contains(line, "network load balancer ") {
			t.Errorf("a classic load balancer carried traffic despite the annotation: %s", line)
		}
	}
	if inService == 0 {
		t.Error("the emulator's logs show no target InService: no Network Load Balancer carried traffic")
	}
	checkMetadata(t, artifacts, map[string]string{prow.MetaCCMModule: "k8s.io/cloud-provider-aws@v1.37.1"})
}

// The CCM with NLBSecurityGroupMode = Managed (aws-nlb-managed.yaml): each
// NLB gets a security group of its own, which carries the Service's source
// ranges, and the emulator's NLBs admit or drop clients by it before the
// nodes' groups are asked. The two source-range specs must pass, and the
// CCM's log must show it made the groups (otherwise the mode was not in
// effect and the run judged aws-nlb.yaml again). The whole profile runs as
// aws-nlb.yaml does (docs/findings.md); the source ranges are what the
// mode changes.
func TestIntegrationAWSNLBManagedSecurityGroups(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := testbin.AWSNLBManagedProfile(t, t.TempDir(), binDir, nil)
	const label = "LoadBalancerSourceRanges"
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts, "--label-filter", label)
	if res.code != 0 {
		t.Errorf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 60), tail(res.stderr, 20))
	}
	passed := findingsCheck{
		labelFilter: label,
		mustPass: []string{
			"passes loadBalancerSourceRanges to the cloud",
			"admits clients inside loadBalancerSourceRanges and turns away the rest",
		},
	}.check(t, artifacts)
	if passed != 2 {
		t.Errorf("%d specs passed, want the two source-range specs", passed)
	}
	if !logsShow(t, artifacts, `Ensured security group "k8s-`) {
		t.Error("no CCM log shows a security group made for an NLB: NLBSecurityGroupMode Managed was not in effect")
	}
	checkMetadata(t, artifacts, map[string]string{prow.MetaCCMModule: "k8s.io/cloud-provider-aws@v1.37.1"})
}

// logsShow reports whether a CCM log of the run holds text.
func logsShow(t *testing.T, artifacts, text string) bool {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(artifacts, "artifacts", "logs", "*", "ccm*.log"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(artifacts, "artifacts", "logs", "ccm*.log"))
	for _, l := range append(logs, more...) {
		if data, err := os.ReadFile(l); err == nil && strings.Contains(string(data), text) {
			return true
		}
	}
	return false
}
