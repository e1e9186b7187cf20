package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// The node manager topology (reference-node-manager.yaml): the central CCM
// runs without its cloud-node-controller, and a reference-node-manager
// beside each simulated node initializes that node. Every node spec the
// profile claims passes, and the logs show who did the work: each node
// manager initialized its own node, the CCM's node controller never ran.
// "node manager with wrong zone" in the defect table shows a broken node
// manager failing the zone spec under a correct CCM.
func TestIntegrationNodeManagerTopology(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := testbin.ReferenceNodeManagerProfile(t, t.TempDir(), binDir, nil, nil)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts, "--cluster-dir", testbin.SharedCluster(t))
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 60), res.stderr)
	}
	passed := map[string]bool{}
	for _, c := range readJUnit(t, artifacts) {
		if c.Status == "passed" {
			passed[c.Name] = true
		} else if c.Status != "skipped" {
			t.Errorf("spec %q: %s, want passed: %s", c.Name, c.Status, c.message())
		}
	}
	checkPassed(t, passed, "with node managers",
		"removes the uninitialized taint from every node and sets a providerID",
		"labels each node with its instance's zone and region",
		"labels each node with its instance type",
		"initializes a node that joins while the CCM runs",
		"updates a node's addresses when the cloud changes them",
	)
	meta := readMetadata(t, artifacts)
	if bin, _ := meta[prow.MetaNodeManagerBinary].(string); bin != filepath.Join(binDir, "reference-node-manager") {
		t.Errorf("metadata.json: %s %v, want %s", prow.MetaNodeManagerBinary, meta[prow.MetaNodeManagerBinary], filepath.Join(binDir, "reference-node-manager"))
	}
	if digest, _ := meta[prow.MetaNodeManagerDigest].(string); !strings.HasPrefix(digest, "sha256:") {
		t.Errorf("metadata.json: %s %v, want sha256:...", prow.MetaNodeManagerDigest, meta[prow.MetaNodeManagerDigest])
	}
	logs := filepath.Join(artifacts, "artifacts", "logs")
	for _, node := range []string{"ccm-node-1", "ccm-node-2", "ccm-node-3"} {
		paths := logFiles(logs, "node-manager-"+node+".log")
		initialized := false
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			initialized = initialized || strings.Contains(string(data), "Successfully initialized node "+node)
		}
		if !initialized {
			t.Errorf("no node manager log in %s says it initialized %s (logs %v)", logs, node, paths)
		}
	}
	ccmLogs := logFiles(logs, "ccm.log")
	if len(ccmLogs) == 0 {
		t.Fatalf("no ccm.log under %s", logs)
	}
	for _, p := range ccmLogs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"cloud-node-controller" is disabled`) || strings.Contains(string(data), "Successfully initialized node") {
			t.Errorf("%s: the central CCM ran its own node controller", p)
		}
	}
}

// logFiles are the component logs of that name in a run's logs directory:
// at its top in a run of one lane, in lane-N/ in a run of several.
func logFiles(logs, name string) []string {
	top, _ := filepath.Glob(filepath.Join(logs, name))
	lanes, _ := filepath.Glob(filepath.Join(logs, "lane-*", name))
	return append(top, lanes...)
}
