package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

func skipUnlessIntegration(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a local cluster and the reference provider")
	}
}

// realPodsOnly says whether a spec skipped because it needs real pods
// (behind a load balancer, or on the nodes the cloud's routes join), which
// the local cluster's simulated nodes do not have
// (TestIntegrationKindConformance runs those on kind).
func realPodsOnly(c junitCase) bool {
	return c.Status == "skipped" && c.Skipped != nil && strings.Contains(c.Skipped.Message, "the spec needs real pods")
}

// The reference provider passes every spec its profile selects, but for
// those that need real pods.
func TestIntegrationConformanceReference(t *testing.T) {
	skipUnlessIntegration(t)
	expectConformant(t, referenceProfile(t, t.TempDir(), nil, nil))
}

// A second correct cloud passes too: one whose instances have no Hostname
// address and no instance type, and whose load balancers register two of
// the eligible nodes (of the profile's three and those specs add), as many
// real clouds do; its profile declares the subset. The specs must not hold
// a correct CCM to what the reference cloud happens to do
// (k8s.io/cloud-provider then keeps the kubelet's Hostname address and sets
// no instance-type labels; the service controller hands the cloud every
// eligible node and leaves the choice to it).
func TestIntegrationConformanceSecondCorrectCloud(t *testing.T) {
	skipUnlessIntegration(t)
	other := func(p string) string {
		const cloud = `--listen, "unix://${RUN_DIR}/cloud.sock"]`
		if !strings.Contains(p, cloud) {
			t.Fatalf("reference.yaml no longer starts its cloud with %s", cloud)
		}
		p = strings.Replace(p, cloud, `--listen, "unix://${RUN_DIR}/cloud.sock", --bare-instances, --backend-limit, "2"]`, 1)
		return p + "\nloadBalancer:\n  backends: subset\n"
	}
	expectConformant(t, referenceProfile(t, t.TempDir(), nil, other))
}

// expectConformant runs the whole suite against profile and fails the test
// unless every spec passed, but for those that need real pods.
func expectConformant(t *testing.T, profile string) {
	t.Helper()
	artifacts := t.TempDir()
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts)
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
	}
	cases := readJUnit(t, artifacts)
	if len(cases) == 0 {
		t.Fatal("the JUnit report has no specs")
	}
	for _, c := range cases {
		if c.Status != "passed" && !realPodsOnly(c) {
			t.Errorf("spec %q: %s, want passed", c.Name, c.Status)
		}
	}
	if !strings.Contains(res.stdout, "conformance: ") || !strings.Contains(res.stdout, " passed, 0 failed") {
		t.Errorf("summary line missing from stdout:\n%s", tail(res.stdout, 20))
	}
	if v := runHarness(t, nil, "validate-artifacts", artifacts); v.code != 0 {
		t.Errorf("validate-artifacts rejects the run directory (exit %d):\n%s%s", v.code, v.stdout, v.stderr)
	}
	buildLog, err := os.ReadFile(filepath.Join(artifacts, "build-log.txt"))
	if err != nil || !strings.Contains(string(buildLog), " passed, 0 failed") || !strings.Contains(string(buildLog), "Node addressing") {
		t.Errorf("build-log.txt lacks the run's output (%v):\n%s", err, tail(string(buildLog), 20))
	}
}

// defectCase is one run of the reference provider with something broken:
// a defect switched on in its CCM or cloud, or a cloud driver that answers
// badly. Exactly the specs in failing must fail, each with a message that
// contains the given substrings; every other selected spec must pass.
type defectCase struct {
	name        string
	defects     string // --reference-defects
	labelFilter string // narrows the run to the suite under test
	driverFault string // shell case arm that breaks the cloud driver, see brokenDriver
	// profileEdit changes the reference profile's text after the driver
	// fault is applied.
	profileEdit func(string) string
	// wantCode is the exit code; default 1 (a spec failed).
	wantCode int
	// image runs the reference CCM's image (reference-image.yaml) instead
	// of its binary.
	image bool
	// kind deploys the reference CCM's image on a new kind cluster
	// (reference-kind.yaml, --backend kind) instead of the local one.
	kind bool
	// nodeManager runs reference-node-manager.yaml (with kind,
	// reference-kind-node-manager.yaml: a DaemonSet), a node manager
	// beside each node, and gives the defects to the node managers, not
	// the CCM.
	nodeManager bool
	// afterRun, when set, checks more of the run.
	afterRun func(t *testing.T, artifacts string, res result)
	failing  map[string][]string
}

