package kind

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// Networks of the clusters, per IP family: kind's own defaults, written
// out so that the harness knows them (cluster.PodNetworks) and the static
// CNI configuration can route them.
const (
	PodSubnetIPv4     = "10.244.0.0/16"
	PodSubnetIPv6     = "fd00:10:244::/56"
	ServiceSubnetIPv4 = "10.96.0.0/16"
	ServiceSubnetIPv6 = "fd00:10:96::/112"
)

// NodeMonitorGracePeriod is kube-controller-manager's
// --node-monitor-grace-period on kind: how long a node's kubelet may be
// silent before the node turns NotReady (upstream's default is 50s). Twice
// the kubelet's lease renewal (10s), so that a stopped node container is
// seen within half a minute, and a busy kubelet is not taken for one.
const NodeMonitorGracePeriod = "20s"

// kubeadmAPI is the kubeadm configuration API kind v0.33.0 writes for
// Kubernetes v1.36 and later; the JSON patches below target it.
const kubeadmAPI = "v1beta4"

// clusterConfigInput is what the kind configuration depends on.
type clusterConfigInput struct {
	// Workers is the number of worker nodes (besides one control plane).
	Workers int
	// IPFamilies: "IPv4", "IPv6" or both; default IPv4.
	IPFamilies []string
	// EtcdImageTag is the tag of the etcd image the node image holds;
	// "" leaves kubeadm's own (a published kindest/node image holds it).
	EtcdImageTag string
	// CoreDNSImageTag is the tag of the CoreDNS image the node image
	// holds; "" leaves kubeadm's own.
	CoreDNSImageTag string
}

// ipFamily maps the profile's IP families to kind's.
func ipFamily(families []string) (v1alpha4.ClusterIPFamily, error) {
	var v4, v6 bool
	for _, f := range families {
		switch f {
		case "IPv4":
			v4 = true
		case "IPv6":
			v6 = true
		default:
			return "", fmt.Errorf("IP family %q: want IPv4 or IPv6", f)
		}
	}
	switch {
	case v4 && v6:
		return v1alpha4.DualStackFamily, nil
	case v6:
		return v1alpha4.IPv6Family, nil
	}
	return v1alpha4.IPv4Family, nil
}

// subnets returns the pod and Service networks of a family, in kind's
// comma-separated form (IPv4 first when dual-stack).
func subnets(family v1alpha4.ClusterIPFamily) (pods, services []string) {
	switch family {
	case v1alpha4.IPv6Family:
		return []string{PodSubnetIPv6}, []string{ServiceSubnetIPv6}
	case v1alpha4.DualStackFamily:
		return []string{PodSubnetIPv4, PodSubnetIPv6}, []string{ServiceSubnetIPv4, ServiceSubnetIPv6}
	}
	return []string{PodSubnetIPv4}, []string{ServiceSubnetIPv4}
}

// argPatch is a JSON 6902 patch (in YAML) that appends name=value to the
// kubeadm v1beta4 argument list at path (v1beta4 lists arguments as
// {name, value} items, so a merge patch would replace kind's own).
func argPatch(path, name, value string) string {
	return fmt.Sprintf("- op: add\n  path: %s/-\n  value:\n    name: %q\n    value: %q\n", path, name, value)
}

// kindProviderIDIndex is where kind v0.33.0's kubeadm templates put the
// kubelet's provider-id in nodeRegistration.kubeletExtraArgs (after
// node-ip, before node-labels), in both InitConfiguration and
// JoinConfiguration.
const kindProviderIDIndex = 1

// dropProviderIDPatch is a JSON 6902 patch (in YAML) that removes kind's
// --provider-id=kind://docker/<cluster>/<node> from the kubelet's
// arguments. That ID names kind's own cloud (cloud-provider-kind); the
// CCM under test must set the node's providerID from its cloud, and a
// spec must see it do so. The test operation makes the patch, and with it
// kind's create, fail should a kind version put another argument there.
func dropProviderIDPatch() string {
	path := fmt.Sprintf("/nodeRegistration/kubeletExtraArgs/%d", kindProviderIDIndex)
	return fmt.Sprintf("- op: test\n  path: %s/name\n  value: provider-id\n- op: remove\n  path: %s\n", path, path)
}

