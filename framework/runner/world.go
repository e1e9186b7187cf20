package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/go-logr/logr"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/cloudside"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Bounds of the world's own steps (the profile's named timeouts bound what
// the CCM and the cloud do, and how long a service gets to be ready).
const (
	// teardownTimeout bounds the whole teardown of a world.
	teardownTimeout = 2 * time.Minute
	// ccmHealthPoll is how often the wait for a CCM's /healthz asks.
	ccmHealthPoll = 100 * time.Millisecond
	// clientQPS and clientBurst limit the harness's requests to the
	// cluster: far above what the specs need, far below what would burden
	// a real cluster's API server.
	clientQPS, clientBurst = 100, 200
	// logPrecision is how finely the world's log lines round durations.
	logPrecision = 100 * time.Millisecond
)

// world is everything one run of the specs needs, brought up in order and
// torn down in reverse: a cluster from the backend (worldcluster.go), the
// profile's services and cloud driver (worldcloud.go), the CCM under test
// (chosen in ccmchoice.go, launched by worldccm.go) and, on clusters
// without machines, the simulated nodes (worldnodes.go). This file
// orchestrates them.
type world struct {
	profile *profile.Profile
	// image is what the Docker engine knows of ccm.image; nil for another
	// kind of CCM.
	image *ccm.ImageInfo
	// ccmBinary is the CCM executable of ccm.binary (CCMExecutable): the
	// profile's path, or the binary built from its module.
	ccmBinary string
	// runID is the run's (RunInfo.RunID); worldName is "" for a run in
	// one world, "lane-N" in a run over lanes. Both name the containers.
	runID     string
	worldName string
	backend   cluster.Backend
	// kubernetesVersion is the run's --kubernetes-version, "" for the
	// profile's (Options.KubernetesVersion).
	kubernetesVersion string
	out               io.Writer
	// log is the run's logger (Options.logger), which the world also
	// hands, through the context, to the backend and the simulated nodes.
	log      logr.Logger
	logDir   string // component logs
	runDir   string // private, removed at the end
	cleanups []cleanup

	// expander is the run's own (services, cloud driver); ccmExpander the
	// main CCM's, instance 0, kept so that a restart gets the same ports.
	expander    *profile.Expander
	ccmExpander *profile.Expander
	cluster     cluster.Cluster
	// emulation is the minor the API server emulates when it is older
	// than its release (emulatedMinor), else "".
	emulation string
	config    *rest.Config
	client    kubernetes.Interface
	driver    *clouddriver.Driver
	watch     *framework.Watch
	// ccm runs the CCM under test (chooseCCM); nil until it is up.
	ccm      ccmLauncher
	machines *framework.Machines
	kubelets *nodes.Pool
	nodes    []string // the simulated nodes registered at setup
	// echoRef is the echo server image to load into nodes that take
	// images; echoImage is the one the data path specs run, or "".
	echoRef, echoImage string
	// ingressNameserver is the profile's loadBalancer.ingressNameserver,
	// expanded: where the probes resolve ingress hostnames; "" for the
	// machine's resolver.
	ingressNameserver string

	// info collects what the world learns about itself for the reports.
	info RunInfo
	// phases records how long each setup step took.
	phases []Phase
}

// Phase is one timed setup step of a world.
type Phase struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration"`
}

type cleanup struct {
	what string
	fn   func(context.Context) error
}

// onTeardown registers fn to run when the world is torn down, in reverse
// order of registration.
func (w *world) onTeardown(what string, fn func(context.Context) error) {
	w.cleanups = append(w.cleanups, cleanup{what, fn})
}

func (w *world) logf(format string, args ...any) {
	w.log.Info(fmt.Sprintf(format, args...))
}

// timed runs step and records its duration as a phase.
func (w *world) timed(name string, step func() error) error {
	start := time.Now()
	err := step()
	w.phases = append(w.phases, Phase{Name: name, Duration: time.Since(start)})
	return err
}