func TestIntegrationDefectsFailTheRightSpecs(t *testing.T) {
	skipUnlessIntegration(t)
	testbin.EachOnSharedClusters(t, tableLanes, defectCases(), defectCase.caseName, runDefectCaseOn)
}

// lbWithoutMigration selects the load balancer specs for the defect cases
// of the service controller. The leader migration specs that carry the
// LoadBalancer label are left to their own table: their 4-second leases
// are renewed on time on two cores with one such run going, not with
// three side by side, and a CCM that misses its renew deadline exits.
const lbWithoutMigration = "LoadBalancer && !DataPath && !LoadBalancerSourceRanges && !LeaderMigration"

// tableLanes is how many runs of a defect or mutant table go on at once,
// each on a shared cluster of its own.
const tableLanes = 3

func (tt defectCase) caseName() string { return tt.name }

// defectCases is the table of TestIntegrationDefectsFailTheRightSpecs; the
// mutant corpus counts the specs it fails as killed (mutants_test.go).
func defectCases() []defectCase {
	nodeMsg := []string{"node ccm-node-"}
	return []defectCase{
		{
			// The node managers initialize the nodes; the central CCM,
			// correct, runs without its node controller.
			name: "node manager with wrong zone", defects: "wrong-zone", nodeManager: true,
			labelFilter: "InstancesV2 && !NodeIPAnnotation",
			failing: map[string][]string{
				"labels each node with its instance's zone and region": {"node ccm-node-", "topology.kubernetes.io/zone", "-wrong"},
			},
		},
		{
			name: "wrong zone and stale addresses", defects: "wrong-zone,stale-addresses",
			labelFilter: "InstancesV2 && !NodeIPAnnotation",
			failing: map[string][]string{
				"labels each node with its instance's zone and region":   {"node ccm-node-", "topology.kubernetes.io/zone", "-wrong"},
				"updates a node's addresses when the cloud changes them": {"node ccm-node-", "expected addresses", "198.51.100.", "saw"},
			},
		},
		{
			name: "no IPv6", defects: "no-ipv6", labelFilter: "InstancesV2",
			failing: map[string][]string{
				"gives each node the addresses its instance has in the cloud":      {"node ccm-node-", "expected addresses", "InternalIP=fd00:64::", "saw"},
				"makes an IPv6 node IP the node's only InternalIP":                 {"node ccm-node-", "uninitialized taint", "fd00:66::"},
				"updates a node's addresses when the cloud changes them":           {"node ccm-node-", "expected addresses", "InternalIP=fd00:64::"},
				"makes a dual-stack IPv4,IPv6 node IP pair the node's InternalIPs": {"node ccm-node-", "uninitialized taint"},
				"makes a dual-stack IPv6,IPv4 node IP pair the node's InternalIPs": {"node ccm-node-", "uninitialized taint"},
			},
		},
		{
			name: "load balancer kept on delete, excluded node kept", defects: "keep-lb-on-delete,backends-all-instances",
			labelFilter: lbWithoutMigration,
			failing: map[string][]string{
				"deletes the cloud load balancer and then the finalizer": {"Service ccm-lb-", "expected its cloud load balancer", "gone before the service.kubernetes.io/load-balancer-cleanup finalizer was removed, saw it still there"},
				"when it changes to NodePort, then ClusterIP":            {"Service ccm-lb-", "expected its cloud load balancer", "gone, saw it still there"},
				"gives a Service whose name starts with a digit":         {"Service ccm-lb-", "/8080-web: expected its cloud load balancer", "gone, saw it still there"},
				"drops a node labelled node.kubernetes.io/exclude":       {"Service ccm-lb-", "expected node ccm-node-1, labelled node.kubernetes.io/exclude-from-external-load-balancers=true, gone from the backends", "saw backends [ccm-node-1 ccm-node-2 ccm-node-3]"},
				// Whichever check of the backends (framework.CheckBackends) the
				// instances of gone or excluded nodes trip first.
				"adds a joining node to the backends and drops a leaving": {"Service ccm-lb-", "the backends of cloud load balancer"},
				// Every instance is a backend, the tainted node's too.
				"drops a node tainted ToBeDeletedByClusterAutoscaler": {"Service ccm-lb-", "gone from the backends of cloud load balancer", "is tainted ToBeDeletedByClusterAutoscaler"},
			},
		},
		{
			name: "NotReady backends dropped", defects: "drop-notready-backends",
			labelFilter: lbWithoutMigration,
			failing: map[string][]string{
				"keeps a backend node that goes NotReady among the backends": {"Service ccm-lb-", "expected node ccm-node-", "among the backends of cloud load balancer", "went NotReady, and readiness is no rule"},
			},
		},
		{
			name: "autoscaler taint ignored", defects: "ignore-autoscaler-taint",
			labelFilter: lbWithoutMigration,
			failing: map[string][]string{
				"drops a node tainted ToBeDeletedByClusterAutoscaler": {"Service ccm-lb-", "expected node ccm-node-", "gone from the backends of cloud load balancer", "is tainted ToBeDeletedByClusterAutoscaler"},
			},
		},
		{
			name: "source ranges ignored", defects: "ignore-source-ranges", labelFilter: "LoadBalancerSourceRanges",
			failing: map[string][]string{
				"passes loadBalancerSourceRanges to the cloud":       {"Service ccm-lb-", "to allow [192.0.2.0/24 198.51.100.0/24], saw []"},
				"admits clients inside loadBalancerSourceRanges and": {"Service ccm-lb-", "(loadBalancerSourceRanges 127.0.0.1/32): expected a client from 127.0.0.2 turned away", "saw it answered by"},
			},
		},
		{
			name: "route for a wrong CIDR", defects: "wrong-route-cidr", labelFilter: "Routes",
			failing: map[string][]string{
				"gives every node's podCIDRs a cloud route":    append(nodeMsg, "expected a cloud route 10.244."),
				"gives a dual-stack node one route per":        append(nodeMsg, "expected a cloud route"),
				"deletes the route of a deleted node":          append(nodeMsg, "expected a cloud route"),
				"removes a route inside the cluster CIDR that": append(nodeMsg, "expected a cloud route"),
			},
		},
		{
			name: "routes never deleted", defects: "keep-routes", labelFilter: "Routes",
			failing: map[string][]string{
				"deletes the route of a deleted node":          {"node ccm-node-", "(deleted): expected no cloud route"},
				"removes a route inside the cluster CIDR that": {"(inside the cluster network 10.244.0.0/16, to a node that does not exist): expected it removed, saw it still there"},
			},
		},
		{
			name: "node lifecycle ignores the cloud", defects: "instance-exists-always,no-shutdown", labelFilter: "NodeLifecycle",
			failing: map[string][]string{
				"deletes the Node of an instance deleted in the cloud":  {"node ccm-node-", "expected it deleted, since its instance was deleted from the cloud; saw it still there"},
				"taints the Node of a stopped instance as shut down":    {"node ccm-node-", "expected taint node.cloudprovider.kubernetes.io/shutdown"},
				"keeps a Node whose instance never existed":             {"node ccm-phantom-", "expected it deleted, since no instance of that name exists", "saw it still there"},
				"keeps every NotReady Node whose instance still exists": {"node ccm-node-", "expected it deleted, since its instance was deleted from the cloud (the control"},
				"deletes it once the cloud says the instance is gone":   {"node ccm-node-", "expected it deleted, since the cloud answers again and says its instance is gone; saw it still there"},
			},
		},
		{
			// The Node goes as soon as it is NotReady: the spec fails then,
			// not at the end of nodeShutdown.
			name: "stopped instance taken for gone", defects: "stopped-instance-gone", labelFilter: "NodeLifecycle",
			failing: map[string][]string{
				"taints the Node of a stopped instance as shut down": {"node ccm-node-", "was deleted although its instance was only stopped: expected the Node kept and tainted node.cloudprovider.kubernetes.io/shutdown"},
			},
		},
		{
			name: "driver exits non-zero", labelFilter: "Routes && !DualStack",
			driverFault: `"routes list") echo "simulated driver outage: routes API unreachable" >&2; exit 1 ;;`,
			failing: map[string][]string{
				"gives every node's podCIDRs a cloud route":    {`cloud driver broken-driver "routes list"`, "exit code 1", "simulated driver outage: routes API unreachable"},
				"deletes the route of a deleted node":          {`cloud driver broken-driver "routes list"`, "simulated driver outage"},
				"removes a route inside the cluster CIDR that": {`cloud driver broken-driver "routes list"`, "simulated driver outage"},
			},
		},
		{
			// The driver's fault, not the CCM's: each spec says the driver
			// broke the protocol, and the run is a harness error (exit 2)
			// whose class the LKG rules read.
			name: "driver prints invalid JSON", labelFilter: "InstancesV2 && !NodeIPAnnotation",
			driverFault: `"instance get") echo "instance lookup: rate limited" >&2; echo "<html>503</html>"; exit 0 ;;`,
			wantCode:    2,
			failing: map[string][]string{
				"sets each node's providerID to its instance's":               {`cloud driver broken-driver broke the protocol: "instance get" answered with invalid JSON`, "<html>503</html>", "rate limited"},
				"gives each node the addresses its instance has in the cloud": {`cloud driver broken-driver broke the protocol: "instance get"`, "invalid JSON"},
				"labels each node with its instance type":                     {`cloud driver broken-driver broke the protocol: "instance get"`, "invalid JSON"},
				"labels each node with its instance's zone and region":        {`cloud driver broken-driver broke the protocol: "instance get"`, "invalid JSON"},
			},
			afterRun: func(t *testing.T, artifacts string, res result) {
				if !strings.Contains(res.stderr, "cloud driver broken-driver broke the protocol in 4 spec(s)") {
					t.Errorf("stderr does not blame the driver:\n%s", res.stderr)
				}
				specs, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "specs.json"))
				if err != nil || !strings.Contains(string(specs), `"harnessErrorClass": "driver"`) {
					t.Errorf("specs.json does not record the driver's failure (%v):\n%s", err, specs)
				}
			},
		},
	}
}

