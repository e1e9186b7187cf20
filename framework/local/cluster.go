package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"

	"github.com/ccm-conformance/ccm-conformance/framework/internal/freeport"
	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
)

// Names of the components, as used for their log files and in Components.
const (
	ComponentEtcd              = "etcd"
	ComponentAPIServer         = "kube-apiserver"
	ComponentControllerManager = "kube-controller-manager"
)

// Files and directories under the cluster's Dir.
const (
	kubeconfigFile    = "kubeconfig"
	kcmKubeconfigFile = "kube-controller-manager.kubeconfig"
	pkiDir            = "pki"
	etcdDataDir       = "etcd"
	logsDir           = "logs"
	stateFile         = "state.json"
)

// serviceAccountIssuer is the issuer of the cluster's service-account tokens.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// Component describes one running process of the cluster.
type Component struct {
	// Name is ComponentEtcd, ComponentAPIServer or ComponentControllerManager.
	Name string `json:"name"`
	// PID is its process id; it leads a process group of the same id.
	PID int `json:"pid"`
	// StartTime is when it started, in clock ticks since boot (field 22 of
	// /proc/<pid>/stat), or 0 if unknown. StopDir leaves a pid alone whose
	// start time differs: the pid then belongs to another process.
	StartTime uint64 `json:"startTime,omitempty"`
	// Binary and Args are its command line.
	Binary string   `json:"binary"`
	Args   []string `json:"args"`
	// LogPath is the file its stdout and stderr go to: <Dir>/logs/<Name>.log.
	LogPath string `json:"log"`
	// Ports are the loopback ports it listens on, by use: "client" and
	// "peer" for etcd, "secure" for the others.
	Ports map[string]int `json:"ports"`
}

// Cluster is a running local control plane. Its methods are safe for
// concurrent use.
type Cluster struct {
	opts       Options
	log        logr.Logger
	dir        string
	createdDir bool
	pki        *pki
	serverURL  string
	state      State

	stopOnce sync.Once
	stopErr  error
	procs    []*process // in start order

	// ready yields kube-controller-manager's readiness (see Ready).
	ready       chan error
	cancelReady context.CancelFunc
	readyMu     sync.Mutex
	readyKnown  bool
	readyErr    error
}

// Start starts etcd, kube-apiserver and kube-controller-manager on loopback
// and returns once all three are ready. It first ensures the binaries,
// building them into the cache if needed (see Options.Progress). If any
// component fails, the ones already started are stopped, a temporary Dir is
// removed, and the error (a *ComponentError inside) quotes the failed
// command line and the end of its log.
//
// ctx bounds the start only; the cluster runs until Stop (or StopDir).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("starting the local cluster: %w", err)
	}
	binaries, err := ensureBinaries(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting the local cluster: %w", err)
	}

	c := &Cluster{opts: opts, log: opts.Logger.WithName("local-cluster"), ready: make(chan error, 1)}
	if err := c.makeDir(); err != nil {
		return nil, fmt.Errorf("starting the local cluster: %w", err)
	}
	if err := c.start(ctx, binaries); err != nil {
		rollbackCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.StopGracePeriod+2*killWait)
		defer cancel()
		if stopErr := c.Stop(rollbackCtx); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", stopErr))
		}
		return nil, fmt.Errorf("starting the local cluster: %w", err)
	}
	return c, nil
}

// binaries are the paths of the three executables.
type binaries struct {
	etcd, apiServer, controllerManager string
}

func ensureBinaries(ctx context.Context, o Options) (binaries, error) {
	var b binaries
	req := k8sbin.Request{Version: o.EtcdVersion, CacheDir: o.BinaryCacheDir, Progress: o.Progress}
	etcd, err := k8sbin.EnsureAll(ctx, req, k8sbin.Etcd)
	if err != nil {
		return b, err
	}
	// kube-apiserver and kube-controller-manager share most packages: one
	// go command builds them together.
	req.Version = o.KubernetesVersion
	kube, err := k8sbin.EnsureAll(ctx, req, k8sbin.KubeAPIServer, k8sbin.KubeControllerManager)
	if err != nil {
		return b, err
	}
	return binaries{etcd: etcd[k8sbin.Etcd], apiServer: kube[k8sbin.KubeAPIServer], controllerManager: kube[k8sbin.KubeControllerManager]}, nil
}

