// Package kind is the kind backend: each run gets a new kind cluster (one
// control plane and the profile's workers, real kubelets with
// --cloud-provider=external) made with the sigs.k8s.io/kind library's
// docker provider from a node image built offline (kind/nodeimage), and
// deleted at the run's end (docs/kind.md).
//
// Floor: a cluster backend. It stands on framework/cluster, the leaves and
// reports/prow (for the names of its metadata keys); the commands choose it.
package kind

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kinderrors "sigs.k8s.io/kind/pkg/errors"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/internal/command"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
	"github.com/ccm-conformance/ccm-conformance/kind/nodeimage"
	"github.com/ccm-conformance/ccm-conformance/labels"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// BackendName is what kind clusters report as their backend.
const BackendName = labels.BackendKind

// Defaults of Options.
const (
	// DefaultNodesTimeout bounds the wait, after kind returns, for every
	// node to register and get its podCIDR.
	DefaultNodesTimeout = 3 * time.Minute
	// DefaultReadyTimeout bounds Ready's wait for every node to be Ready.
	DefaultReadyTimeout = 3 * time.Minute
	// DefaultPollInterval is how often those waits look.
	DefaultPollInterval = time.Second
	// clusterNamePrefix starts every cluster's name (and its Docker
	// network's), so that leftovers are easy to find.
	clusterNamePrefix = "ccmc-"
	// dockerTimeout bounds one short docker command of the backend.
	dockerTimeout = time.Minute
)

// Environment variables read by Options.
const (
	// EnvPrivileged overrides Options.Privileged: auto, on or fallback.
	EnvPrivileged = "CCM_CONFORMANCE_KIND_PRIVILEGED"
	// EnvNodeImage names a node image to use instead of building one.
	EnvNodeImage = "CCM_CONFORMANCE_KIND_NODE_IMAGE"
)

// Docker labels kind puts on its node containers.
const kindClusterLabel = "io.x-k8s.kind.cluster"

// Options configure the backend. Every field has a default.
type Options struct {
	// NodeImage is the node image to run. Default $CCM_CONFORMANCE_KIND_NODE_IMAGE,
	// else the image nodeimage.Resolve picks (published, or built) with
	// NodeImageOptions. A named image must hold etcd EtcdImageTag and
	// CoreDNS CoreDNSImageTag.
	NodeImage string
	// EtcdImageTag is the etcd image tag of a named NodeImage. Default
	// nodeimage.EtcdImageTag(nodeimage.DefaultEtcdVersion).
	EtcdImageTag string
	// CoreDNSImageTag is the CoreDNS image tag of a named NodeImage.
	// Default nodeimage.DefaultCoreDNSVersion.
	CoreDNSImageTag string
	// NodeImageOptions configure the build of the node image; Progress
	// defaults to the run's.
	NodeImageOptions nodeimage.Options
	// Privileged: default $CCM_CONFORMANCE_KIND_PRIVILEGED, else PrivilegedAuto.
	Privileged Privileged
	// ClusterName: default "ccmc-" and 8 random hex digits.
	ClusterName string
	// Docker is the docker CLI. Default "docker" on PATH.
	Docker string
	// NodesTimeout: default DefaultNodesTimeout.
	NodesTimeout time.Duration
	// ReadyTimeout: default DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// PollInterval: default DefaultPollInterval.
	PollInterval time.Duration
	// Getenv: default os.Getenv.
	Getenv func(string) string
	// RecordDir holds a record of each cluster made and its owner
	// process, so that a later run deletes what a killed one left
	// (sweep.go). Default <cache root>/kind/clusters.
	RecordDir string
}