// brokenDriver wraps the reference cloud driver in a script whose case arm
// answers some verbs badly and passes the rest through.
func brokenDriver(t *testing.T, arm string) string {
	t.Helper()
	script := "#!/bin/sh\ncase \"$*\" in\n  " + arm + "\nesac\nexec " + filepath.Join(binDir, "reference-cloud-driver") + " \"$@\"\n"
	path := filepath.Join(t.TempDir(), "broken-driver")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// runDefectCase runs one defect case on the package's shared cluster.
func runDefectCase(t *testing.T, tt defectCase) { runDefectCaseOn(t, tt, testbin.SharedCluster(t)) }

// runDefectCaseOn runs one defect case on the local cluster of clusterDir
// and checks that exactly its specs failed, with the messages it names.
func runDefectCaseOn(t *testing.T, tt defectCase, clusterDir string) {
	artifacts := t.TempDir()
	var extra []string
	if tt.defects != "" {
		extra = append(extra, "--reference-defects="+tt.defects)
	}
	mutate := func(s string) string {
		if tt.driverFault != "" {
			s = strings.Replace(s, "command: ["+binDir+"/reference-cloud-driver]", "command: ["+brokenDriver(t, tt.driverFault)+"]", 1)
		}
		if tt.profileEdit != nil {
			s = tt.profileEdit(s)
		}
		return s
	}
	failFast := func(s string) string { return testbin.FailFast(mutate(s)) }
	var profile string
	switch {
	case tt.kind && tt.nodeManager:
		image, _ := testbin.ReferenceCCMImage(t)
		nodeManager, _ := testbin.ReferenceNodeManagerImage(t)
		profile = testbin.ReferenceKindNodeManagerProfile(t, t.TempDir(), binDir, image, nodeManager, extra, failFast)
	case tt.kind:
		image, _ := testbin.ReferenceCCMImage(t)
		profile = testbin.ReferenceKindProfile(t, t.TempDir(), binDir, image, extra, failFast)
	case tt.image:
		image, _ := testbin.ReferenceCCMImage(t)
		profile = testbin.ReferenceImageProfile(t, t.TempDir(), binDir, image, extra, failFast)
	case tt.nodeManager:
		profile = testbin.ReferenceNodeManagerProfile(t, t.TempDir(), binDir, extra, failFast)
	default:
		profile = referenceProfile(t, t.TempDir(), extra, failFast)
	}
	args := []string{"run", "--provider", profile, "--artifacts", artifacts}
	if tt.kind {
		echo, _ := testbin.EchoServerImage(t)
		args = append(args, "--backend", "kind", "--echo-image", echo)
	} else {
		args = append(args, "--cluster-dir", clusterDir)
	}
	if tt.labelFilter != "" {
		args = append(args, "--label-filter", tt.labelFilter)
	}
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, args...)
	wantCode := tt.wantCode
	if wantCode == 0 {
		wantCode = 1
	}
	if res.code != wantCode {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", res.code, wantCode, tail(res.stdout, 80), res.stderr)
	}
	if tt.afterRun != nil {
		tt.afterRun(t, artifacts, res)
	}
	matched := map[string]bool{}
	ran := 0
	for _, c := range readJUnit(t, artifacts) {
		if c.Status == "skipped" {
			continue
		}
		ran++
		var wantFail string
		for spec := range tt.failing {
			if strings.Contains(c.Name, spec) {
				wantFail = spec
			}
		}
		if wantFail == "" {
			if c.Status != "passed" {
				t.Errorf("spec %q: %s, want passed (the defect is elsewhere): %s", c.Name, c.Status, c.message())
			}
			continue
		}
		matched[wantFail] = true
		if c.Status != "failed" || c.Failure == nil {
			t.Errorf("spec %q: %s, want failed\n%s", c.Name, c.Status, c.message())
			continue
		}
		msg := c.Failure.Message + "\n" + c.Failure.Text
		if strings.Contains(msg, "panic") {
			t.Errorf("spec %q panicked instead of failing:\n%s", c.Name, msg)
		}
		for _, w := range tt.failing[wantFail] {
			if !strings.Contains(msg, w) {
				t.Errorf("spec %q: failure message does not contain %q:\n%s", c.Name, w, msg)
			}
		}
	}
	for spec := range tt.failing {
		if !matched[spec] {
			t.Errorf("no spec matching %q in the report", spec)
		}
	}
	if ran <= len(tt.failing) {
		t.Logf("note: only %d specs ran, %d expected to fail", ran, len(tt.failing))
	}
}

