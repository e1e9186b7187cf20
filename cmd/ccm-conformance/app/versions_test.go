package app

import (
	"os"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/kubeversion"
)

// TestVersionsAcceptedAlike runs kubeversion's table through every place a
// user writes a Kubernetes version: matrix --kubernetes, the profile's
// cluster.kubernetesVersion, run --kubernetes-version and lkg check
// --kubernetes (the last two share checkVersionFlag). Each must accept and
// refuse the same strings, release candidates included.
func TestVersionsAcceptedAlike(t *testing.T) {
	base, err := os.ReadFile("../../../providers/profiles/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kubeversion.Cases {
		t.Run(c.In, func(t *testing.T) {
			_, err := parseVersions(c.In)
			if (err == nil) != c.OK {
				t.Errorf("matrix --kubernetes %q: error %v, want ok=%v", c.In, err, c.OK)
			}
			if err := checkVersionFlag("--kubernetes-version", c.In); (err == nil) != c.OK {
				t.Errorf("run --kubernetes-version / lkg check --kubernetes %q: error %v, want ok=%v", c.In, err, c.OK)
			}
			if c.In == "" {
				return // an empty cluster.kubernetesVersion means "the pinned one"
			}
			// profile.Parse validates: its error is the profile's refusal.
			p, err := profile.Parse([]byte(strings.Replace(string(base), "cluster:\n", "cluster:\n  kubernetesVersion: \""+c.In+"\"\n", 1)), "../../../providers/profiles")
			if (err == nil) != c.OK {
				t.Errorf("profile cluster.kubernetesVersion %q: error %v, want ok=%v", c.In, err, c.OK)
			}
			if err == nil && p.Cluster.KubernetesVersion != c.In {
				t.Errorf("the test's profile edit did not take: cluster.kubernetesVersion = %q", p.Cluster.KubernetesVersion)
			}
			if err != nil && !strings.Contains(err.Error(), "kubernetesVersion") {
				t.Errorf("profile with cluster.kubernetesVersion %q refused for another reason: %v", c.In, err)
			}
		})
	}
}
