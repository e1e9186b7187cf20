package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/go-logr/logr"

	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
	"github.com/ccm-conformance/ccm-conformance/labels"
)

// BackendName is what clusters of this package report as their backend.
const BackendName = labels.BackendLocal

// NodeHeartbeatInterval is how often the simulated kubelets on a local
// cluster renew their Lease and Ready condition: a fifth of
// kube-controller-manager's grace period, so that a few late heartbeats
// never make a live node NotReady.
func (c *Cluster) NodeHeartbeatInterval() time.Duration {
	return c.opts.NodeMonitorGracePeriod / 5
}

// Backend returns the backend that starts a new local cluster for each run,
// with opts (Dir, Progress, ReturnWhenAPIServerReady and Disposable are set
// by the run), and stops it at the run's end.
func Backend(opts Options) cluster.Backend { return backend{opts: opts} }

type backend struct{ opts Options }

func (b backend) Name() string { return BackendName }

func (b backend) SimulatesNodes() bool { return true }

func (b backend) Start(ctx context.Context, in cluster.StartInput) (cluster.Cluster, error) {
	opts := b.opts
	opts.Dir = filepath.Join(in.Dir, "cluster")
	opts.Progress = in.Progress
	opts.ReturnWhenAPIServerReady = true
	// The cluster lives in the run's directory, which the run removes, and
	// the run copies its logs before stopping it (ExportLogs).
	opts.Disposable = true
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = in.KubernetesVersion
	}
	if len(opts.ClusterCIDRs) == 0 {
		// Pods of the families the profile's nodes have: a provider whose
		// instances are IPv4 only gets an IPv4 pod network, and its route
		// controller no IPv6 podCIDRs to route.
		opts.ClusterCIDRs = ClusterCIDRsOf(in.IPFamilies)
	}
	if opts.Logger.GetSink() == nil {
		// The run's logger, which the runner puts in the context.
		opts.Logger = logr.FromContextOrDiscard(ctx)
	}
	c, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return runCluster{c}, nil
}

// runCluster is a local cluster as one run sees it.
type runCluster struct{ *Cluster }

var (
	_ cluster.Cluster       = runCluster{}
	_ cluster.NodeSimulator = runCluster{}
	_ cluster.Finisher      = runCluster{}
	_ cluster.LogExporter   = runCluster{}
	_ cluster.PodNetworks   = runCluster{}
	_ cluster.Versioned     = runCluster{}
)

func (runCluster) Backend() string { return BackendName }

func (c runCluster) KubeletVersion() string { return c.KubernetesVersion() }

func (c runCluster) ExportLogs(_ context.Context, dir string) error {
	return copyComponentLogs(c.Components(), dir)
}

func (c runCluster) KubernetesCommit() string { return buildCommit(c.Components()) }

// buildCommit is the git commit of the kube-apiserver binary's release as
// the binary cache recorded it (k8sbin.BuildInfo), or "" when unknown.
func buildCommit(components []Component) string {
	for _, comp := range components {
		if comp.Name == ComponentAPIServer {
			bi, err := k8sbin.ReadBuildInfo(comp.Binary)
			if err != nil {
				return ""
			}
			return bi.Commit
		}
	}
	return ""
}

// Attach returns the backend of a local cluster that already runs (one
// started with `ccm-conformance cluster up`, or by a test for several
// runs): each run simulates its nodes on it as on a new one, and leaves it
// running. Runs on one attached cluster must not overlap.
func Attach(dir string) cluster.Backend { return attachBackend{dir: dir} }

type attachBackend struct{ dir string }

func (b attachBackend) Name() string { return BackendName }

func (b attachBackend) SimulatesNodes() bool { return true }

func (b attachBackend) Start(ctx context.Context, in cluster.StartInput) (cluster.Cluster, error) {
	cluster.NoteVersionIgnored(in)
	state, err := ReadState(b.dir)
	if err != nil {
		return nil, &cluster.InputError{Err: fmt.Errorf("--cluster-dir %s: %w", b.dir, err)}
	}
	for _, comp := range state.Components {
		if !sameProcess(comp) {
			return nil, fmt.Errorf("local cluster in %s: %s (pid %d) is not running; start the cluster again", b.dir, comp.Name, comp.PID)
		}
	}
	config, err := clientcmd.BuildConfigFromFlags("", state.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("local cluster in %s: %w", b.dir, err)
	}
	grace := DefaultNodeMonitorGracePeriod
	if state.NodeMonitorGracePeriod != "" {
		if d, err := time.ParseDuration(state.NodeMonitorGracePeriod); err == nil {
			grace = d
		}
	}
	return &attached{state: state, config: config, grace: grace}, nil
}

// attached is a local cluster that outlives the run.
type attached struct {
	state  *State
	config *rest.Config
	grace  time.Duration
}

var (
	_ cluster.NodeSimulator = (*attached)(nil)
	_ cluster.PodNetworks   = (*attached)(nil)
	_ cluster.LogExporter   = (*attached)(nil)
	_ cluster.Versioned     = (*attached)(nil)
)

func (a *attached) Backend() string                      { return BackendName }
func (a *attached) Kubeconfig() string                   { return a.state.Kubeconfig }
func (a *attached) RESTConfig() *rest.Config             { return rest.CopyConfig(a.config) }
func (a *attached) Stop(context.Context) error           { return nil }
func (a *attached) KubeletVersion() string               { return a.state.KubernetesVersion }
func (a *attached) ClusterCIDRs() []string               { return slices.Clone(a.state.ClusterCIDRs) }
func (a *attached) NodeHeartbeatInterval() time.Duration { return a.grace / 5 }

func (a *attached) KubernetesCommit() string { return buildCommit(a.state.Components) }

func (a *attached) ExportLogs(_ context.Context, dir string) error {
	return copyComponentLogs(a.state.Components, dir)
}

func copyComponentLogs(components []Component, dir string) error {
	var errs []error
	for _, comp := range components {
		data, err := os.ReadFile(comp.LogPath)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, comp.Name+".log"), data, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