func tail(s string, n int) string { return testbin.Tail(s, n) }

// The leak check: a CCM that reports a load balancer deleted without
// deleting it (keep-lb-on-delete) passes the spec it runs, whose Service is
// deleted only at cleanup, but the run fails (a harness error, exit 2)
// naming the cloud load balancer it left behind.
func TestIntegrationLeakCheckNamesTheLoadBalancer(t *testing.T) {
	skipUnlessIntegration(t)
	runDefectCase(t, defectCase{
		name: "load balancer left behind", defects: "keep-lb-on-delete",
		labelFilter: "LoadBalancerSourceRanges && !DataPath",
		wantCode:    2,
		// The spec itself passes; the harness's case fails.
		afterRun: func(t *testing.T, artifacts string, res result) {
			junit, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "junit_harness_01.xml"))
			if err != nil {
				t.Fatalf("no harness JUnit file: %v", err)
			}
			for _, want := range []string{`name="[harness] the run leaves nothing behind"`, "the specs left 1 thing(s) behind", "cloud load balancer a", "(of Service ccm-lb-"} {
				if !strings.Contains(string(junit), want) {
					t.Errorf("junit_harness_01.xml lacks %q:\n%s", want, junit)
				}
			}
			if !strings.Contains(res.stdout, "LEFT BEHIND cloud load balancer a") {
				t.Errorf("the summary does not name the load balancer:\n%s", tail(res.stdout, 20))
			}
			specs, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "specs.json"))
			if err != nil || !strings.Contains(string(specs), `"harnessErrorClass": "leak"`) {
				t.Errorf("specs.json does not record the leak (%v):\n%s", err, specs)
			}
			if !strings.Contains(res.stdout, "passes loadBalancerSourceRanges to the cloud") {
				t.Errorf("the spec that made the load balancer did not run:\n%s", tail(res.stdout, 40))
			}
		},
	})
}

