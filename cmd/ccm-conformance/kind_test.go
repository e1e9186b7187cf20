package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// dockerVolumes lists the Docker engine's volumes that no container uses.
// A volume a run leaves behind is one of them; the volumes of the other
// kind test's cluster, which runs beside this one, are in use.
func dockerVolumes(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("docker", "volume", "ls", "--quiet", "--filter", "dangling=true").CombinedOutput()
	if err != nil {
		t.Fatalf("docker volume ls: %v: %s", err, out)
	}
	return strings.Fields(string(out))
}

// readMetadata reads a run directory's artifacts/metadata.json.
func readMetadata(t *testing.T, artifacts string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatalf("metadata.json: %v\n%s", err, data)
	}
	return meta
}

// checkNoKindLeft fails t if anything of the kind cluster the run's
// metadata names is left in Docker: its node containers, its network, or
// a volume made during the run (kind's nodes have anonymous ones).
func checkNoKindLeft(t *testing.T, artifacts string, volumesBefore []string) {
	t.Helper()
	meta := readMetadata(t, artifacts)
	name, _ := meta[prow.MetaKindCluster].(string)
	if !strings.HasPrefix(name, "ccmc-") {
		t.Fatalf("metadata.json names no kind cluster (%s %v)", prow.MetaKindCluster, meta[prow.MetaKindCluster])
	}
	if left := testbin.ContainersLabelled(t, "io.x-k8s.kind.cluster", name); len(left) > 0 {
		t.Errorf("containers of kind cluster %s left after the run: %v", name, left)
	}
	if out, err := exec.Command("docker", "network", "ls", "--quiet", "--filter", "name=^"+name+"$").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("docker network %s left after the run (%v): %s", name, err, out)
	}
	for _, v := range newVolumesThatStay(t, volumesBefore) {
		t.Errorf("docker volume %s, made during the run, left after it", v)
	}
}

// volumeSettle is how long a new dangling volume may take to go before it
// counts as left behind.
const volumeSettle = time.Minute

