package kind

import (
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

func TestClusterConfig(t *testing.T) {
	cfg, err := clusterConfig(clusterConfigInput{Workers: 2, IPFamilies: []string{"IPv4"}, EtcdImageTag: "3.6.16-0"})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, n := range cfg.Nodes {
		roles = append(roles, string(n.Role))
	}
	if got := strings.Join(roles, ","); got != "control-plane,worker,worker" {
		t.Errorf("nodes %s, want control-plane,worker,worker", got)
	}
	if !cfg.Networking.DisableDefaultCNI {
		t.Error("the default CNI (kindnetd, not built here) is not disabled")
	}
	if cfg.Networking.IPFamily != v1alpha4.IPv4Family || cfg.Networking.PodSubnet != PodSubnetIPv4 || cfg.Networking.ServiceSubnet != ServiceSubnetIPv4 {
		t.Errorf("networking %+v", cfg.Networking)
	}
	patches := strings.Join(cfg.KubeadmConfigPatches, "\n---\n")
	for _, want := range []string{"kind: KubeletConfiguration\nfailCgroupV1: false", "kind: ClusterConfiguration\netcd:\n  local:\n    imageTag: \"3.6.16-0\""} {
		if !strings.Contains(patches, want) {
			t.Errorf("merge patches lack %q:\n%s", want, patches)
		}
	}
	// Each JSON 6902 patch must parse as a list of operations on the
	// kubeadm v1beta4 kind it names.
	type op struct {
		Op    string
		Path  string
		Value any
	}
	got := map[string][]op{}
	for _, p := range cfg.KubeadmConfigPatchesJSON6902 {
		if p.Group != "kubeadm.k8s.io" || p.Version != "v1beta4" {
			t.Errorf("patch targets %s/%s, want kubeadm.k8s.io/v1beta4", p.Group, p.Version)
		}
		var ops []op
		if err := yaml.Unmarshal([]byte(p.Patch), &ops); err != nil {
			t.Fatalf("patch of %s: %v\n%s", p.Kind, err, p.Patch)
		}
		got[p.Kind] = ops
	}
	external := map[string]any{"name": "cloud-provider", "value": "external"}
	checks := []struct {
		kind, path string
		value      any
	}{
		{"ClusterConfiguration", "/controllerManager/extraArgs/-", external},
		{"InitConfiguration", "/nodeRegistration/kubeletExtraArgs/-", external},
		{"InitConfiguration", "/skipPhases/-", "addon/coredns"},
		{"JoinConfiguration", "/nodeRegistration/kubeletExtraArgs/-", external},
	}
	for _, c := range checks {
		found := false
		for _, o := range got[c.kind] {
			if o.Op == "add" && o.Path == c.path && equalValue(o.Value, c.value) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no add of %v at %s; patches: %+v", c.kind, c.value, c.path, got[c.kind])
		}
	}
	if _, err := configYAML(cfg); err != nil {
		t.Fatal(err)
	}
}

func equalValue(a, b any) bool {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok != bok {
		return false
	}
	if !aok {
		return a == b
	}
	if len(am) != len(bm) {
		return false
	}
	for k, v := range am {
		if bm[k] != v {
			return false
		}
	}
	return true
}

func TestClusterConfigIPFamilies(t *testing.T) {
	tests := []struct {
		families      []string
		family        v1alpha4.ClusterIPFamily
		pods, service string
	}{
		{nil, v1alpha4.IPv4Family, PodSubnetIPv4, ServiceSubnetIPv4},
		{[]string{"IPv6"}, v1alpha4.IPv6Family, PodSubnetIPv6, ServiceSubnetIPv6},
		{[]string{"IPv4", "IPv6"}, v1alpha4.DualStackFamily, PodSubnetIPv4 + "," + PodSubnetIPv6, ServiceSubnetIPv4 + "," + ServiceSubnetIPv6},
		{[]string{"IPv6", "IPv4"}, v1alpha4.DualStackFamily, PodSubnetIPv4 + "," + PodSubnetIPv6, ServiceSubnetIPv4 + "," + ServiceSubnetIPv6},
	}
	for _, tt := range tests {
		cfg, err := clusterConfig(clusterConfigInput{IPFamilies: tt.families, EtcdImageTag: "3.6.16-0"})
		if err != nil {
			t.Fatal(err)
		}
		if n := cfg.Networking; n.IPFamily != tt.family || n.PodSubnet != tt.pods || n.ServiceSubnet != tt.service {
			t.Errorf("%v: got %s %s %s, want %s %s %s", tt.families, n.IPFamily, n.PodSubnet, n.ServiceSubnet, tt.family, tt.pods, tt.service)
		}
	}
	for _, bad := range []clusterConfigInput{
		{IPFamilies: []string{"ipv4"}, EtcdImageTag: "x"},
		{Workers: -1, EtcdImageTag: "x"},
		{},
	} {
		if _, err := clusterConfig(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
