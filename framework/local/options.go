package local

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
	"github.com/ccm-conformance/ccm-conformance/kubeversion"
)

// Defaults of Options.
const (
	// DefaultKubernetesVersion is the Kubernetes release this module is
	// tested with.
	DefaultKubernetesVersion = kubeversion.Pinned
	// DefaultEtcdVersion is the etcd release run with it.
	DefaultEtcdVersion = k8sbin.DefaultEtcdVersion

	DefaultNodeCIDRMaskSizeIPv4 = 24
	DefaultNodeCIDRMaskSizeIPv6 = 64

	// DefaultNodeMonitorGracePeriod is kube-controller-manager's
	// --node-monitor-grace-period: short, so that node-lifecycle specs see a
	// silent node turn NotReady quickly (upstream's default is 50s). The
	// controller looks every fifth of it (--node-monitor-period), and the
	// harness's simulated kubelets renew their heartbeat as often.
	DefaultNodeMonitorGracePeriod = 5 * time.Second

	// DefaultReadyTimeout is how long each component gets to become ready.
	DefaultReadyTimeout = 2 * time.Minute

	// DefaultStopGracePeriod is how long a component gets to exit after
	// SIGTERM before it is killed.
	DefaultStopGracePeriod = 10 * time.Second
)

// DefaultClusterCIDRs returns the default pod networks: one per IP family.
func DefaultClusterCIDRs() []string { return []string{"10.244.0.0/16", "fd00:10:244::/56"} }

// ClusterCIDRsOf returns the default pod networks of the given IP families
// (IPv4, IPv6), IPv4 first: a cluster whose nodes are of one family gets
// pods of that family only, as a single-stack cluster would. No family, or
// none known, gives both.
func ClusterCIDRsOf(families []string) []string {
	var out []string
	if slices.Contains(families, "IPv4") {
		out = append(out, DefaultClusterCIDRs()[0])
	}
	if slices.Contains(families, "IPv6") {
		out = append(out, DefaultClusterCIDRs()[1])
	}
	if len(out) == 0 {
		return DefaultClusterCIDRs()
	}
	return out
}

// DefaultServiceCIDRs returns the default Service networks, one per family.
func DefaultServiceCIDRs() []string { return []string{"10.96.0.0/16", "fd00:10:96::/112"} }

// Options configure Start. The zero value starts a cluster with every default.
type Options struct {
	// KubernetesVersion is the release of kube-apiserver and
	// kube-controller-manager. Default: DefaultKubernetesVersion.
	KubernetesVersion string

	// EtcdVersion is the etcd release. Default: DefaultEtcdVersion.
	EtcdVersion string

	// Dir is the working directory: certificates, kubeconfigs, etcd's data,
	// logs and state.json. It must be empty or not exist yet; Stop leaves it
	// in place. Default: a new temporary directory, which Stop removes.
	Dir string

	// ClusterCIDRs are the pod networks kube-controller-manager allocates
	// node podCIDRs from (--cluster-cidr): an IPv4 network, an IPv6
	// network, or both in that order (the API server and the Service
	// networks stay dual-stack either way). Default: DefaultClusterCIDRs();
	// the local backend passes ClusterCIDRsOf the profile's IP families.
	ClusterCIDRs []string

	// ServiceCIDRs are the Service networks (--service-cluster-ip-range):
	// one IPv4 and one IPv6 network. Default: DefaultServiceCIDRs().
	ServiceCIDRs []string

	// NodeCIDRMaskSizeIPv4 and NodeCIDRMaskSizeIPv6 are the prefix lengths
	// of the podCIDRs given to each node. Defaults:
	// DefaultNodeCIDRMaskSizeIPv4 (24) and DefaultNodeCIDRMaskSizeIPv6 (64).
	NodeCIDRMaskSizeIPv4 int
	NodeCIDRMaskSizeIPv6 int

	// NodeMonitorGracePeriod is how long a node may go without a status
	// update before kube-controller-manager marks it unhealthy.
	// Default: DefaultNodeMonitorGracePeriod (5s).
	NodeMonitorGracePeriod time.Duration

	// APIServerArgs and ControllerManagerArgs are appended to the flags the
	// cluster passes to kube-apiserver and kube-controller-manager; a flag
	// given here overrides the cluster's own. Default: none.
	APIServerArgs         []string
	ControllerManagerArgs []string

	// ReadyTimeout is how long each component gets to become ready.
	// Default: DefaultReadyTimeout.
	ReadyTimeout time.Duration

	// StopGracePeriod is how long Stop lets a component exit after SIGTERM
	// before it sends SIGKILL. Default: DefaultStopGracePeriod.
	StopGracePeriod time.Duration

	// Disposable says that nothing of the cluster is used after Stop: its
	// directory goes with the run that made it, and its logs were copied
	// before. Stop then kills the components at once instead of waiting for
	// kube-apiserver's graceful shutdown (about a second, most of it
	// closing idle connections). Default: false.
	Disposable bool

	// ReturnWhenAPIServerReady makes Start return as soon as kube-apiserver
	// is ready, with kube-controller-manager started but maybe not ready
	// yet, so that the caller can start its own components meanwhile;
	// Cluster.Ready waits for the rest. Default: false (Start waits for all
	// three).
	ReturnWhenAPIServerReady bool

	// Detach starts the components so that they outlive this process, for
	// `ccm-conformance cluster up`: StopDir stops them later from any
	// process. Without Detach they are killed when this process dies.
	// Default: false.
	Detach bool

	// BinaryCacheDir is where binaries built from the Go module proxy are
	// kept. Default: $CCM_CONFORMANCE_CACHE, else
	// os.UserCacheDir()/ccm-conformance. Pre-built binaries can be named by
	// $CCM_CONFORMANCE_KUBE_APISERVER, $CCM_CONFORMANCE_KUBE_CONTROLLER_MANAGER
	// and $CCM_CONFORMANCE_ETCD.
	BinaryCacheDir string

	// Progress receives human-readable progress while binaries are built
	// (a cold build takes minutes). Default: discarded.
	Progress io.Writer

	// Logger receives structured logs; each component's start and
	// readiness are logged at V(1). Default: the zero logr.Logger, which
	// discards; as a run's backend (Backend), the logger in the context
	// its Start is given, which the runner sets to the run's.
	Logger logr.Logger
}

