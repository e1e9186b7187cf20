package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func skipUnlessIntegration(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a local cluster and the reference provider")
	}
}

// The reference provider passes every spec its profile selects.
func TestIntegrationConformanceReference(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := referenceProfile(t, t.TempDir(), nil, nil)
	res := runHarness(t, []string{"TMPDIR=" + t.TempDir()}, "run", "--provider", profile, "--artifacts", artifacts)
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
	}
	cases := readJUnit(t, artifacts)
	if len(cases) == 0 {
		t.Fatal("the JUnit report has no specs")
	}
	for _, c := range cases {
		if c.Status != "passed" {
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

// A CCM with a defect makes exactly the specs that check that behaviour
// fail, with a message naming the node and the expected and seen values;
// every other spec still passes.
func TestIntegrationDefectsFailTheRightSpecs(t *testing.T) {
	skipUnlessIntegration(t)
	tests := []struct {
		defects string
		// failing maps a substring of each spec that must fail to
		// substrings its failure message must contain.
		failing map[string][]string
	}{
		{
			defects: "wrong-zone,stale-addresses",
			failing: map[string][]string{
				"labels each node with its instance's zone and region":   {"node ccm-node-", "topology.kubernetes.io/zone", "-wrong"},
				"updates a node's addresses when the cloud changes them": {"node ccm-node-", "expected addresses", "198.51.100.", "saw"},
			},
		},
		{
			defects: "no-ipv6",
			failing: map[string][]string{
				"gives each node the addresses its instance has in the cloud":      {"node ccm-node-", "expected addresses", "InternalIP=fd00:64::", "saw"},
				"makes an IPv6 node IP the node's only InternalIP":                 {"node ccm-node-", "uninitialized taint", "fd00:66::"},
				"makes a dual-stack IPv4,IPv6 node IP pair the node's InternalIPs": {"node ccm-node-", "uninitialized taint"},
				"makes a dual-stack IPv6,IPv4 node IP pair the node's InternalIPs": {"node ccm-node-", "uninitialized taint"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.defects, func(t *testing.T) {
			artifacts := t.TempDir()
			profile := referenceProfile(t, t.TempDir(), []string{"--reference-defects=" + tt.defects}, nil)
			res := runHarness(t, []string{"TMPDIR=" + t.TempDir()}, "run", "--provider", profile, "--artifacts", artifacts)
			if res.code != 1 {
				t.Fatalf("exit code %d, want 1 (a spec failed)\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
			}
			matched := map[string]bool{}
			for _, c := range readJUnit(t, artifacts) {
				var wantFail string
				for spec := range tt.failing {
					if strings.Contains(c.Name, spec) {
						wantFail = spec
					}
				}
				if wantFail == "" {
					if c.Status != "passed" {
						t.Errorf("spec %q: %s, want passed (the defect is elsewhere)", c.Name, c.Status)
					}
					continue
				}
				matched[wantFail] = true
				if c.Status != "failed" || c.Failure == nil {
					t.Errorf("spec %q: %s, want failed", c.Name, c.Status)
					continue
				}
				msg := c.Failure.Message + "\n" + c.Failure.Text
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
		})
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