func (o Options) withDefaults() (Options, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.NodeImage == "" {
		o.NodeImage = o.Getenv(EnvNodeImage)
	}
	if o.EtcdImageTag == "" {
		o.EtcdImageTag = nodeimage.EtcdImageTag(nodeimage.DefaultEtcdVersion)
	}
	if o.CoreDNSImageTag == "" {
		o.CoreDNSImageTag = nodeimage.DefaultCoreDNSVersion
	}
	if o.Privileged == "" {
		o.Privileged = Privileged(o.Getenv(EnvPrivileged))
	}
	switch o.Privileged {
	case "":
		o.Privileged = PrivilegedAuto
	case PrivilegedAuto, PrivilegedOn, PrivilegedFallback:
	default:
		return o, fmt.Errorf("kind privileged mode %q: want %s, %s or %s", o.Privileged, PrivilegedAuto, PrivilegedOn, PrivilegedFallback)
	}
	if o.ClusterName == "" {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return o, err
		}
		o.ClusterName = clusterNamePrefix + hex.EncodeToString(b[:])
	}
	if o.Docker == "" {
		o.Docker = "docker"
	}
	if o.NodesTimeout <= 0 {
		o.NodesTimeout = DefaultNodesTimeout
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RecordDir == "" {
		root, err := k8sbin.CacheRoot(o.Getenv)
		if err != nil {
			return o, err
		}
		o.RecordDir = filepath.Join(root, "kind", "clusters")
	}
	return o, nil
}

// Backend returns the backend that creates a kind cluster for each run
// and deletes it at the run's end.
func Backend(opts Options) cluster.Backend { return backend{opts: opts} }

type backend struct{ opts Options }

func (backend) Name() string         { return BackendName }
func (backend) SimulatesNodes() bool { return false }

// Cluster is a kind cluster of one run.
type Cluster struct {
	opts       Options
	name       string
	dir        string
	kubeconfig string
	config     *rest.Config
	realDocker string
	wrapperDir string // "" when kind runs unchanged
	image      nodeimage.Image
	privileged string // why --privileged was not used, or ""
	pods       []string
	provider   *kindcluster.Provider
	progress   io.Writer
	workers    int
	// cloudRoutesPods: no static routes between the nodes (StartInput.CloudRoutesPods).
	cloudRoutesPods bool
	hostIP          string // the gateway of the cluster's Docker network

	stopOnce sync.Once
	stopErr  error
}

var (
	_ cluster.Cluster          = (*Cluster)(nil)
	_ cluster.Finisher         = (*Cluster)(nil)
	_ cluster.LogExporter      = (*Cluster)(nil)
	_ cluster.PodNetworks      = (*Cluster)(nil)
	_ cluster.Describer        = (*Cluster)(nil)
	_ cluster.Networked        = (*Cluster)(nil)
	_ cluster.ImageLoader      = (*Cluster)(nil)
	_ cluster.ControlPlaneHost = (*Cluster)(nil)
)