// A CCM that takes the instances of one zone for gone
// (instances-gone-in-zone-c) deletes the NotReady Nodes there: the spec
// that keeps a NotReady node in every zone catches it whatever names and
// zones the machines drew. (The stopped-instance spec, on one machine of
// a zone drawn in turn, catches it only when it lands in zone-c, so its
// outcome is not checked here.)
func TestIntegrationNotReadyNodesInEveryZone(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := referenceProfile(t, t.TempDir(), []string{"--reference-defects=instances-gone-in-zone-c"}, testbin.FailFast)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts,
		"--cluster-dir", testbin.SharedCluster(t), "--label-filter", "NodeLifecycle")
	if res.code != 1 {
		t.Fatalf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
	}
	const spec = "keeps every NotReady Node whose instance still exists, in every zone of the cluster"
	found := false
	for _, c := range readJUnit(t, artifacts) {
		if !strings.Contains(c.Name, spec) {
			continue
		}
		found = true
		if c.Status != "failed" || c.Failure == nil {
			t.Fatalf("spec %q: %s, want failed\n%s", c.Name, c.Status, c.message())
		}
		for _, want := range []string{"node ccm-node-", "in zone zone-c running) was deleted: expected it kept, since its instance exists"} {
			if !strings.Contains(c.Failure.Message, want) {
				t.Errorf("failure message lacks %q:\n%s", want, c.Failure.Message)
			}
		}
	}
	if !found {
		t.Errorf("no spec matching %q in the report", spec)
	}
}

// run --seed orders the specs by that seed: ginkgo is given it, the run
// prints how to repeat it, and metadata.json records it.
func TestIntegrationSeed(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := referenceProfile(t, t.TempDir(), nil, nil)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts,
		"--cluster-dir", testbin.SharedCluster(t), "--label-filter", "Zones && ReleaseBlocking", "--seed", "4242")
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
	}
	for _, want := range []string{"specs in the order of seed 4242 (--seed 4242 runs them in this order again)", "Random Seed: 4242"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, tail(res.stdout, 40))
		}
	}
	if seed := readMetadata(t, artifacts)["seed"]; seed != "4242" {
		t.Errorf("metadata.json: seed %v, want \"4242\"", seed)
	}
}
