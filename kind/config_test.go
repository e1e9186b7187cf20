package kind

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

func TestClusterConfig(t *testing.T) {
	cfg, err := clusterConfig(clusterConfigInput{Workers: 2, IPFamilies: []string{"IPv4"}, EtcdImageTag: "3.6.16-0", CoreDNSImageTag: "v1.14.6"})
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
	for _, want := range []string{"kind: KubeletConfiguration\nfailCgroupV1: false", "kind: ClusterConfiguration\netcd:\n  local:\n    imageTag: \"3.6.16-0\"",
		"kind: ClusterConfiguration\ndns:\n  imageTag: \"v1.14.6\""} {
		if !strings.Contains(patches, want) {
			t.Errorf("merge patches lack %q:\n%s", want, patches)
		}
	}
	// A published node image holds kubeadm's own etcd and CoreDNS: no
	// image patch.
	published, err := clusterConfig(clusterConfigInput{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(published.KubeadmConfigPatches, "\n---\n"); strings.Contains(p, "etcd") || strings.Contains(p, "dns:") || !strings.Contains(p, "failCgroupV1: false") {
		t.Errorf("without etcd and CoreDNS image tags, merge patches:\n%s", p)
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
		{"ClusterConfiguration", "/controllerManager/extraArgs/-", map[string]any{"name": "node-monitor-grace-period", "value": NodeMonitorGracePeriod}},
		{"InitConfiguration", "/nodeRegistration/kubeletExtraArgs/-", external},
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
	// kind's provider ID goes, checked first, from both node
	// registrations: the CCM under test sets the providerID.
	for _, kind := range []string{"InitConfiguration", "JoinConfiguration"} {
		ops := got[kind]
		if len(ops) < 2 || ops[0].Op != "test" || ops[0].Path != "/nodeRegistration/kubeletExtraArgs/1/name" || ops[0].Value != "provider-id" ||
			ops[1].Op != "remove" || ops[1].Path != "/nodeRegistration/kubeletExtraArgs/1" {
			t.Errorf("%s: patch does not start by testing for and removing kind's provider-id: %+v", kind, ops)
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
	} {
		if _, err := clusterConfig(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestKindTemplateHasProviderIDWherePatched reads the kubeadm template of
// the kind module in go.mod: dropProviderIDPatch removes the kubelet
// argument at kindProviderIDIndex, which must be kind's provider-id in
// both node registrations. (The patch's test operation would also stop
// kind's create; this says why before a cluster is made.)
func TestKindTemplateHasProviderIDWherePatched(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kind").Output()
	if err != nil {
		t.Skipf("go list -m sigs.k8s.io/kind: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg/cluster/internal/kubeadm/config.go"))
	if err != nil {
		t.Fatal(err)
	}
	_, v4, ok := strings.Cut(string(src), "const ConfigTemplateBetaV4 = `")
	if !ok {
		t.Fatal("kind's kubeadm package has no ConfigTemplateBetaV4")
	}
	v4, _, _ = strings.Cut(v4, "`")
	var lists [][]string
	lines := strings.Split(v4, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "kubeletExtraArgs:" {
			continue
		}
		var names []string
		for _, item := range lines[i+1:] {
			item = strings.TrimSpace(item)
			if name, ok := strings.CutPrefix(item, "- name: "); ok {
				names = append(names, strings.Trim(name, `"`))
			} else if !strings.HasPrefix(item, "value: ") {
				break
			}
		}
		lists = append(lists, names)
	}
	if len(lists) != 2 {
		t.Fatalf("kind's v1beta4 template has %d kubeletExtraArgs lists, want 2 (init and join): %v", len(lists), lists)
	}
	for _, names := range lists {
		if len(names) <= kindProviderIDIndex || names[kindProviderIDIndex] != "provider-id" {
			t.Errorf("kind's kubelet arguments %v: want provider-id at index %d", names, kindProviderIDIndex)
		}
	}
}

// The configuration for a stock kind node image keeps kind's own CNI,
// CoreDNS and etcd, and has exactly the external cloud provider patches
// of the harness's clusters.
func TestStockConfig(t *testing.T) {
	data, err := StockConfig(2, []string{"IPv4", "IPv6"})
	if err != nil {
		t.Fatal(err)
	}
	var cfg v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if cfg.Kind != "Cluster" || cfg.APIVersion != "kind.x-k8s.io/v1alpha4" || len(cfg.Nodes) != 3 || cfg.Networking.IPFamily != v1alpha4.DualStackFamily {
		t.Errorf("config %+v", cfg)
	}
	if cfg.Networking.DisableDefaultCNI || len(cfg.KubeadmConfigPatches) != 0 || strings.Contains(string(data), "coredns") {
		t.Errorf("the stock configuration changes more than the cloud provider:\n%s", data)
	}
	own, err := clusterConfig(clusterConfigInput{Workers: 2, IPFamilies: []string{"IPv4"}, EtcdImageTag: "3.6.16-0"})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range cfg.KubeadmConfigPatchesJSON6902 {
		if !strings.HasPrefix(own.KubeadmConfigPatchesJSON6902[i].Patch, p.Patch) || p.Kind != own.KubeadmConfigPatchesJSON6902[i].Kind {
			t.Errorf("patch %d (%s) is not the harness's own:\n%s", i, p.Kind, p.Patch)
		}
		if !strings.Contains(p.Patch, "cloud-provider") {
			t.Errorf("patch %d (%s) does not set the external cloud provider", i, p.Kind)
		}
	}
	if _, err := StockConfig(-1, nil); err == nil {
		t.Error("-1 workers: no error")
	}
	if _, err := StockConfig(1, []string{"IPv5"}); err == nil {
		t.Error("IPv5: no error")
	}
}