func (b backend) Start(ctx context.Context, in cluster.StartInput) (cluster.Cluster, error) {
	opts, err := b.opts.withDefaults()
	if err != nil {
		return nil, &cluster.InputError{Err: err}
	}
	progress := in.Progress
	if progress == nil {
		progress = io.Discard
	}
	cfg, err := clusterConfig(clusterConfigInput{Workers: in.Nodes, IPFamilies: in.IPFamilies, EtcdImageTag: opts.EtcdImageTag, CoreDNSImageTag: opts.CoreDNSImageTag})
	if err != nil {
		return nil, &cluster.InputError{Err: fmt.Errorf("kind: %w", err)}
	}
	realDocker, err := exec.LookPath(opts.Docker)
	if err != nil {
		return nil, fmt.Errorf("kind: the docker CLI: %w", err)
	}
	c := &Cluster{opts: opts, name: opts.ClusterName, dir: in.Dir, realDocker: realDocker, progress: progress, workers: in.Nodes, cloudRoutesPods: in.CloudRoutesPods}
	c.kubeconfig = filepath.Join(in.Dir, "kubeconfig")
	if err := os.MkdirAll(in.Dir, 0o755); err != nil {
		return nil, err
	}

	if opts.NodeImage != "" {
		c.image = nodeimage.Image{Tag: opts.NodeImage, EtcdImageTag: opts.EtcdImageTag, CoreDNSImageTag: opts.CoreDNSImageTag, Source: nodeimage.SourceNamed}
	} else {
		nio := opts.NodeImageOptions
		if nio.Progress == nil {
			nio.Progress = progress
		}
		if nio.Getenv == nil {
			nio.Getenv = opts.Getenv
		}
		if nio.KubernetesVersion == "" {
			nio.KubernetesVersion = in.KubernetesVersion
		}
		img, err := nodeimage.Resolve(ctx, nio)
		if err != nil {
			return nil, fmt.Errorf("kind: %w", err)
		}
		c.image = img
		cfg, _ = clusterConfig(clusterConfigInput{Workers: in.Nodes, IPFamilies: in.IPFamilies, EtcdImageTag: img.EtcdImageTag, CoreDNSImageTag: img.CoreDNSImageTag})
	}
	pods, _ := subnets(cfg.Networking.IPFamily)
	c.pods = pods

	useFallback := opts.Privileged == PrivilegedFallback
	if opts.Privileged == PrivilegedAuto {
		ok, why, err := probePrivileged(ctx, realDocker, c.image.Tag)
		if err != nil {
			return nil, fmt.Errorf("kind: %w", err)
		}
		if !ok {
			useFallback = true
			c.privileged = why
		}
	}
	if useFallback {
		if c.privileged == "" {
			c.privileged = "fallback chosen by " + EnvPrivileged + " or Options.Privileged"
		}
		if c.wrapperDir, err = writeWrapper(filepath.Join(in.Dir, "docker-wrapper"), realDocker); err != nil {
			return nil, fmt.Errorf("kind: %w", err)
		}
		fmt.Fprintf(progress, "kind: Docker refuses --privileged here (%s): node containers run with %s instead, through a docker wrapper on kind's PATH (docs/kind.md)\n",
			c.privileged, strings.Join(FallbackRunArgs(), " "))
	}

	raw, err := configYAML(cfg)
	if err == nil {
		err = os.WriteFile(filepath.Join(in.Dir, "kind-config.yaml"), raw, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("kind: writing its configuration: %w", err)
	}
	if err := sweep(ctx, opts.RecordDir, realDocker, progress); err != nil {
		fmt.Fprintf(progress, "kind: %v\n", err)
	}
	if err := recordCluster(opts.RecordDir, c.name); err != nil {
		return nil, fmt.Errorf("kind: recording cluster %s in %s: %w", c.name, opts.RecordDir, err)
	}
	c.provider = kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(newLogger(progress)))
	start := time.Now()
	fmt.Fprintf(progress, "kind: creating cluster %s (1 control plane, %d workers) from %s\n", c.name, in.Nodes, c.image.Tag)
	err = c.withEnv(func() error {
		return c.provider.Create(c.name,
			kindcluster.CreateWithV1Alpha4Config(cfg),
			kindcluster.CreateWithNodeImage(c.image.Tag),
			kindcluster.CreateWithKubeconfigPath(c.kubeconfig),
			kindcluster.CreateWithRetain(false),
			kindcluster.CreateWithDisplayUsage(false),
			kindcluster.CreateWithDisplaySalutation(false))
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("kind: creating cluster %s: %w%s", c.name, err, outputTail(err)), c.Stop(context.WithoutCancel(ctx)))
	}
	if err := c.afterCreate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("kind: cluster %s: %w", c.name, err), c.Stop(context.WithoutCancel(ctx)))
	}
	fmt.Fprintf(progress, "kind: cluster %s is up in %s (kubeconfig %s)\n", c.name, time.Since(start).Round(time.Second), c.kubeconfig)
	return c, nil
}