// clusterConfig returns the kind configuration of a cluster: one control
// plane and in.Workers workers; kubelets and kube-controller-manager with
// --cloud-provider=external, so that new nodes carry the uninitialized
// taint until the CCM under test initializes them; kubelets without
// kind's own provider ID, which the CCM sets; no default CNI (the
// backend writes a static one per node); kubeadm pointed at the etcd and
// CoreDNS images of a node image built here; kubelet allowed on cgroup v1.
func clusterConfig(in clusterConfigInput) (*v1alpha4.Cluster, error) {
	if in.Workers < 0 {
		return nil, fmt.Errorf("%d workers", in.Workers)
	}
	family, err := ipFamily(in.IPFamilies)
	if err != nil {
		return nil, err
	}
	pods, services := subnets(family)
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Networking: v1alpha4.Networking{
			IPFamily:          family,
			PodSubnet:         strings.Join(pods, ","),
			ServiceSubnet:     strings.Join(services, ","),
			DisableDefaultCNI: true,
			KubeProxyMode:     v1alpha4.IPTablesProxyMode,
		},
		Nodes: []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}},
		KubeadmConfigPatches: []string{
			"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\n",
		},
		KubeadmConfigPatchesJSON6902: externalCloudProviderPatches(
			argPatch("/controllerManager/extraArgs", "node-monitor-grace-period", NodeMonitorGracePeriod)),
	}
	if in.EtcdImageTag != "" {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches,
			fmt.Sprintf("apiVersion: kubeadm.k8s.io/%s\nkind: ClusterConfiguration\netcd:\n  local:\n    imageTag: %q\n", kubeadmAPI, in.EtcdImageTag))
	}
	if in.CoreDNSImageTag != "" {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches,
			fmt.Sprintf("apiVersion: kubeadm.k8s.io/%s\nkind: ClusterConfiguration\ndns:\n  imageTag: %q\n", kubeadmAPI, in.CoreDNSImageTag))
	}
	for i := 0; i < in.Workers; i++ {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.WorkerRole})
	}
	return cfg, nil
}

// externalCloudProviderPatches are the kubeadm patches that make a kind
// cluster wait for a CCM: --cloud-provider=external on
// kube-controller-manager and on every kubelet (so that new nodes carry
// the uninitialized taint), and kind's own provider ID removed from the
// kubelets (the CCM sets it). extraKCM is appended to the
// ClusterConfiguration patch.
func externalCloudProviderPatches(extraKCM string) []v1alpha4.PatchJSON6902 {
	return []v1alpha4.PatchJSON6902{
		{Group: "kubeadm.k8s.io", Version: kubeadmAPI, Kind: "ClusterConfiguration",
			Patch: argPatch("/controllerManager/extraArgs", "cloud-provider", "external") + extraKCM},
		{Group: "kubeadm.k8s.io", Version: kubeadmAPI, Kind: "InitConfiguration",
			Patch: dropProviderIDPatch() + argPatch("/nodeRegistration/kubeletExtraArgs", "cloud-provider", "external")},
		{Group: "kubeadm.k8s.io", Version: kubeadmAPI, Kind: "JoinConfiguration",
			Patch: dropProviderIDPatch() + argPatch("/nodeRegistration/kubeletExtraArgs", "cloud-provider", "external")},
	}
}

// StockConfig is the kind configuration for a cluster made from a stock
// kind node image (kindest/node, as `kubetest2 kind --config FILE` or
// `kind create cluster --config FILE` makes it) that a CCM deployed into
// it must initialize: the external cloud provider patches of the harness's
// own clusters, and nothing else of theirs (kind's CNI, CoreDNS and
// kubeadm's etcd stay). The patches name kubeadm's v1beta4 API and the
// place of kind v0.33.0's --provider-id; with another kind, `kind create`
// fails on the patch's test rather than leave kind's provider ID in place.
func StockConfig(workers int, ipFamilies []string) ([]byte, error) {
	if workers < 0 {
		return nil, fmt.Errorf("%d workers", workers)
	}
	family, err := ipFamily(ipFamilies)
	if err != nil {
		return nil, err
	}
	cfg := &v1alpha4.Cluster{
		TypeMeta:                     v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Networking:                   v1alpha4.Networking{IPFamily: family},
		Nodes:                        []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}},
		KubeadmConfigPatchesJSON6902: externalCloudProviderPatches(""),
	}
	for i := 0; i < workers; i++ {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.WorkerRole})
	}
	return configYAML(cfg)
}

// configYAML renders a kind configuration, for the run's directory.
func configYAML(cfg *v1alpha4.Cluster) ([]byte, error) { return yaml.Marshal(cfg) }