// setUp brings the world up. On error, what came up is torn down by the
// caller's tearDown.
func (w *world) setUp(ctx context.Context) error {
	if err := os.MkdirAll(w.logDir, 0o755); err != nil {
		return &InputError{fmt.Errorf("--artifacts: %w", err)}
	}
	var err error
	w.runDir, err = cloudside.ScratchDir("ccm-conformance-run-")
	if err != nil {
		return &SetupError{Step: "run directory", Err: err}
	}
	w.onTeardown("remove run directory", func(context.Context) error { return os.RemoveAll(w.runDir) })

	if err := w.timed("cluster", func() error { return w.startCluster(ctx) }); err != nil {
		return err
	}
	in := profile.ExpanderInput{RunDir: w.runDir, Kubeconfig: w.cluster.Kubeconfig(), Backend: w.backend.Name()}
	if nw, ok := w.cluster.(cluster.Networked); ok {
		in.ClusterName, in.HostIP = nw.Name(), nw.HostIP()
	}
	w.expander = w.profile.NewExpander(in)
	w.ccmExpander = w.expander.ForInstance(0)
	if err := w.readIngressNameserver(); err != nil {
		return err
	}
	err = w.timed("cloud", func() error {
		for _, s := range w.profile.Services {
			if err := w.startService(ctx, s); err != nil {
				return err
			}
		}
		return w.startDriver(ctx)
	})
	if err != nil {
		return w.blameDriver(err)
	}
	if err := w.timed("ccm", func() error { return w.startCCM(ctx) }); err != nil {
		return err
	}
	if w.profile.Has(profile.DataPath) {
		if err := w.timed("echo image", func() error { return w.giveEchoImage(ctx) }); err != nil {
			return err
		}
	}
	if sim, ok := w.cluster.(cluster.NodeSimulator); ok {
		if err := w.timed("nodes", func() error { return w.registerNodes(ctx, sim) }); err != nil {
			return w.blameDriver(err)
		}
	} else if n := w.profile.Cluster.WindowsNodes; n > 0 {
		w.logf("note: cluster.windowsNodes (%d) is ignored: the %s backend's nodes are its own, not simulated", n, w.backend.Name())
	}
	if fin, ok := w.cluster.(cluster.Finisher); ok {
		err := w.timed("cluster ready", func() error { return fin.Ready(ctx) })
		if err != nil {
			return &SetupError{Step: "cluster", Err: err}
		}
	}
	return nil
}

// startCCM starts the CCM under test in the mode chooseCCM picks.
func (w *world) startCCM(ctx context.Context) error {
	l := chooseCCM(w)
	if err := l.start(ctx); err != nil {
		return err
	}
	w.ccm = l
	return nil
}

// tearDown runs the cleanups in reverse order and returns every error.
func (w *world) tearDown() error {
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	defer cancel()
	var errs []error
	for i := len(w.cleanups) - 1; i >= 0; i-- {
		c := w.cleanups[i]
		if err := c.fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.what, err))
		}
	}
	w.cleanups = nil
	return errors.Join(errs...)
}

// readIngressNameserver expands the profile's
// loadBalancer.ingressNameserver, which must then be an IP:port.
func (w *world) readIngressNameserver() error {
	ns := w.profile.LoadBalancer.IngressNameserver
	if ns == "" {
		return nil
	}
	expanded, err := w.expander.Expand(ns)
	if err != nil {
		return &InputError{fmt.Errorf("profile %s: loadBalancer.ingressNameserver: %w", w.profile.Path, err)}
	}
	if _, err := netip.ParseAddrPort(expanded); err != nil {
		return &InputError{fmt.Errorf("profile %s: loadBalancer.ingressNameserver %q: want IP:port, such as 127.0.0.1:${FREE_PORT_DNS}", w.profile.Path, expanded)}
	}
	w.ingressNameserver = expanded
	return nil
}

// framework is what the specs see of the world.
func (w *world) framework() *framework.Framework {
	f := &framework.Framework{
		Profile: w.profile,
		Config:  w.config,
		Client:  w.client,
		Driver:  w.driver,
		Watch:   w.watch,
	}
	if w.machines != nil {
		f.Machines = w.machines
	}
	if w.ccm != nil {
		f.CCM = w.ccm.logs()
		if l, ok := w.ccm.(ccmInstanceLauncher); ok {
			f.CCMInstances = l.instances()
		}
		if l, ok := w.ccm.(ccmNodeWatcher); ok {
			f.NodesAwaitingCCM = l.awaitingNodes()
		}
	}
	f.EchoImage = w.echoImage
	if w.ingressNameserver != "" {
		f.Probes.Resolver = framework.NameserverResolver(w.ingressNameserver)
	}
	f.KubernetesVersion = w.info.KubernetesVersion
	f.KubernetesEmulation = w.emulation
	f.ClusterCIDRs = w.profile.Cluster.ClusterCIDRs
	if pn, ok := w.cluster.(cluster.PodNetworks); ok {
		f.ClusterCIDRs = pn.ClusterCIDRs()
	}
	return f
}