// afterCreate reads the kubeconfig, waits for the nodes to register and
// get their podCIDRs, and gives each node its CNI configuration and routes.
func (c *Cluster) afterCreate(ctx context.Context) error {
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	c.config = config
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	if c.hostIP, err = c.networkGateway(ctx); err != nil {
		return err
	}
	want := 1 + c.workers
	var nodes []corev1.Node
	err = poll(ctx, c.opts.PollInterval, c.opts.NodesTimeout, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		nodes = list.Items
		if len(nodes) < want {
			return false, nil
		}
		for _, n := range nodes {
			if len(n.Spec.PodCIDRs) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d nodes with podCIDRs (saw %d): %w", want, len(nodes), err)
	}
	var routed []routedNode
	for _, n := range nodes {
		ips, err := c.containerIPs(ctx, n.Name)
		if err != nil {
			return err
		}
		routed = append(routed, routedNode{Name: n.Name, PodCIDRs: n.Spec.PodCIDRs, IPs: ips})
		conf, err := cniConfig(n.Spec.PodCIDRs)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		if err := c.dockerExec(ctx, n.Name, strings.NewReader(string(conf)), "sh", "-c", "mkdir -p /etc/cni/net.d && cat > "+CNIConfigPath); err != nil {
			return err
		}
	}
	if c.cloudRoutesPods {
		fmt.Fprintf(c.progress, "kind: no static routes between the nodes' pod networks: the cloud's routes carry pod traffic (cluster.podRoutes: cloud)\n")
		return nil
	}
	routes, err := nodeRoutes(routed)
	if err != nil {
		return err
	}
	for node, rs := range routes {
		for _, r := range rs {
			if err := c.dockerExec(ctx, node, nil, r...); err != nil {
				return err
			}
		}
	}
	return nil
}

// outputTail is the last lines of the output of the command behind an
// error of the kind library (kubeadm's, say), which kind only logs at a
// debug level.
func outputTail(err error) string {
	re := kindexec.RunErrorForError(err)
	if re == nil || len(re.Output) == 0 {
		return ""
	}
	return "\nlast lines of its output:\n  " + strings.Join(command.Tail(string(re.Output), command.TailLines), "\n  ")
}

// containerIPs are a node container's addresses on its Docker network.
func (c *Cluster) containerIPs(ctx context.Context, node string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.realDocker, "inspect", "--format",
		"{{range .NetworkSettings.Networks}}{{.IPAddress}} {{.GlobalIPv6Address}} {{end}}", node).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("docker inspect %s: %v: %s", node, err, strings.TrimSpace(string(out)))
	}
	return strings.Fields(string(out)), nil
}

// networkGateway is the IPv4 gateway of the cluster's Docker network: the
// host's address on it, which every node reaches.
func (c *Cluster) networkGateway(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.realDocker, "network", "inspect", "--format",
		"{{range .IPAM.Config}}{{.Gateway}} {{end}}", c.name).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker network inspect %s: %v: %s", c.name, err, strings.TrimSpace(string(out)))
	}
	for _, gw := range strings.Fields(string(out)) {
		if ip := net.ParseIP(gw); ip != nil && ip.To4() != nil {
			return gw, nil
		}
	}
	return "", fmt.Errorf("docker network %s has no IPv4 gateway (saw %q)", c.name, strings.TrimSpace(string(out)))
}