// makeDir creates the working directory, or checks that the given one is
// empty.
func (c *Cluster) makeDir() error {
	if c.opts.Dir == "" {
		dir, err := os.MkdirTemp("", "ccm-conformance-local-")
		if err != nil {
			return fmt.Errorf("creating a working directory: %w", err)
		}
		c.dir, c.createdDir = dir, true
		return nil
	}
	dir, err := filepath.Abs(c.opts.Dir)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", c.opts.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating working directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if len(entries) > 0 {
		hint := ""
		if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil {
			hint = " (it holds a cluster's " + stateFile + ": stop that cluster first)"
		}
		return fmt.Errorf("working directory %s is not empty%s", dir, hint)
	}
	c.dir = dir
	return nil
}

func (c *Cluster) start(ctx context.Context, bin binaries) error {
	o := c.opts
	if err := os.MkdirAll(filepath.Join(c.dir, logsDir), 0o755); err != nil {
		return fmt.Errorf("creating the log directory: %w", err)
	}
	serviceIPs, err := firstServiceIPs(o.ServiceCIDRs)
	if err != nil {
		return err
	}
	c.pki, err = newPKI(filepath.Join(c.dir, pkiDir), time.Now(), serviceIPs)
	if err != nil {
		return err
	}
	if err := c.pki.write(); err != nil {
		return err
	}
	ports, err := freeport.Ports(4)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	c.serverURL = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	kcmURL := "https://127.0.0.1:" + strconv.Itoa(kcmPort)

	kubeconfig := filepath.Join(c.dir, kubeconfigFile)
	if err := writeKubeconfig(kubeconfig, c.serverURL, c.pki.ca.cert, c.pki.admin); err != nil {
		return err
	}
	kcmKubeconfig := filepath.Join(c.dir, kcmKubeconfigFile)
	if err := writeKubeconfig(kcmKubeconfig, c.serverURL, c.pki.ca.cert, c.pki.kcm); err != nil {
		return err
	}
	client, err := tlsClient(c.pki.ca.cert, c.pki.admin)
	if err != nil {
		return fmt.Errorf("building a client for readiness checks: %w", err)
	}

	c.state = State{
		FormatVersion:     stateFormatVersion,
		Dir:               c.dir,
		Temporary:         c.createdDir,
		Detached:          o.Detach,
		Kubeconfig:        kubeconfig,
		APIServerURL:      c.serverURL,
		KubernetesVersion: o.KubernetesVersion,
		EtcdVersion:       o.EtcdVersion,
		ClusterCIDRs:      slices.Clone(o.ClusterCIDRs),
		ServiceCIDRs:      slices.Clone(o.ServiceCIDRs),
		StopGracePeriod:   o.StopGracePeriod.String(),

		NodeMonitorGracePeriod: o.NodeMonitorGracePeriod.String(),
	}

	steps := []struct {
		name   string
		binary string
		args   []string
		ports  map[string]int
		ready  func(context.Context) error
	}{
		{ComponentEtcd, bin.etcd, c.etcdArgs(etcdClient, etcdPeer),
			map[string]int{"client": etcdClient, "peer": etcdPeer}, etcdHealthy(client, etcdURL)},
		{ComponentAPIServer, bin.apiServer, append(c.apiServerArgs(etcdURL, apiPort), o.APIServerArgs...),
			map[string]int{"secure": apiPort}, httpOK(client, c.serverURL+"/readyz")},
		{ComponentControllerManager, bin.controllerManager, append(c.controllerManagerArgs(kcmKubeconfig, kcmPort), o.ControllerManagerArgs...),
			map[string]int{"secure": kcmPort}, controllersBuilt(client, kcmURL)},
	}
	for _, s := range steps {
		logPath := filepath.Join(c.dir, logsDir, s.name+".log")
		c.log.V(1).Info("Starting component", "component", s.name, "binary", s.binary, "log", logPath)
		started := time.Now()
		var p *process
		p, err = startProcess(s.name, s.binary, s.args, c.dir, logPath, o.Detach)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
		c.state.Components = append(c.state.Components, Component{
			Name: s.name, PID: p.pid, StartTime: p.startTime, Binary: s.binary,
			Args: slices.Clone(s.args), LogPath: logPath, Ports: s.ports,
		})
		// Written before waiting, so that StopDir finds whatever runs.
		if err := writeState(c.dir, c.state); err != nil {
			return err
		}
		wait := func(ctx context.Context) error {
			if err := waitReady(ctx, p, o.ReadyTimeout, s.ready); err != nil {
				return &ComponentError{Component: s.name, Command: p.commandLine(), LogPath: logPath,
					LogTail: proc.LogTail(logPath, logTailLines), Err: err}
			}
			c.log.V(1).Info("Component ready", "component", s.name, "pid", p.pid, "elapsed", time.Since(started))
			return nil
		}
		if s.name == ComponentControllerManager && o.ReturnWhenAPIServerReady {
			// The caller goes on with the API server; Ready reports on
			// kube-controller-manager. The wait outlives Start's ctx.
			readyCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			c.cancelReady = cancel
			go func() { c.ready <- wait(readyCtx); close(c.ready) }()
			c.log.V(1).Info("Local cluster API server ready", "dir", c.dir, "kubeconfig", kubeconfig, "server", c.serverURL)
			return nil
		}
		if err := wait(ctx); err != nil {
			return err
		}
	}
	close(c.ready)
	c.log.Info("Local cluster ready", "dir", c.dir, "kubeconfig", kubeconfig, "server", c.serverURL)
	return nil
}

