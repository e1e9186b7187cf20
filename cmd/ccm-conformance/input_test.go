package main_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// Bad input is reported in one line that names the input, with exit code 2,
// before any cluster is started.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "malformed.yaml")
	if err := os.WriteFile(malformed, []byte("apiVersion: ccm-conformance.dev/v1alpha1\nkind: Profile\nname: x\nccm: {binary: {path: /bin/true}}\ncapabilities: [InstancesV2]\ntimeouts: {nodeInitialize: soon}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingBinary := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, binDir+"/reference-ccm", "/nonexistent/reference-ccm", 1)
	})
	missingMigrationConfig := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, "deploy/leader-migration.yaml", "deploy/no-such-migration.yaml", 1)
	})

	// An unreachable cluster: a kubeconfig pointing at a port nothing
	// listens on.
	deadAddr := net.JoinHostPort("127.0.0.1", freePort(t, "127.0.0.1"))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "https://`+deadAddr+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: dead, context: {cluster: dead, user: u}}]
current-context: dead
`), 0o644); err != nil {
		t.Fatal(err)
	}
	good := referenceProfile(t, t.TempDir(), nil, nil)
	missingNodeManager := testbin.ReferenceNodeManagerProfile(t, t.TempDir(), binDir, nil, func(s string) string {
		return strings.Replace(s, binDir+"/reference-node-manager", "/nonexistent/reference-node-manager", 1)
	})
	nodeManager := testbin.ReferenceNodeManagerProfile(t, t.TempDir(), binDir, nil, nil)

	// A timeout written as a bare number.
	noUnit := filepath.Join(dir, "no-unit.yaml")
	if err := os.WriteFile(noUnit, []byte("apiVersion: ccm-conformance.dev/v1alpha1\nkind: Profile\nname: x\nccm: {binary: {path: /bin/true}}\ncapabilities: [InstancesV2]\ntimeouts: {nodeInitialize: 30}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Cloud drivers that fail the handshake, or lack what the local
	// cluster's simulated machines need.
	withDriver := func(script string) string {
		return referenceProfile(t, t.TempDir(), nil, func(s string) string {
			return strings.Replace(s, "command: ["+binDir+"/reference-cloud-driver]", "command: ["+fakeDriver(t, script)+"]", 1)
		})
	}
	garbageInfo := withDriver(`echo "<html>502 Bad Gateway</html>"`)
	wrongProtocol := withDriver(`echo '{"protocolVersion":"v2","verbs":["instances list"]}'`)
	noCreate := withDriver(`echo '{"protocolVersion":"v1","provider":"x","verbs":["instances list","instance get","instance delete"]}'`)
	noDriver := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		i := strings.Index(s, "cloudDriver:")
		j := strings.Index(s, "capabilities:")
		return s[:i] + s[j:]
	})

	// A CCM image the local Docker engine does not have, and a machine
	// without docker.
	const noImage = "ccm-conformance/no-such-image:never"
	missingImage := testbin.ReferenceImageProfile(t, t.TempDir(), binDir, noImage, nil, nil)
	missingImageWant := []string{missingImage, "ccm.image: image " + noImage}
	if testbin.DockerAvailable() == nil {
		missingImageWant = append(missingImageWant, "not present in the local Docker engine", "make images")
	}
	emptyPath := t.TempDir()

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"missing CCM image", []string{"run", "--provider", missingImage}, missingImageWant},
		{"validate: missing CCM image", []string{"validate-profile", missingImage}, missingImageWant},
		{"no docker for the CCM image", []string{"run", "--provider", missingImage}, []string{missingImage, "ccm.image: image " + noImage, "docker is not on PATH"}},
		{"malformed profile", []string{"run", "--provider", malformed}, []string{malformed, "timeouts.nodeInitialize", `"soon"`}},
		{"timeout without a unit", []string{"run", "--provider", noUnit}, []string{noUnit, "timeouts.nodeInitialize", `"30"`, "without a unit", "30s"}},
		{"cloud driver answers info with garbage", []string{"run", "--provider", garbageInfo},
			[]string{garbageInfo, "cloudDriver", "broke the protocol", `"info" answered with invalid JSON`, "502 Bad Gateway"}},
		{"cloud driver speaks another protocol", []string{"run", "--provider", wrongProtocol}, []string{wrongProtocol, "cloudDriver", `"v2"`}},
		{"cloud driver without instance create on the local cluster", []string{"run", "--provider", noCreate},
			[]string{noCreate, "cloudDriver", "local backend simulates its nodes", `does not list "instance create"`}},
		{"no cloud driver on the local cluster", []string{"run", "--provider", noDriver}, []string{noDriver, "cloudDriver", "the profile has none"}},
		{"validate: missing CCM binary", []string{"validate-profile", missingBinary}, []string{"ccm.binary.path", "/nonexistent/reference-ccm", "no such file"}},
		{"validate: garbage info", []string{"validate-profile", garbageInfo}, []string{garbageInfo, "broke the protocol"}},
		{"list: garbage info", []string{"list", "--provider", garbageInfo}, []string{garbageInfo, "broke the protocol"}},
		{"missing profile", []string{"run", "--provider", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml", "no such file"}},
		{"a Kubernetes version for an existing cluster", []string{"run", "--provider", good, "--kubeconfig", kubeconfig, "--kubernetes-version", "v1.36.3"},
			[]string{"--kubernetes-version", "--kubeconfig", "existing"}},
		{"missing CCM binary", []string{"run", "--provider", missingBinary}, []string{"ccm.binary.path", "/nonexistent/reference-ccm", "no such file"}},
		{"missing node manager binary", []string{"run", "--provider", missingNodeManager}, []string{missingNodeManager, "ccm.nodeManager.path", "/nonexistent/reference-node-manager", "no such file"}},
		{"node manager on kind", []string{"run", "--provider", nodeManager, "--backend", "kind"}, []string{nodeManager, "ccm.nodeManager.path", "kind backend's nodes are its own", "ccm.nodeManager.image, a DaemonSet"}},
		{"list: node manager on kind", []string{"list", "--provider", nodeManager, "--backend", "kind"}, []string{nodeManager, "ccm.nodeManager", "kind backend's nodes are its own"}},
		{"node manager on an existing cluster", []string{"run", "--provider", nodeManager, "--kubeconfig", kubeconfig}, []string{nodeManager, "ccm.nodeManager.path", "nodes are its own"}},
		{"missing leader migration configuration", []string{"run", "--provider", missingMigrationConfig},
			[]string{missingMigrationConfig, "leaderMigration.config", "no-such-migration.yaml", "no such file"}},
		{"unreachable cluster", []string{"run", "--provider", good, "--kubeconfig", kubeconfig}, []string{"unreachable", deadAddr, kubeconfig}},
		{"bad label filter", []string{"run", "--provider", good, "--label-filter", "A &&"}, []string{"--label-filter"}},
		{"no provider flag", []string{"run"}, []string{"provider"}},
		{"unknown command", []string{"frobnicate"}, []string{"frobnicate"}},
		{"validate-driver: missing driver", []string{"validate-driver", "--driver", "/nonexistent/my-driver"}, []string{"cloud driver /nonexistent/my-driver", "no such file"}},
		{"compare-upstream: missing e2e binary", []string{"compare-upstream", "--provider", good, "--backend", "local", "--e2e-binary", filepath.Join(dir, "no-e2e.test")},
			[]string{"--e2e-binary", "no-e2e.test", "no such file"}},
		{"compare-upstream: unknown backend", []string{"compare-upstream", "--provider", good, "--backend", "gke"}, []string{"--backend", `"gke"`}},
		{"compare-upstream: malformed profile", []string{"compare-upstream", "--provider", malformed}, []string{malformed, "timeouts.nodeInitialize"}},
		{"validate-driver: no driver flag", []string{"validate-driver"}, []string{"--driver"}},
		{"validate-driver: missing profile", []string{"validate-driver", "--driver", binDir + "/reference-cloud-driver", "--profile", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			env := []string{"TMPDIR=" + shortTempDir(t)}
			if tt.name == "no docker for the CCM image" {
				env = append(env, "PATH="+emptyPath)
			}
			res := runHarness(t, env, tt.args...)
			if res.code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			// Found before anything started (an unreachable cluster is
			// found as the run reaches for it).
			if tt.name != "unreachable cluster" {
				if strings.Contains(res.stdout, "starting the cluster") {
					t.Errorf("the run started a cluster before finding the bad input:\n%s", res.stdout)
				}
				if d := time.Since(start); d > badInputTime {
					t.Errorf("bad input took %s to find, want under %s", d, badInputTime)
				}
			}
			oneLine(t, res.stderr)
			for _, w := range tt.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr %q does not contain %q", res.stderr, w)
				}
			}
		})
	}
}

// badInputTime is how long finding bad input may take: no cluster starts.
const badInputTime = 10 * time.Second

// fakeDriver writes a cloud driver that runs script for every verb.
func fakeDriver(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-driver")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// validate-profile checks what run checks before anything starts, and
// says what it found.
func TestValidateProfile(t *testing.T) {
	good := referenceProfile(t, t.TempDir(), nil, nil)
	res := runHarness(t, nil, "validate-profile", good)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{"is valid: provider \"reference\"", `cloud driver: provider "reference", protocol v1`} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.stdout)
		}
	}
}

// With a driver that lacks verbs, list marks the specs a run would skip
// for it, as the run would, not only those missing a capability.
func TestListShowsDriverSkips(t *testing.T) {
	verbs := `["instances list","instance get","instance create","instance delete","loadbalancer get","routes list"]`
	profile := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, "command: ["+binDir+"/reference-cloud-driver]",
			"command: ["+fakeDriver(t, `echo '{"protocolVersion":"v1","provider":"partial","verbs":`+verbs+`}'`)+"]", 1)
	})
	res := runHarness(t, nil, "list", "--provider", profile, "--label-filter", "NodeLifecycle || InstancesV2")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{
		`lifts the taint when the instance starts again [NodeLifecycle, ReleaseBlocking] (skipped: cloud driver does not implement "instance stop")`,
		`(skipped: cloud driver does not implement "instance set-addresses")`,
		"sets each node's providerID to its instance's [InstancesV2, ReleaseBlocking]\n",
		" would skip\n",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("list output lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestListShowsLabelsAndSkips(t *testing.T) {
	profile := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, "  - DualStack\n", "", 1)
	})
	res := runHarness(t, nil, "list", "--provider", profile)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stdout, "[NodeIPAnnotation, InstancesV2, NeedsSimulatedNodes, NeedsSimulatedCloud, DualStack] (skipped: missing DualStack)") {
		t.Errorf("list does not mark the DualStack specs as skipped:\n%s", res.stdout)
	}
	if !strings.Contains(res.stdout, "sets each node's providerID to its instance's [InstancesV2, ReleaseBlocking]\n") {
		t.Errorf("list does not show a runnable spec unmarked:\n%s", res.stdout)
	}

	// UDP without mixed protocols, as the AWS CCM's NLBs: upstream lets a
	// CCM refuse a Service with TCP and UDP ports (KEP-1435), so only the
	// mixed spec needs LoadBalancerMixedProtocol; the UDP specs run.
	udpOnly := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, "  - LoadBalancerMixedProtocol\n", "", 1)
	})
	res = runHarness(t, nil, "list", "--provider", udpOnly)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{
		"carries TCP and UDP ports of one Service together [LoadBalancer, LoadBalancerUDP, LoadBalancerMixedProtocol] (skipped: missing LoadBalancerMixedProtocol)\n",
		"carries UDP ports [LoadBalancer, LoadBalancerUDP, ReleaseBlocking]\n",
		"delivers UDP traffic sent to the ingress to a backend [LoadBalancer, DataPath, LoadBalancerUDP]\n",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("list without LoadBalancerMixedProtocol lacks %q:\n%s", want, res.stdout)
		}
	}
}

// list --backend foresees a run on that backend and judges it by the
// verdict's own rules: on kind the node IP specs, which need simulated
// nodes, are marked as not release-blocking there and their capability as
// unjudged; on an existing cluster the specs that watch a node join run on
// a Node the harness registers (the driver creates instances), and the
// route spec that needs the cluster's pod network skips unless the profile
// names it, so such a run is partial until it does.
func TestListForeseesTheVerdictOnEachBackend(t *testing.T) {
	profile := referenceProfile(t, t.TempDir(), nil, nil)
	withPodNetwork := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, "cluster:\n  nodes: 3\n", "cluster:\n  nodes: 3\n  clusterCIDRs: [10.244.0.0/16]\n", 1)
	})
	tests := []struct {
		backend string
		profile string
		want    []string
	}{
		{"local", profile, []string{
			"makes an IPv4 node IP the node's only InternalIP, listed first, keeping other address types [NodeIPAnnotation, InstancesV2, NeedsSimulatedNodes, NeedsSimulatedCloud, ReleaseBlocking]\n",
			"\na run on local can be last-known-good: 30 release-blocking spec(s) would run\n",
		}},
		{"kind", profile, []string{
			"[NodeIPAnnotation, InstancesV2, NeedsSimulatedNodes, NeedsSimulatedCloud, ReleaseBlocking] (not release-blocking here: needs simulated nodes, which the kind backend does not have) (skipped: ",
			"\na run on kind can be last-known-good: ",
			"; no release-blocking spec judges NodeIPAnnotation, IPv6, DualStack there\n",
		}},
		{"kubeconfig", profile, []string{
			"(not release-blocking here: needs simulated nodes and a simulated cloud, which the kubeconfig backend does not have)",
			"\na run on kubeconfig cannot be last-known-good (it would be partial): 1 release-blocking spec(s) of claimed capabilities did not run: [routes] ",
			"removes a route inside the cluster CIDR that belongs to no node and leaves routes outside it alone [Routes, ReleaseBlocking] (skipped: the cluster's IPv4 pod network is unknown: set cluster.clusterCIDRs in the profile)",
		}},
		{"kubeconfig", withPodNetwork, []string{
			"\na run on kubeconfig can be last-known-good: ",
			"; no release-blocking spec judges NodeIPAnnotation, IPv6, DualStack there\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.backend, func(t *testing.T) {
			res := runHarness(t, nil, "list", "--provider", tt.profile, "--backend", tt.backend)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(res.stdout, want) {
					t.Errorf("list --backend %s lacks %q:\n%s", tt.backend, want, res.stdout)
				}
			}
		})
	}
	res := runHarness(t, nil, "list", "--backend", "gke")
	if res.code != 2 || !strings.Contains(res.stderr, `--backend "gke": want one of local, kind, kubeconfig`) {
		t.Errorf("list --backend gke: exit %d, stderr %q; want 2 and the flag named", res.code, res.stderr)
	}
}

// The externalTrafficPolicy Local spec needs health checks of the
// healthCheckNodePort, which not every cloud that provisions load
// balancers does: a profile claiming LoadBalancer alone skips it, naming
// the capability, and still runs the other load balancer specs.
func TestListHealthCheckNodePortIsACapabilityOfItsOwn(t *testing.T) {
	const spec = "health-checks the Service's healthCheckNodePort when externalTrafficPolicy is Local [LoadBalancer, LoadBalancerHealthCheckNodePort, ReleaseBlocking]"
	tests := []struct {
		name     string
		edit     func(string) string
		wantLine string
	}{
		{"claimed", nil, spec + "\n"},
		{"LoadBalancer alone", func(s string) string { return strings.Replace(s, "  - LoadBalancerHealthCheckNodePort\n", "", 1) },
			spec + " (skipped: missing LoadBalancerHealthCheckNodePort)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile := referenceProfile(t, t.TempDir(), nil, tt.edit)
			res := runHarness(t, nil, "list", "--provider", profile, "--label-filter", "LoadBalancer && !DataPath")
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			if !strings.Contains(res.stdout, tt.wantLine) {
				t.Errorf("list output lacks %q:\n%s", tt.wantLine, res.stdout)
			}
			if !strings.Contains(res.stdout, "updates the cloud load balancer when the Service's ports change [LoadBalancer, ReleaseBlocking]\n") {
				t.Errorf("list does not run the other load balancer specs:\n%s", res.stdout)
			}
		})
	}
}

// A run whose every selected spec skipped tested nothing: exit 2, one line
// that says so and why, and a run directory that TestGrid shows as failed
// and the LKG rules class with the environment's failures, never a pass.
// Here the specs that need real pods, on the local cluster's simulated
// nodes.
func TestIntegrationNothingTestedIsNotAPass(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", referenceProfile(t, t.TempDir(), nil, nil),
		"--label-filter", "DataPath && !ReleaseBlocking && !LoadBalancerUDP && !LoadBalancerSourceRanges && !Routes", "--artifacts", artifacts)
	const want = "nothing was tested: all 4 selected specs were skipped; 4 of them: the spec needs real pods behind the load balancer"
	if res.code != 2 || !strings.Contains(res.stderr, want) || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q; want 2 and one line containing %q\nstdout:\n%s", res.code, res.stderr, want, tail(res.stdout, 20))
	}
	finished, err := os.ReadFile(filepath.Join(artifacts, "finished.json"))
	if err != nil || !strings.Contains(string(finished), `"result": "FAILURE"`) {
		t.Errorf("finished.json (%v): %s; want result FAILURE", err, finished)
	}
	specs, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "specs.json"))
	if err != nil || !strings.Contains(string(specs), `"harnessErrorClass": "input"`) || !strings.Contains(string(specs), "nothing was tested") {
		t.Errorf("specs.json (%v) does not record the run as tested nothing (class input):\n%s", err, specs)
	}
	if v := runHarness(t, nil, "validate-artifacts", artifacts); v.code != 0 {
		t.Errorf("validate-artifacts rejects the run directory (exit %d):\n%s%s", v.code, v.stdout, v.stderr)
	}
}