// LoadImage saves image from the Docker engine and imports it into every
// node's containerd (kind's image loading, without a registry).
func (c *Cluster) LoadImage(ctx context.Context, image string) error {
	start := time.Now()
	archive := filepath.Join(c.dir, "image-load.tar")
	defer os.Remove(archive)
	saveCtx, cancel := context.WithTimeout(ctx, 5*dockerTimeout)
	defer cancel()
	if out, err := exec.CommandContext(saveCtx, c.realDocker, "save", "--output", archive, image).CombinedOutput(); err != nil {
		return fmt.Errorf("docker save %s: %v: %s", image, err, strings.TrimSpace(string(out)))
	}
	var size int64
	if info, err := os.Stat(archive); err == nil {
		size = info.Size()
	}
	return c.withEnv(func() error {
		nodes, err := c.provider.ListInternalNodes(c.name)
		if err != nil {
			return fmt.Errorf("listing the nodes of %s: %w", c.name, err)
		}
		fmt.Fprintf(c.progress, "kind: loading image %s (%.1f MB) into %d nodes\n", image, float64(size)/1e6, len(nodes))
		for _, n := range nodes {
			if err := ctx.Err(); err != nil {
				return err
			}
			f, err := os.Open(archive)
			if err != nil {
				return err
			}
			err = nodeutils.LoadImageArchive(n, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("loading image %s into node %s: %w%s", image, n.String(), err, outputTail(err))
			}
		}
		fmt.Fprintf(c.progress, "kind: image %s loaded in %s\n", image, time.Since(start).Round(100*time.Millisecond))
		return nil
	})
}