// Ready returns once kube-controller-manager is ready, or with its
// *ComponentError if it does not get ready. Without
// Options.ReturnWhenAPIServerReady, Start has waited already and Ready
// returns nil at once. Later calls return the first call's result.
func (c *Cluster) Ready(ctx context.Context) error {
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	if c.readyKnown {
		return c.readyErr
	}
	select {
	case err := <-c.ready:
		c.readyKnown, c.readyErr = true, err
		return err
	case <-ctx.Done():
		return ctx.Err() // not an answer: a later call waits again
	}
}

func (c *Cluster) etcdArgs(clientPort, peerPort int) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	return []string{
		"--name=local",
		"--data-dir=" + filepath.Join(c.dir, etcdDataDir),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=local=" + peer,
		"--initial-cluster-state=new",
		// The data lives as long as the cluster: durability buys nothing.
		"--unsafe-no-fsync=true",
	}
}

func (c *Cluster) apiServerArgs(etcdURL string, port int) []string {
	pki := c.pki.path
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// kube-apiserver refuses to publish a loopback address in the
		// endpoints of the kubernetes Service; nothing in the local cluster
		// reaches it through that Service, so nothing is published.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.dir, pkiDir),
		"--tls-cert-file=" + pki(apiServerCertFile),
		"--tls-private-key-file=" + pki(apiServerKeyFile),
		"--client-ca-file=" + pki(caCertFile),
		"--service-account-key-file=" + pki(serviceAccountPubFile),
		"--service-account-signing-key-file=" + pki(serviceAccountKeyFile),
		"--service-account-issuer=" + serviceAccountIssuer,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + strings.Join(c.opts.ServiceCIDRs, ","),
		"--allow-privileged=true",
		// The aggregation layer, as in a kubeadm cluster: kube-apiserver
		// proxies to aggregated API servers with the front-proxy client
		// certificate, and kube-controller-manager (which reads these
		// settings from kube-system/extension-apiserver-authentication)
		// trusts requests forwarded that way.
		"--requestheader-client-ca-file=" + pki(frontProxyCACertFile),
		"--requestheader-allowed-names=" + frontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + pki(frontProxyCertFile),
		"--proxy-client-key-file=" + pki(frontProxyKeyFile),
	}
}

func (c *Cluster) controllerManagerArgs(kubeconfig string, port int) []string {
	o := c.opts
	pki := c.pki.path
	// A node CIDR mask size for each family of the pod networks only:
	// kube-controller-manager refuses the other family's flag on a
	// single-stack cluster.
	var masks []string
	for _, cidr := range o.ClusterCIDRs {
		if strings.Contains(cidr, ":") {
			masks = append(masks, "--node-cidr-mask-size-ipv6="+strconv.Itoa(o.NodeCIDRMaskSizeIPv6))
		} else {
			masks = append(masks, "--node-cidr-mask-size-ipv4="+strconv.Itoa(o.NodeCIDRMaskSizeIPv4))
		}
	}
	return append([]string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + pki(kcmServerCertFile),
		"--tls-private-key-file=" + pki(kcmServerKeyFile),
		"--client-ca-file=" + pki(caCertFile),
		"--cloud-provider=external",
		// Only the controllers whose work the suites rely on: node IPAM
		// (podCIDRs), node lifecycle (NotReady), the namespace controller
		// and the garbage collector (cleanup), service accounts (pods on
		// real nodes). The other forty take seconds to build and never act
		// on a cluster whose nodes run no pods.
		"--controllers=" + strings.Join(ControllerManagerControllers(), ","),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki(serviceAccountKeyFile),
		"--root-ca-file=" + pki(caCertFile),
		"--cluster-signing-cert-file=" + pki(caCertFile),
		"--cluster-signing-key-file=" + pki(caKeyFile),
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + strings.Join(o.ClusterCIDRs, ","),
		"--service-cluster-ip-range=" + strings.Join(o.ServiceCIDRs, ","),
		"--node-monitor-grace-period=" + o.NodeMonitorGracePeriod.String(),
		"--node-monitor-period=" + (o.NodeMonitorGracePeriod / 5).String(),
	}, masks...)
}

