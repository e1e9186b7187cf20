package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
// torn down in reverse: a cluster from the backend, the profile's services,
// the cloud driver, the CCM under test and, on clusters without machines,
// the simulated nodes.
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
	logDir            string // component logs
	runDir            string // private, removed at the end
	cleanups          []cleanup

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
	// images; echoImage is the one loaded, or "".
	echoRef, echoImage string

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
	fmt.Fprintf(w.out, "[ccm-conformance] "+format+"\n", args...)
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
	if loader, ok := w.cluster.(cluster.ImageLoader); ok && w.profile.Has(profile.DataPath) {
		if err := w.timed("echo image", func() error { return w.loadEchoImage(ctx, loader) }); err != nil {
			return err
		}
	}
	if sim, ok := w.cluster.(cluster.NodeSimulator); ok {
		if err := w.timed("nodes", func() error { return w.registerNodes(ctx, sim) }); err != nil {
			return w.blameDriver(err)
		}
	}
	if fin, ok := w.cluster.(cluster.Finisher); ok {
		err := w.timed("cluster ready", func() error { return fin.Ready(ctx) })
		if err != nil {
			return &SetupError{Step: "cluster", Err: err}
		}
	}
	return nil
}

// blameDriver turns a setup error caused by the cloud driver breaking its
// protocol into a *DriverError, so that the run reads as the driver's
// failure.
func (w *world) blameDriver(err error) error {
	var de *clouddriver.Error
	if errors.As(err, &de) && de.Kind == clouddriver.KindProtocol {
		return &DriverError{Driver: de.Driver, Err: err}
	}
	return err
}

func (w *world) startCluster(ctx context.Context) error {
	w.logf("starting the cluster (%s backend)", w.backend.Name())
	start := time.Now()
	c, err := w.backend.Start(ctx, cluster.StartInput{
		Dir:               w.runDir,
		Nodes:             w.profile.Cluster.Nodes,
		IPFamilies:        w.profile.Cluster.IPFamilies,
		CloudRoutesPods:   w.profile.Cluster.PodRoutes == profile.PodRoutesCloud,
		KubernetesVersion: cmp.Or(w.kubernetesVersion, w.profile.Cluster.KubernetesVersion),
		Progress:          w.out,
	})
	if err != nil {
		var inErr *cluster.InputError
		if errors.As(err, &inErr) {
			return &InputError{inErr.Err}
		}
		return &SetupError{Step: "cluster", Err: err}
	}
	w.cluster = c
	w.onTeardown("stop the cluster", func(ctx context.Context) error {
		var errs []error
		if le, ok := c.(cluster.LogExporter); ok {
			if err := le.ExportLogs(ctx, w.logDir); err != nil {
				errs = append(errs, fmt.Errorf("exporting the cluster's logs: %w", err))
			}
		}
		return errors.Join(append(errs, c.Stop(ctx))...)
	})
	w.config = c.RESTConfig()
	// client-go's default limit (5 requests a second) would make every
	// spec queue behind the others' polls.
	w.config.QPS, w.config.Burst = clientQPS, clientBurst
	w.client, err = kubernetes.NewForConfig(w.config)
	if err != nil {
		return &SetupError{Step: "cluster client", Err: err}
	}
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	w.onTeardown("stop watching", func(context.Context) error { stopWatch(); return nil })
	if w.watch, err = framework.StartWatch(watchCtx, w.client); err != nil {
		return &SetupError{Step: "cluster watch", Err: err}
	}
	w.info.Backend = c.Backend()
	if d, ok := c.(cluster.Describer); ok {
		w.info.BackendMetadata = d.Metadata()
	}
	if v, err := w.client.Discovery().ServerVersion(); err == nil {
		w.info.KubernetesVersion = v.GitVersion
		w.info.KubernetesCommit = GitCommit(v.GitCommit)
		w.emulation = emulatedMinor(v.Major, v.Minor, v.EmulationMajor, v.EmulationMinor)
	} else {
		w.logf("asking the API server for its version: %v (specs with a Kubernetes version range will run as if they applied)", err)
	}
	if vc, ok := c.(cluster.Versioned); ok && w.info.KubernetesCommit == "" {
		// A binary built before the cache stamped its commit reports
		// none; the backend may know it another way.
		w.info.KubernetesCommit = GitCommit(vc.KubernetesCommit())
	}
	w.logf("cluster API ready in %s: Kubernetes %s at %s", time.Since(start).Round(logPrecision), w.info.KubernetesVersion, w.config.Host)
	return nil
}

// startService starts a profile service (cloudside.StartService) and
// registers its stop.
func (w *world) startService(ctx context.Context, s profile.Service) error {
	svc, err := cloudside.StartService(ctx, w.profile, w.expander, s, w.logDir)
	if svc != nil {
		w.onTeardown("stop service "+s.Name, svc.Stop)
	}
	if err != nil {
		return &SetupError{Step: "service " + s.Name, Err: err}
	}
	if s.ReadyFile != "" {
		w.logf("service %s ready", s.Name)
	}
	return nil
}