// newVolumesThatStay returns the dangling volumes not in before that are
// still there after volumeSettle. The other kind test's cluster may be
// being deleted at the same moment: a node container's anonymous volume
// dangles for an instant between the container's removal and its own, and
// it belongs to that run, not this one. A volume a run leaks never goes.
func newVolumesThatStay(t *testing.T, before []string) []string {
	t.Helper()
	deadline := time.Now().Add(volumeSettle)
	for {
		var left []string
		for _, v := range dockerVolumes(t) {
			if !slices.Contains(before, v) {
				left = append(left, v)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(2 * time.Second)
	}
}

// The whole suite against the reference CCM's image on a new kind cluster:
// the harness loads the image into the nodes and deploys it, the cloud
// adopts the node containers, the data path runs through echo server pods.
// Every spec that can run on real nodes passes; the rest skip, saying why;
// nothing of the cluster is left in Docker. Run as root, it is the run of
// docs/providers.md's GitHub Actions example, played step by step as
// GitHub's runner would (runGitHubActionsExample): the node image as root,
// the run as a user of its own.
//
// It runs in parallel with TestIntegrationKindDefectsFailTheRightSpecs once
// the package's other tests are done: two kind clusters side by side, whose
// waits (cluster creation, image loads, a node's grace period) overlap.
func TestIntegrationKindConformance(t *testing.T) {
	skipUnlessDocker(t)
	t.Parallel()
	image, id := testbin.ReferenceCCMImage(t)
	echo, _ := testbin.EchoServerImage(t)
	volumes := dockerVolumes(t)
	var res result
	var artifacts string
	if os.Geteuid() == 0 {
		res, artifacts = runGitHubActionsExample(t, image, echo)
	} else {
		t.Log("not root: the GitHub Actions example's steps (sudo, then a user of their own) are not played; the run is the harness's own")
		artifacts = t.TempDir()
		profile := testbin.ReferenceKindProfile(t, t.TempDir(), binDir, image, nil, nil)
		res = runHarness(t, nil, "run", "--backend", "kind", "--provider", profile, "--echo-image", echo, "--artifacts", artifacts)
	}
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
	}
	checkNoKindLeft(t, artifacts, volumes)
	passed := map[string]bool{}
	for _, c := range readJUnit(t, artifacts) {
		switch c.Status {
		case "passed":
			passed[c.Name] = true
		case "skipped":
			if c.Skipped == nil || c.Skipped.Message == "" {
				t.Errorf("spec %q: skipped without a reason", c.Name)
			}
		default:
			t.Errorf("spec %q: %s, want passed", c.Name, c.Status)
		}
	}
	// The session affinity spec needs both workers; when the node
	// lifecycle specs ran first and took one away, it skipped, saying so
	// (a skip without a reason fails above). The defect case runs it on
	// both workers.
	// What kind shows that the local cluster cannot: these must have run.
	checkPassed(t, passed, "on kind",
		"removes the uninitialized taint from every node and sets a providerID",
		"gives each node the addresses its instance has in the cloud",
		"delivers TCP traffic sent to the ingress to a backend",
		"delivers UDP traffic sent to the ingress to a backend",
		"sends traffic only to the Service's ready endpoints",
		"with externalTrafficPolicy Local, sends traffic only to the node with the endpoint",
		"keeps serving through the load balancer while the backing Deployment rolls",
		"deletes the Node of an instance deleted in the cloud",
		"gives every node's podCIDRs a cloud route to that node",
		"carries traffic from the control plane to a pod on every other node over the cloud's routes",
		"taints the Node of a stopped instance as shut down",
	)
	meta := readMetadata(t, artifacts)
	if meta["ccm-image"] != image || meta["ccm-digest"] != id || meta["backend"] != "kind" {
		t.Errorf("metadata.json: backend %v, ccm-image %v, ccm-digest %v; want kind, %s and %s", meta["backend"], meta["ccm-image"], meta["ccm-digest"], image, id)
	}
	// Only the cloud's routes joined the nodes' pod networks, so the
	// routes spec's traffic went over them.
	if meta[prow.MetaKindPodRoutes] != "cloud" {
		t.Errorf("metadata.json: %s %v, want cloud (reference-kind.yaml's cluster.podRoutes)", prow.MetaKindPodRoutes, meta[prow.MetaKindPodRoutes])
	}
	if log, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "logs", "ccm.log")); err != nil || !strings.Contains(string(log), "cloud-controller-manager") {
		t.Errorf("the deployed CCM's log is not in the artifacts (%v):\n%s", err, tail(string(log), 10))
	}
	if res := runHarness(t, nil, "validate-artifacts", artifacts); res.code != 0 {
		t.Errorf("validate-artifacts: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// kindDefectCases are the defects of the reference CCM's image shown on
// kind, a run each. The first: a wrong zone fails the zone spec on the real nodes, a
// wrong node port fails every data path spec, those through real pods
// included (the only specs that run there and nowhere else), and routes
// to the wrong CIDRs fail the route spec and leave the nodes' pods out
// of reach (nothing but the cloud's routes joins their networks), which
// the spec that adds a stray route, waiting for the nodes' routes first,
// sees too.
func kindDefectCases() []defectCase {
	wrongPort := []string{"Service ccm-lb-", "to listen on"}
	return []defectCase{{
		name: "image on kind", defects: "wrong-zone,wrong-node-port,wrong-route-cidr", kind: true,
		labelFilter: "Zones || DataPath || Routes",
		failing: map[string][]string{
			"labels each node with its instance's zone and region":                               {"node ccmc-", "topology.kubernetes.io/zone", "-wrong"},
			"delivers TCP traffic sent to the ingress to a backend":                              wrongPort,
			"delivers UDP traffic sent to the ingress to a backend":                              wrongPort,
			"admits clients inside loadBalancerSourceRanges and turns away the rest":             wrongPort,
			"sends traffic only to the Service's ready endpoints":                                wrongPort,
			"with externalTrafficPolicy Local, sends traffic only to the node with the endpoint": wrongPort,
			"keeps serving through the load balancer while the backing Deployment rolls":         wrongPort,
			"with sessionAffinity ClientIP, sends every connection of one client to one node":    wrongPort,
			"gives every node's podCIDRs a cloud route to that node":                             {"node ccmc-", "expected a cloud route 10.244."},
			// The route controller deletes the wrong routes and makes
			// them again, so the routes the failure names may be none.
			"carries traffic from the control plane to a pod on every other node": {"asked from the control plane through the API server: no answer", "the cloud has routes ["},
			// It waits for the nodes' routes before it adds a stray one.
			"removes a route inside the cluster CIDR that belongs to no node": {"node ccmc-", "expected a cloud route 10.244."},
		},
	}, {
		// A CCM that never gives the cloud the healthCheckNodePort: the
		// driver shows it, and so does real traffic. Without health
		// checks the load balancer keeps sending connections of an
		// externalTrafficPolicy: Local Service to the node without an
		// endpoint, where kube-proxy drops them.
		//
		// And in the same cluster, a CCM that never gives the cloud a
		// Service's sessionAffinity ClientIP: its load balancer keeps
		// spreading the harness's connections over the workers, each with
		// a pod of its own. The missing health checks alone do not fail
		// that spec: every worker it uses has an endpoint.
		name: "health checks and session affinity on kind", defects: "ignore-health-check-port,ignore-session-affinity", kind: true,
		labelFilter: "LoadBalancerHealthCheckNodePort || LoadBalancerSessionAffinity",
		failing: map[string][]string{
			"health-checks the Service's healthCheckNodePort when externalTrafficPolicy is Local": {"Service ccm-lb-", "to health-check node port", "saw 0"},
			"with externalTrafficPolicy Local, sends traffic only to the node with the endpoint":  {"Service ccm-lb-", "/local: expected every probe through", "answered once the health checks pass"},
			"with sessionAffinity ClientIP, sends every connection of one client to one node":     {"Service ccm-lb-", "/affinity (sessionAffinity ClientIP", "to reach one node, saw ["},
		},
	}, {
		// The topologies beside the Deployment, in one cluster: the CCM
		// as a static pod of the control-plane node's kubelet, beside
		// kube-controller-manager and with its kubeconfig
		// (ccm.image.placement: staticPod), without its node controller;
		// reference-node-manager as a DaemonSet on every node
		// (ccm.nodeManager.image) initializing the real nodes. The static
		// pod CCM routes the pod networks as the Deployment does; node
		// managers given a wrong zone fail the zone spec alone.
		name: "static pod CCM and node manager DaemonSet on kind", defects: "wrong-zone", kind: true, nodeManager: true,
		labelFilter: "InstancesV2 || Routes",
		profileEdit: func(s string) string {
			// ccm.image's reference: the node manager's image is "image:".
			return regexp.MustCompile(`(?m)^(    reference: .*\n)`).ReplaceAllString(s, "${1}    placement: staticPod\n")
		},
		failing: map[string][]string{
			"labels each node with its instance's zone and region": {"node ccmc-", "topology.kubernetes.io/zone", "-wrong"},
		},
		afterRun: func(t *testing.T, artifacts string, res result) {
			for _, said := range []string{"as static pod /etc/kubernetes/manifests/cloud-controller-manager.yaml on node ccmc-", "as a DaemonSet on every node"} {
				if !strings.Contains(res.stdout, said) {
					t.Errorf("the run does not say %q:\n%s", said, tail(res.stdout, 40))
				}
			}
			if meta := readMetadata(t, artifacts); !strings.Contains(fmt.Sprint(meta[prow.MetaNodeManagerImage]), "reference-node-manager") || meta[prow.MetaNodeManagerDigest] == nil {
				t.Errorf("metadata.json: %s %v, %s %v; want the node manager's image and digest", prow.MetaNodeManagerImage, meta[prow.MetaNodeManagerImage], prow.MetaNodeManagerDigest, meta[prow.MetaNodeManagerDigest])
			}
			for file, header := range map[string]string{"ccm.log": "== cloud-controller-manager-ccmc-", "node-manager.log": "== cloud-node-manager-"} {
				if log, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "logs", file)); err != nil || !strings.Contains(string(log), header) {
					t.Errorf("logs/%s in the artifacts lacks %q (%v):\n%s", file, header, err, tail(string(log), 10))
				}
			}
		},
	}}
}

// TestIntegrationKindDefectsFailTheRightSpecs runs defective CCMs on kind,
// in parallel with TestIntegrationKindConformance.
func TestIntegrationKindDefectsFailTheRightSpecs(t *testing.T) {
	skipUnlessDocker(t)
	t.Parallel()
	for _, tt := range kindDefectCases() {
		t.Run(tt.name, func(t *testing.T) {
			volumes := dockerVolumes(t)
			check := tt.afterRun
			tt.afterRun = func(t *testing.T, artifacts string, res result) {
				checkNoKindLeft(t, artifacts, volumes)
				if check != nil {
					check(t, artifacts, res)
				}
			}
			runDefectCaseOn(t, tt, "")
		})
	}
}