// withDefaults returns o with its defaults filled in, or an error naming the
// first invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = DefaultKubernetesVersion
	}
	if o.EtcdVersion == "" {
		o.EtcdVersion = DefaultEtcdVersion
	}
	if len(o.ClusterCIDRs) == 0 {
		o.ClusterCIDRs = DefaultClusterCIDRs()
	}
	if len(o.ServiceCIDRs) == 0 {
		o.ServiceCIDRs = DefaultServiceCIDRs()
	}
	if o.NodeCIDRMaskSizeIPv4 == 0 {
		o.NodeCIDRMaskSizeIPv4 = DefaultNodeCIDRMaskSizeIPv4
	}
	if o.NodeCIDRMaskSizeIPv6 == 0 {
		o.NodeCIDRMaskSizeIPv6 = DefaultNodeCIDRMaskSizeIPv6
	}
	if o.NodeMonitorGracePeriod == 0 {
		o.NodeMonitorGracePeriod = DefaultNodeMonitorGracePeriod
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.StopGracePeriod <= 0 {
		o.StopGracePeriod = DefaultStopGracePeriod
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}

	clusterV4, clusterV6, err := podNetworks(o.ClusterCIDRs)
	if err != nil {
		return o, err
	}
	if _, _, err := dualStack("ServiceCIDRs", o.ServiceCIDRs); err != nil {
		return o, err
	}
	if clusterV4.IsValid() && (o.NodeCIDRMaskSizeIPv4 < clusterV4.Bits() || o.NodeCIDRMaskSizeIPv4 > 32) {
		return o, fmt.Errorf("NodeCIDRMaskSizeIPv4 %d: want a prefix length between %d (that of %s) and 32",
			o.NodeCIDRMaskSizeIPv4, clusterV4.Bits(), clusterV4)
	}
	if clusterV6.IsValid() && (o.NodeCIDRMaskSizeIPv6 < clusterV6.Bits() || o.NodeCIDRMaskSizeIPv6 > 128) {
		return o, fmt.Errorf("NodeCIDRMaskSizeIPv6 %d: want a prefix length between %d (that of %s) and 128",
			o.NodeCIDRMaskSizeIPv6, clusterV6.Bits(), clusterV6)
	}
	if o.NodeMonitorGracePeriod < 0 {
		return o, fmt.Errorf("NodeMonitorGracePeriod %s: want a positive duration", o.NodeMonitorGracePeriod)
	}
	return o, nil
}

// podNetworks checks the pod networks: one IPv4 network, one IPv6
// network, or both in that order; an absent family is the zero prefix.
func podNetworks(cidrs []string) (v4, v6 netip.Prefix, err error) {
	if len(cidrs) == 2 {
		return dualStack("ClusterCIDRs", cidrs)
	}
	if len(cidrs) != 1 {
		return v4, v6, fmt.Errorf("ClusterCIDRs %q: want an IPv4 network, an IPv6 network, or both (IPv4 first)", cidrs)
	}
	p, err := netip.ParsePrefix(cidrs[0])
	if err != nil {
		return v4, v6, fmt.Errorf("ClusterCIDRs: %w", err)
	}
	if p != p.Masked() {
		return v4, v6, fmt.Errorf("ClusterCIDRs: %s has host bits set; did you mean %s?", cidrs[0], p.Masked())
	}
	if p.Addr().Is4() {
		return p, v6, nil
	}
	if p.Addr().Is4In6() {
		return v4, v6, fmt.Errorf("ClusterCIDRs: %s is an IPv4-mapped network", cidrs[0])
	}
	return v4, p, nil
}

// dualStack checks that cidrs are one IPv4 network followed by one IPv6
// network, each given by its base address.
func dualStack(field string, cidrs []string) (v4, v6 netip.Prefix, err error) {
	if len(cidrs) != 2 {
		return v4, v6, fmt.Errorf("%s %q: want two networks, IPv4 then IPv6 (the local cluster is dual-stack)", field, cidrs)
	}
	var prefixes [2]netip.Prefix
	for i, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return v4, v6, fmt.Errorf("%s: %w", field, err)
		}
		if p != p.Masked() {
			return v4, v6, fmt.Errorf("%s: %s has host bits set; did you mean %s?", field, c, p.Masked())
		}
		prefixes[i] = p
	}
	if !prefixes[0].Addr().Is4() || !prefixes[1].Addr().Is6() || prefixes[1].Addr().Is4In6() {
		return v4, v6, fmt.Errorf("%s %q: want an IPv4 network then an IPv6 network", field, cidrs)
	}
	return prefixes[0], prefixes[1], nil
}