// dockerExec runs args in a node container.
func (c *Cluster) dockerExec(ctx context.Context, node string, stdin io.Reader, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	full := append([]string{"exec", "-i", node}, args...)
	cmd := exec.CommandContext(ctx, c.realDocker, full...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker %s: %v: %s", strings.Join(full, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// snapshotterEnv chooses the node's containerd snapshotter in kind's
// entrypoint.
const snapshotterEnv = "KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER"

// envMu serializes the kind library calls that need the docker wrapper on
// PATH and the cluster's own Docker network: both are read from the
// process's environment.
var envMu sync.Mutex

// withEnv runs f with the cluster's environment: its Docker network
// (KIND_EXPERIMENTAL_DOCKER_NETWORK, so that deleting the cluster can
// delete its network too), the overlayfs snapshotter unless the caller
// chose one, and, on the fallback, the docker wrapper first on PATH.
func (c *Cluster) withEnv(f func() error) error {
	envMu.Lock()
	defer envMu.Unlock()
	restore := map[string]*string{}
	set := func(k, v string) {
		if old, ok := os.LookupEnv(k); ok {
			restore[k] = &old
		} else {
			restore[k] = nil
		}
		os.Setenv(k, v)
	}
	set("KIND_EXPERIMENTAL_DOCKER_NETWORK", c.name)
	// kind passes this variable from its own environment to each node
	// (docker run -e NAME), which hides the node image's value when it is
	// unset here; see nodeimage's dockerImportChanges.
	if os.Getenv(snapshotterEnv) == "" {
		set(snapshotterEnv, "overlayfs")
	}
	if c.wrapperDir != "" {
		set("PATH", c.wrapperDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	defer func() {
		for k, v := range restore {
			if v == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *v)
			}
		}
	}()
	return f()
}

func (c *Cluster) Backend() string            { return BackendName }
func (c *Cluster) Kubeconfig() string         { return c.kubeconfig }
func (c *Cluster) RESTConfig() *rest.Config   { return rest.CopyConfig(c.config) }
func (c *Cluster) ClusterCIDRs() []string     { return append([]string(nil), c.pods...) }
func (c *Cluster) Name() string               { return c.name }
func (c *Cluster) HostIP() string             { return c.hostIP }
func (c *Cluster) NodeImage() nodeimage.Image { return c.image }

// Metadata says which node image ran and whether the privileged fallback
// did.
func (c *Cluster) Metadata() map[string]string {
	m := map[string]string{
		prow.MetaKindVersion:         nodeimage.KindVersion,
		prow.MetaKindCluster:         c.name,
		prow.MetaKindNodeImage:       c.image.Tag,
		prow.MetaKindNodeImageSource: string(c.image.Source),
		prow.MetaKindPrivileged:      "true",
		prow.MetaKindPodRoutes:       "backend",
	}
	if c.cloudRoutesPods {
		m[prow.MetaKindPodRoutes] = "cloud"
	}
	if c.image.ID != "" {
		m[prow.MetaKindNodeImageID] = c.image.ID
	}
	if c.wrapperDir != "" {
		m[prow.MetaKindPrivileged] = "false"
		m[prow.MetaKindPrivilegedFallback] = strings.Join(FallbackRunArgs(), " ") + " (docker refused --privileged: " + c.privileged + ")"
	}
	return m
}

// Ready waits until every node is Ready (their CNI is configured).
func (c *Cluster) Ready(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return err
	}
	var notReady []string
	err = poll(ctx, c.opts.PollInterval, c.opts.ReadyTimeout, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		notReady = notReady[:0]
		for _, n := range list.Items {
			if !nodeReady(n) {
				notReady = append(notReady, n.Name)
			}
		}
		return len(list.Items) > c.workers && len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("kind cluster %s: nodes not Ready: %v: %w", c.name, notReady, err)
	}
	return c.waitForKubeProxy(ctx, client)
}

// kubeProxyHealthzPort is where kube-proxy serves /healthz on every node
// (its healthzBindAddress, 0.0.0.0:10256 by default).
const kubeProxyHealthzPort = "10256"

// waitForKubeProxy waits until kubeadm's kube-proxy DaemonSet has a ready
// pod on every node and each node's kube-proxy answers 200 on /healthz
// at the node container's address, from the host, where the cloud's load balancers send traffic from. Until
// then a node port answers nothing: on a busy machine kube-proxy came up
// minutes after its node turned Ready, and the data path specs that ran
// first saw their load balancers' connections closed.
func (c *Cluster) waitForKubeProxy(ctx context.Context, client kubernetes.Interface) error {
	started := time.Now()
	fmt.Fprintf(c.progress, "kind: waiting for kube-proxy on every node\n")
	hc := &http.Client{Timeout: 2 * time.Second}
	var waiting string
	err := poll(ctx, c.opts.PollInterval, c.opts.ReadyTimeout, func(ctx context.Context) (bool, error) {
		ds, err := client.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, "kube-proxy", metav1.GetOptions{})
		if err != nil {
			waiting = "DaemonSet kube-system/kube-proxy: " + err.Error()
			return false, nil
		}
		st := ds.Status
		if want := int32(1 + c.workers); st.DesiredNumberScheduled < want || st.NumberReady < st.DesiredNumberScheduled {
			waiting = fmt.Sprintf("DaemonSet kube-system/kube-proxy: %d of %d pods ready (%d nodes)", st.NumberReady, st.DesiredNumberScheduled, want)
			return false, nil
		}
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			waiting = "listing nodes: " + err.Error()
			return false, nil
		}
		for _, n := range nodes.Items {
			ips, err := c.containerIPs(ctx, n.Name)
			if err != nil {
				return false, err
			}
			addr := firstIPv4(ips)
			if addr == "" {
				return false, fmt.Errorf("node %s: no IPv4 address on its Docker network (%v)", n.Name, ips)
			}
			url := "http://" + net.JoinHostPort(addr, kubeProxyHealthzPort) + "/healthz"
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return false, err
			}
			resp, err := hc.Do(req)
			if err != nil {
				waiting = fmt.Sprintf("node %s: kube-proxy's %s: %v", n.Name, url, err)
				return false, nil
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				waiting = fmt.Sprintf("node %s: kube-proxy's %s answered %s", n.Name, url, resp.Status)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kind cluster %s: kube-proxy not ready (%s): %w", c.name, waiting, err)
	}
	fmt.Fprintf(c.progress, "kind: kube-proxy ready on every node after %s\n", time.Since(started).Round(100*time.Millisecond))
	return nil
}

// firstIPv4 is the first IPv4 address of ips (kube-proxy's /healthz
// listens on 0.0.0.0), "" if there is none.
func firstIPv4(ips []string) string {
	for _, a := range ips {
		if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
			return a
		}
	}
	return ""
}