// startDriver starts the profile's cloud driver and runs its handshake.
func (w *world) startDriver(ctx context.Context) error {
	if w.profile.CloudDriver == nil {
		return nil
	}
	in, err := cloudside.DriverInput(w.profile, w.expander)
	if err != nil {
		return &SetupError{Step: "cloud driver", Err: err}
	}
	if w.driver, err = clouddriver.New(ctx, in); err != nil {
		return &SetupError{Step: "cloud driver handshake", Err: err}
	}
	info := w.driver.Info()
	w.logf("cloud driver: provider %q, protocol %s, %d verbs", info.Provider, info.ProtocolVersion, len(info.Verbs))
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

// loadEchoImage gives the cluster's nodes the echo server image, the
// backend pods of the data path specs on real nodes.
func (w *world) loadEchoImage(ctx context.Context, loader cluster.ImageLoader) error {
	ref := w.echoRef
	if _, err := ccm.InspectImage(ctx, "", ref); err != nil {
		return &InputError{fmt.Errorf("the data path specs on the %s backend run the echo server image %s as backends, and the Docker engine has none (build it with make images): %w",
			w.backend.Name(), ref, err)}
	}
	if err := loader.LoadImage(ctx, ref); err != nil {
		return &SetupError{Step: "echo image", Err: err}
	}
	w.echoImage = ref
	return nil
}

// registerNodes creates the profile's simulated machines: one cloud
// instance each, and a kubelet that registers it.
func (w *world) registerNodes(ctx context.Context, sim cluster.NodeSimulator) error {
	// CheckProfile refused a driver without these before anything started;
	// this holds should its second handshake answer otherwise.
	if missing := missingVerbs(w.driverInfo(), machineVerbs); len(missing) > 0 {
		return &InputError{fmt.Errorf("profile %s: cloudDriver: the %s backend simulates its nodes and needs a cloud driver that implements %s; %s",
			w.profile.Path, w.backend.Name(), quoteVerbs(machineVerbs), driverLacks(w.driverInfo(), missing))}
	}
	if err := w.removeLeftoverNodes(ctx); err != nil {
		return &SetupError{Step: "simulated nodes", Err: err}
	}
	// The kubelets have a client of their own, as real ones do, so that
	// their heartbeats never wait behind the specs' requests.
	kubeletClient, err := kubernetes.NewForConfig(w.config)
	if err != nil {
		return &SetupError{Step: "simulated nodes", Err: err}
	}
	w.kubelets = nodes.NewPool(kubeletClient, nodes.Options{
		KubeletVersion:    sim.KubeletVersion(),
		HeartbeatInterval: sim.NodeHeartbeatInterval(),
		ServeNodePorts:    true,
	})
	w.machines = framework.NewMachines(w.driver, w.kubelets, w.profile.Cluster.IPFamilies, w.watch)
	w.onTeardown("remove simulated nodes", func(ctx context.Context) error {
		var errs []error
		for _, name := range w.nodes {
			errs = append(errs, w.machines.Delete(ctx, name))
		}
		return errors.Join(append(errs, w.kubelets.Close(ctx))...)
	})
	// The machines come up together; each is independent of the others.
	names := make([]string, w.profile.Cluster.Nodes)
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i := range names {
		names[i] = fmt.Sprintf("ccm-node-%d", i+1)
		wg.Go(func() {
			_, errs[i] = w.machines.Add(ctx, framework.MachineRequest{Name: names[i]})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			w.nodes = append(w.nodes, names[i])
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &SetupError{Step: "simulated nodes", Err: err}
	}
	w.logf("registered %d simulated nodes (%s)", len(names), strings.Join(w.profile.Cluster.IPFamilies, ","))
	return nil
}

func (w *world) driverInfo() *clouddriver.Info {
	if w.driver == nil {
		return nil
	}
	info := w.driver.Info()
	return &info
}

// removeLeftoverNodes deletes simulated Nodes an earlier run on the same
// cluster left behind (an attached cluster outlives its runs; a run killed
// with SIGKILL cannot clean up). A spec that reads every node must see only
// this run's.
func (w *world) removeLeftoverNodes(ctx context.Context) error {
	removed, err := nodes.RemoveSimulated(ctx, w.client)
	if len(removed) > 0 {
		w.logf("removed %d simulated nodes an earlier run left behind: %s", len(removed), strings.Join(removed, ", "))
	}
	return err
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
	f.KubernetesVersion = w.info.KubernetesVersion
	f.KubernetesEmulation = w.emulation
	f.ClusterCIDRs = w.profile.Cluster.ClusterCIDRs
	if pn, ok := w.cluster.(cluster.PodNetworks); ok {
		f.ClusterCIDRs = pn.ClusterCIDRs()
	}
	return f
}

// emulatedMinor is the minor ("1.35") an API server of release
// major.minor emulates, from /version's emulationMajor and emulationMinor
// (KEP-4330), or "" when it emulates its own release or does not say.
// The minor may carry a "+" (a vendor's build).
func emulatedMinor(major, minor, emuMajor, emuMinor string) string {
	if emuMajor == "" || emuMinor == "" {
		return ""
	}
	if emuMajor == major && emuMinor == strings.TrimSuffix(minor, "+") {
		return ""
	}
	return emuMajor + "." + emuMinor
}

// GitCommit returns commit if it is a git commit hash (40 hexadecimal
// digits), else "": a build without git stamping reports the unexpanded
// "$Format:%H$" or nothing, and no placeholder may reach the results.
func GitCommit(commit string) string {
	commit = strings.TrimSpace(commit)
	if len(commit) != 40 {
		return ""
	}
	for _, r := range commit {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return ""
		}
	}
	return strings.ToLower(commit)
}