// firstServiceIPs returns the first address of each Service network: the
// ClusterIPs of the kubernetes Service.
func firstServiceIPs(cidrs []string) ([]netip.Addr, error) {
	var ips []netip.Addr
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("service CIDR: %w", err)
		}
		ips = append(ips, p.Masked().Addr().Next())
	}
	return ips, nil
}

// Stop stops kube-controller-manager, kube-apiserver and etcd, in that
// order: SIGTERM to each one's process group, then SIGKILL after
// Options.StopGracePeriod or once ctx ends. It then removes Dir if Start
// created it, or state.json from a given Dir, which keeps the logs. It
// returns every error met; later calls return the first call's result.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		c.stopErr = c.stop(ctx)
	})
	return c.stopErr
}

func (c *Cluster) stop(ctx context.Context) error {
	if c.cancelReady != nil {
		c.cancelReady()
	}
	grace := c.opts.StopGracePeriod
	if c.opts.Disposable {
		grace = 0 // SIGTERM, then SIGKILL at once
	}
	var errs []error
	for _, p := range slices.Backward(c.procs) {
		c.log.V(1).Info("Stopping component", "component", p.name, "pid", p.pid)
		if err := p.stop(ctx, grace); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Keep state.json, so that StopDir can try again.
		return errors.Join(errs...)
	}
	if c.createdDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", c.dir, err))
		}
	} else if err := os.Remove(filepath.Join(c.dir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("removing %s: %w", stateFile, err))
	}
	return errors.Join(errs...)
}

// Kubeconfig returns the path of the admin kubeconfig, <Dir>/kubeconfig.
// It embeds its certificates, so it can be copied elsewhere.
func (c *Cluster) Kubeconfig() string { return c.state.Kubeconfig }

// RESTConfig returns a new client configuration with admin (system:masters)
// credentials.
func (c *Cluster) RESTConfig() *rest.Config {
	return restConfig(c.serverURL, c.pki.ca.cert, c.pki.admin)
}

// APIServerURL returns the https URL of kube-apiserver.
func (c *Cluster) APIServerURL() string { return c.serverURL }

// Dir returns the working directory.
func (c *Cluster) Dir() string { return c.dir }

// KubernetesVersion returns the release of kube-apiserver and
// kube-controller-manager.
func (c *Cluster) KubernetesVersion() string { return c.opts.KubernetesVersion }

// EtcdVersion returns the etcd release.
func (c *Cluster) EtcdVersion() string { return c.opts.EtcdVersion }

// ClusterCIDRs returns the pod networks, IPv4 then IPv6.
func (c *Cluster) ClusterCIDRs() []string { return slices.Clone(c.opts.ClusterCIDRs) }

// ServiceCIDRs returns the Service networks, IPv4 then IPv6.
func (c *Cluster) ServiceCIDRs() []string { return slices.Clone(c.opts.ServiceCIDRs) }

// LogPath returns the log file of a component (ComponentEtcd,
// ComponentAPIServer or ComponentControllerManager):
// <Dir>/logs/<component>.log.
func (c *Cluster) LogPath(component string) string {
	return filepath.Join(c.dir, logsDir, component+".log")
}

// Components returns the running components in start order.
func (c *Cluster) Components() []Component {
	out := make([]Component, len(c.state.Components))
	for i, comp := range c.state.Components {
		comp.Args = slices.Clone(comp.Args)
		comp.Ports = maps.Clone(comp.Ports)
		out[i] = comp
	}
	return out
}

// Binaries are the cached executables a local cluster runs.
type Binaries struct {
	Etcd, APIServer, ControllerManager string
}

// EnsureBinaries builds (or finds in the cache) the executables Start
// would run, without starting anything, so that a slow cold build can be
// done up front with its progress on opts.Progress.
func EnsureBinaries(ctx context.Context, opts Options) (Binaries, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return Binaries{}, err
	}
	b, err := ensureBinaries(ctx, o)
	return Binaries{Etcd: b.etcd, APIServer: b.apiServer, ControllerManager: b.controllerManager}, err
}

// ControllerManagerControllers are the controllers the local cluster's
// kube-controller-manager runs (its --controllers).
func ControllerManagerControllers() []string {
	return []string{"nodeipam", "nodelifecycle", "namespace", "garbagecollector", "serviceaccount", "serviceaccount-token"}
}