func nodeReady(n corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ExportLogs copies the nodes' logs (kind's export: journal, kubelet,
// containerd, pods' logs, container inspection) into dir. The node image
// has no crictl (it is not in Debian bookworm and not built here), so
// kind's `crictl images` listing is left out without an error.
func (c *Cluster) ExportLogs(_ context.Context, dir string) error {
	err := c.withEnv(func() error { return c.provider.CollectLogs(c.name, dir) })
	return withoutCrictl(err)
}

// withoutCrictl drops, from an error of kind's log export, the failures of
// its crictl commands.
func withoutCrictl(err error) error {
	if err == nil {
		return nil
	}
	all := kinderrors.Errors(err)
	if all == nil {
		all = []error{err}
	}
	var kept []error
	for _, e := range all {
		if re := kindexec.RunErrorForError(e); re != nil && slices.Contains(re.Command, "crictl") {
			continue
		}
		kept = append(kept, e)
	}
	return errors.Join(kept...)
}

// Stop deletes the cluster's containers, their volumes and its Docker
// network. It is safe to call more than once, and after a failed Start.
func (c *Cluster) Stop(context.Context) error {
	c.stopOnce.Do(func() {
		var errs []error
		if c.provider != nil {
			if err := c.withEnv(func() error { return c.provider.Delete(c.name, c.kubeconfig) }); err != nil {
				errs = append(errs, fmt.Errorf("kind: deleting cluster %s: %w", c.name, err))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		defer cancel()
		if out, err := exec.CommandContext(ctx, c.realDocker, "network", "rm", c.name).CombinedOutput(); err != nil &&
			!networkGone(string(out)) {
			errs = append(errs, fmt.Errorf("kind: docker network rm %s: %v: %s", c.name, err, strings.TrimSpace(string(out))))
		}
		if c.wrapperDir != "" {
			os.RemoveAll(c.wrapperDir)
		}
		if len(errs) == 0 {
			os.Remove(recordPath(c.opts.RecordDir, c.name))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// networkGone says whether `docker network rm` failed only because the
// network does not exist (kind's create failed before making it).
func networkGone(output string) bool {
	o := strings.ToLower(output)
	return strings.Contains(o, "no such network") || strings.Contains(o, "not found")
}

// poll calls done every interval until it reports true, its error, ctx
// ends or timeout passes.
func poll(ctx context.Context, interval, timeout time.Duration, done func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := done(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// ControlPlaneNode is the control-plane node's name (and its container's):
// kind names it <cluster>-control-plane.
func (c *Cluster) ControlPlaneNode() string { return c.name + "-control-plane" }

// StaticPodDir is kubeadm's static pod directory, which kind's kubelets
// read.
func (c *Cluster) StaticPodDir() string { return "/etc/kubernetes/manifests" }

// WriteNodeFile writes a file into the control-plane node's container
// through docker exec: into a temporary name first, then renamed, so the
// kubelet never reads half a manifest.
func (c *Cluster) WriteNodeFile(ctx context.Context, path string, content []byte, mode uint32) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("node file %q: want an absolute path", path)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	script := fmt.Sprintf("set -e; mkdir -p %[1]s; umask 077; cat > %[2]s; chmod %[3]o %[2]s; mv -f %[2]s %[4]s",
		shellQuote(filepath.Dir(path)), shellQuote(tmp), mode&0o7777, shellQuote(path))
	if err := c.dockerExec(ctx, c.ControlPlaneNode(), bytes.NewReader(content), "sh", "-c", script); err != nil {
		return fmt.Errorf("writing %s on node %s: %w", path, c.ControlPlaneNode(), err)
	}
	return nil
}

// RemoveNodePath removes a file or directory on the control-plane node.
func (c *Cluster) RemoveNodePath(ctx context.Context, path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) == "/" {
		return fmt.Errorf("node path %q: want an absolute path below /", path)
	}
	if err := c.dockerExec(ctx, c.ControlPlaneNode(), nil, "rm", "-rf", "--", path); err != nil {
		return fmt.Errorf("removing %s on node %s: %w", path, c.ControlPlaneNode(), err)
	}
	return nil
}
