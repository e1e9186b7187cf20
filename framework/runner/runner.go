// Package runner runs the conformance suites against one CCM: it brings up
// the cluster, starts the profile's services and the CCM, registers the
// simulated nodes, runs the selected specs with ginkgo, writes the reports,
// and tears everything down again, also when the run is interrupted.
package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"golang.org/x/term"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Options configure one run.
type Options struct {
	// ProfilePath is the provider profile. Required.
	ProfilePath string
	// LabelFilter is a ginkgo label filter that narrows the specs, for
	// example "LoadBalancer && !DataPath". Default: every spec.
	LabelFilter string
	// ArtifactsDir is the run directory: the runner writes summary.txt
	// there and component logs under artifacts/logs/; observers write the
	// rest (see reports/prow). Default "_artifacts".
	ArtifactsDir string
	// Kubeconfig, when set, runs against that existing cluster instead of
	// bringing up the local one.
	Kubeconfig string
	// KubernetesVersion of the local cluster. Default
	// local.DefaultKubernetesVersion.
	KubernetesVersion string
	// Suites are the suites to declare.
	Suites []framework.Suite
	// Out receives progress and the summary. Default os.Stdout.
	Out io.Writer
	// HarnessVersion goes into RunInfo.
	HarnessVersion string
	// Observers are told when the run starts and ends.
	Observers []Observer
}

// Result counts the specs of a run.
type Result struct {
	Passed, Failed, Skipped, Pending int
	Interrupted                      bool
	// Failures holds one line per failed spec: its name and message.
	Failures []string
	Duration time.Duration
}

// Summary is the closing line of a run.
func (r *Result) Summary() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", r.Passed, r.Failed, r.Skipped)
}

// run holds what one run has brought up, for teardown.
type run struct {
	opts      Options
	out       io.Writer
	profile   *profile.Profile
	runDir    string
	logDir    string
	cleanups  []cleanup
	expander  profile.Expander
	cluster   *local.Cluster
	config    *rest.Config
	client    kubernetes.Interface
	driver    *clouddriver.Driver
	ccm       *mainCCM
	deployed  *ccm.Deployed
	machines  *framework.Machines
	kubelets  *nodes.Pool
	instances []string
	info      RunInfo
	report    types.Report
}

type cleanup struct {
	what string
	fn   func(context.Context) error
}

// onTeardown registers fn to run when the run ends, in reverse order of
// registration.
func (r *run) onTeardown(what string, fn func(context.Context) error) {
	r.cleanups = append(r.cleanups, cleanup{what, fn})
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "[ccm-conformance] "+format+"\n", args...)
}

// Run executes the suites. It returns a harness error (an *InputError, a
// *SetupError or ErrInterrupted) when the specs could not run; otherwise the
// result says how they went. ctx ending means the run was interrupted:
// teardown still happens and partial results are written.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	r := &run{opts: opts, out: opts.Out}
	if r.out == nil {
		r.out = os.Stdout
	}
	if opts.ArtifactsDir == "" {
		opts.ArtifactsDir = "_artifacts"
		r.opts.ArtifactsDir = opts.ArtifactsDir
	}
	if err := r.checkInput(); err != nil {
		return nil, err
	}
	r.info = RunInfo{
		Provider:       r.profile.Name,
		ProfilePath:    r.profile.Path,
		Backend:        "local",
		HarnessVersion: opts.HarnessVersion,
		LabelFilter:    opts.LabelFilter,
		Started:        time.Now(),
	}
	if opts.Kubeconfig != "" {
		r.info.Backend = "kubeconfig"
	}
	if b := r.profile.CCM.Binary; b != nil {
		r.info.CCMBinary = r.profile.ResolvePath(b.Path)
		r.info.CCMDigest, _ = fileDigest(r.info.CCMBinary)
	}
	for _, o := range opts.Observers {
		if oerr := o.RunStarted(r.info); oerr != nil {
			return nil, &SetupError{Step: "reports", Err: oerr}
		}
	}
	defer func() {
		if terr := r.teardown(); terr != nil {
			r.logf("teardown: %v", terr)
			if err == nil && res != nil && res.Failed == 0 {
				err = &SetupError{Step: "teardown", Err: terr}
			}
		}
		for _, o := range opts.Observers {
			if oerr := o.RunFinished(r.info, r.report, res, err); oerr != nil {
				r.logf("writing reports: %v", oerr)
				if err == nil {
					err = &SetupError{Step: "reports", Err: oerr}
				}
			}
		}
	}()
	if err := r.setup(ctx); err != nil {
		if ctx.Err() != nil {
			r.logf("interrupted during setup")
			r.writePartialSummary("interrupted during setup")
			return nil, ErrInterrupted
		}
		r.writePartialSummary(err.Error())
		return nil, err
	}
	res = r.runSpecs(ctx)
	if res.Interrupted {
		return res, ErrInterrupted
	}
	return res, nil
}

// checkInput validates everything that needs no cluster, so that bad input
// fails in a second, not after a cluster came up.
func (r *run) checkInput() error {
	if r.opts.ProfilePath == "" {
		return &InputError{errors.New("no profile: pass --provider FILE")}
	}
	p, err := profile.Load(r.opts.ProfilePath)
	if err != nil {
		return &InputError{err}
	}
	r.profile = p
	if r.opts.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(r.opts.LabelFilter); err != nil {
			return &InputError{fmt.Errorf("--label-filter %q: %s", r.opts.LabelFilter, labelFilterError(err))}
		}
	}
	if b := p.CCM.Binary; b != nil {
		if err := checkExecutable(p.ResolvePath(b.Path)); err != nil {
			return &InputError{fmt.Errorf("profile %s: ccm.binary.path: %w", p.Path, err)}
		}
	}
	if p.CCM.Deployed != nil && r.opts.Kubeconfig == "" {
		return &InputError{fmt.Errorf("profile %s: ccm.deployed names a CCM running in a cluster; pass that cluster with --kubeconfig", p.Path)}
	}
	for i, s := range p.Services {
		if err := checkExecutable(p.ResolvePath(s.Command[0])); err != nil {
			return &InputError{fmt.Errorf("profile %s: services[%d].command: %w", p.Path, i, err)}
		}
	}
	if d := p.CloudDriver; d != nil {
		if err := checkExecutable(p.ResolvePath(d.Command[0])); err != nil {
			return &InputError{fmt.Errorf("profile %s: cloudDriver.command: %w", p.Path, err)}
		}
	}
	if path := p.LeaderMigrationConfig(); path != "" {
		if info, err := os.Stat(path); err != nil {
			return &InputError{fmt.Errorf("profile %s: leaderMigration.config: %w", p.Path, err)}
		} else if !info.Mode().IsRegular() {
			return &InputError{fmt.Errorf("profile %s: leaderMigration.config: %s is not a file", p.Path, path)}
		}
	}
	if r.opts.Kubeconfig != "" {
		if _, err := os.Stat(r.opts.Kubeconfig); err != nil {
			return &InputError{fmt.Errorf("--kubeconfig: %w", err)}
		}
	}
	return nil
}

func checkExecutable(path string) error {
	if !strings.Contains(path, "/") {
		if _, err := exec.LookPath(path); err != nil {
			return fmt.Errorf("%s: not found on PATH", path)
		}
		return nil
	}
	info, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%s: no such file", path)
		}
		return err
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", path)
	}
	return nil
}

func (r *run) setup(ctx context.Context) error {
	var err error
	if err := os.MkdirAll(r.opts.ArtifactsDir, 0o755); err != nil {
		return &InputError{fmt.Errorf("--artifacts %s: %w", r.opts.ArtifactsDir, err)}
	}
	r.logDir = filepath.Join(r.opts.ArtifactsDir, "artifacts", "logs")
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return &InputError{fmt.Errorf("--artifacts %s: %w", r.opts.ArtifactsDir, err)}
	}
	r.runDir, err = os.MkdirTemp(runDirBase(), "ccm-conformance-run-")
	if err != nil {
		return &SetupError{Step: "run directory", Err: err}
	}
	r.onTeardown("remove run directory", func(context.Context) error { return os.RemoveAll(r.runDir) })

	if err := r.setupCluster(ctx); err != nil {
		return err
	}
	r.expander = r.profile.NewExpander(r.runDir, r.kubeconfigPath())

	for _, s := range r.profile.Services {
		if err := r.startService(ctx, s); err != nil {
			return err
		}
	}
	if d := r.profile.CloudDriver; d != nil {
		command := r.expander.ExpandAll(d.Command)
		command[0] = r.profile.ResolvePath(command[0])
		r.driver, err = clouddriver.New(ctx, clouddriver.Options{
			Command:     command,
			Env:         r.expander.Environ(d.Env),
			CallTimeout: r.profile.Timeout(profile.CloudDriverCall),
		})
		if err != nil {
			return &SetupError{Step: "cloud driver handshake", Err: err}
		}
		info := r.driver.Info()
		r.logf("cloud driver: provider %q, protocol %s, %d verbs", info.Provider, info.ProtocolVersion, len(info.Verbs))
	}
	if err := r.startCCM(ctx); err != nil {
		return err
	}
	if r.cluster != nil {
		if err := r.registerNodes(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) kubeconfigPath() string {
	if r.cluster != nil {
		return r.cluster.Kubeconfig()
	}
	return r.opts.Kubeconfig
}

func (r *run) setupCluster(ctx context.Context) error {
	var err error
	if r.opts.Kubeconfig != "" {
		r.config, err = clientcmd.BuildConfigFromFlags("", r.opts.Kubeconfig)
		if err != nil {
			return &InputError{fmt.Errorf("--kubeconfig %s: %s", r.opts.Kubeconfig, oneLine(err.Error()))}
		}
		r.config.Timeout = 10 * time.Second
		client, err := kubernetes.NewForConfig(r.config)
		if err != nil {
			return &InputError{fmt.Errorf("--kubeconfig %s: %w", r.opts.Kubeconfig, err)}
		}
		v, err := client.Discovery().ServerVersion()
		if err != nil {
			return &SetupError{Step: "cluster", Err: fmt.Errorf("cluster %s (from %s) is unreachable: %s", r.config.Host, r.opts.Kubeconfig, oneLine(err.Error()))}
		}
		r.config.Timeout = 0
		r.logf("using existing cluster %s, Kubernetes %s", r.config.Host, v.GitVersion)
	} else {
		r.logf("starting the local cluster (etcd, kube-apiserver, kube-controller-manager)")
		start := time.Now()
		r.cluster, err = local.Start(ctx, local.Options{
			KubernetesVersion: r.opts.KubernetesVersion,
			Dir:               filepath.Join(r.runDir, "cluster"),
			Progress:          r.out,
		})
		if err != nil {
			return &SetupError{Step: "local cluster", Err: err}
		}
		r.onTeardown("stop local cluster", func(ctx context.Context) error {
			err := r.cluster.Stop(ctx)
			r.copyClusterLogs()
			return err
		})
		r.config = r.cluster.RESTConfig()
		r.logf("local cluster ready in %s: Kubernetes %s at %s", time.Since(start).Round(100*time.Millisecond), r.cluster.KubernetesVersion(), r.cluster.APIServerURL())
	}
	r.client, err = kubernetes.NewForConfig(r.config)
	if err != nil {
		return &SetupError{Step: "cluster client", Err: err}
	}
	if v, err := r.client.Discovery().ServerVersion(); err == nil {
		r.info.KubernetesVersion = v.GitVersion
		// A build without git stamping (like the local cluster's, from the
		// module proxy) reports the unexpanded "$Format:%H$": no commit.
		if !strings.HasPrefix(v.GitCommit, "$Format") {
			r.info.KubernetesCommit = v.GitCommit
		}
	}
	return nil
}

func (r *run) copyClusterLogs() {
	for _, c := range r.cluster.Components() {
		src := r.cluster.LogPath(c.Name)
		data, err := os.ReadFile(src)
		if err != nil {
			continue
		}
		_ = os.WriteFile(filepath.Join(r.logDir, c.Name+".log"), data, 0o644)
	}
}

func (r *run) startService(ctx context.Context, s profile.Service) error {
	command := r.expander.ExpandAll(s.Command)
	command[0] = r.profile.ResolvePath(command[0])
	p, err := proc.Start(proc.Options{
		Name:    "service " + s.Name,
		Command: command,
		Env:     r.expander.Environ(s.Env),
		LogPath: filepath.Join(r.logDir, "service-"+s.Name+".log"),
	})
	if err != nil {
		return &SetupError{Step: "service " + s.Name, Err: err}
	}
	r.onTeardown("stop service "+s.Name, func(ctx context.Context) error { return p.Stop(ctx, 10*time.Second) })
	if s.ReadyFile == "" {
		return nil
	}
	ready := r.expander.Expand(s.ReadyFile)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(ready); err == nil {
			r.logf("service %s ready", s.Name)
			return nil
		}
		if exited, _ := p.Exited(); exited {
			return &SetupError{Step: "service " + s.Name, Err: p.ExitError()}
		}
		if time.Now().After(deadline) {
			return &SetupError{Step: "service " + s.Name, Err: fmt.Errorf("%s did not appear within 1m; last log lines:\n%s", ready, p.Tail(10))}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *run) startCCM(ctx context.Context) error {
	if d := r.profile.CCM.Deployed; d != nil {
		r.deployed = &ccm.Deployed{Client: r.client, Namespace: d.Namespace, LabelSelector: d.LabelSelector, Container: d.Container}
		if err := r.deployed.WaitReady(ctx); err != nil {
			return &SetupError{Step: "ccm", Err: err}
		}
		r.logf("the CCM runs in the cluster (pods %q in %s)", d.LabelSelector, d.Namespace)
		return nil
	}
	p, err := r.startCCMInstance(ctx, "", nil)
	if err != nil {
		return &SetupError{Step: "ccm", Err: err}
	}
	r.ccm = &mainCCM{current: p}
	r.onTeardown("stop ccm", r.ccm.Stop)
	return nil
}

// startCCMInstance starts an instance of the profile's CCM with extraArgs
// appended and waits until it is healthy. The main instance has name "".
func (r *run) startCCMInstance(ctx context.Context, name string, extraArgs []string) (*ccm.Process, error) {
	b := r.profile.CCM.Binary
	logName, label := "ccm.log", "ccm"
	if name != "" {
		logName, label = "ccm-"+name+".log", "ccm "+name
	}
	p, err := ccm.StartBinary(ccm.BinaryOptions{
		Name:       label,
		Path:       r.profile.ResolvePath(r.expander.Expand(b.Path)),
		Args:       append(r.expander.ExpandAll(b.Args), extraArgs...),
		Env:        r.expander.Environ(b.Env),
		Kubeconfig: r.kubeconfigPath(),
		LogPath:    filepath.Join(r.logDir, logName),
	})
	if err != nil {
		return nil, err
	}
	r.logf("started %s (pid %d): %s", label, p.Pid(), p.CommandLine())
	if err := p.WaitReady(ctx, r.profile.Timeout(profile.CCMReady), 200*time.Millisecond); err != nil {
		_ = p.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	r.logf("%s healthy on port %d", label, p.SecurePort())
	return p, nil
}

// mainCCM is the CCM instance the run started; specs may stop and restart
// it, so it is reached through this handle. Its log file stays the same.
type mainCCM struct {
	mu      sync.Mutex
	current *ccm.Process
}

func (m *mainCCM) get() *ccm.Process {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

func (m *mainCCM) Log(ctx context.Context) (string, error) { return m.get().Log(ctx) }

func (m *mainCCM) Stop(ctx context.Context) error { return m.get().Stop(ctx) }

// ccmInstances implements framework.CCMs for the run.
type ccmInstances struct{ r *run }

func (c ccmInstances) Start(ctx context.Context, name string, extraArgs []string) (*ccm.Process, error) {
	if name == "" {
		return nil, errors.New("an extra CCM instance needs a name")
	}
	p, err := c.r.startCCMInstance(ctx, name, extraArgs)
	if err != nil {
		return nil, err
	}
	c.r.onTeardown("stop ccm "+name, p.Stop)
	return p, nil
}

func (c ccmInstances) StopMain(ctx context.Context) (func(context.Context) error, error) {
	if err := c.r.ccm.Stop(ctx); err != nil {
		return nil, err
	}
	c.r.logf("stopped the main CCM for a spec")
	return func(ctx context.Context) error {
		p, err := c.r.startCCMInstance(ctx, "", nil)
		if err != nil {
			return err
		}
		c.r.ccm.mu.Lock()
		c.r.ccm.current = p
		c.r.ccm.mu.Unlock()
		return nil
	}, nil
}

// registerNodes creates the profile's simulated machines on the local
// cluster: one cloud instance each, and a kubelet that registers it.
func (r *run) registerNodes(ctx context.Context) error {
	if r.driver == nil || !r.driver.Supports(clouddriver.VerbInstanceCreate) || !r.driver.Supports(clouddriver.VerbInstanceDelete) {
		return &InputError{fmt.Errorf("profile %s: the local cluster simulates its nodes and needs a cloud driver that implements \"instance create\" and \"instance delete\"", r.profile.Path)}
	}
	r.kubelets = nodes.NewPool(r.client, nodes.Options{KubeletVersion: r.clusterVersion(), ServeNodePorts: true})
	r.machines = framework.NewMachines(r.driver, r.kubelets, r.profile.Cluster.IPFamilies)
	r.onTeardown("remove simulated nodes", func(ctx context.Context) error {
		var errs []error
		for _, name := range r.instances {
			errs = append(errs, r.machines.Delete(ctx, name))
		}
		return errors.Join(append(errs, r.kubelets.Close(ctx))...)
	})
	for i := 1; i <= r.profile.Cluster.Nodes; i++ {
		name := fmt.Sprintf("ccm-node-%d", i)
		if _, err := r.machines.Add(ctx, framework.MachineRequest{Name: name}); err != nil {
			return &SetupError{Step: "simulated nodes", Err: err}
		}
		r.instances = append(r.instances, name)
	}
	r.logf("registered %d simulated nodes (%s)", r.profile.Cluster.Nodes, strings.Join(r.profile.Cluster.IPFamilies, ","))
	return nil
}

func (r *run) clusterVersion() string {
	if r.cluster != nil {
		return r.cluster.KubernetesVersion()
	}
	return ""
}

func (r *run) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		c := r.cleanups[i]
		if err := c.fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.what, err))
		}
	}
	r.cleanups = nil
	return errors.Join(errs...)
}

func (r *run) framework() *framework.Framework {
	f := &framework.Framework{
		Profile: r.profile,
		Config:  r.config,
		Client:  r.client,
		Driver:  r.driver,
	}
	if r.machines != nil {
		f.Machines = r.machines
	}
	if r.ccm != nil {
		f.CCM = r.ccm
		f.CCMInstances = ccmInstances{r}
	}
	if r.deployed != nil {
		f.CCM = r.deployed
	}
	f.ClusterCIDRs = r.profile.Cluster.ClusterCIDRs
	if r.cluster != nil {
		f.ClusterCIDRs = r.cluster.ClusterCIDRs()
	}
	return f
}

func (r *run) runSpecs(ctx context.Context) *Result {
	f := r.framework()
	ginkgo.BeforeEach(f.SkipUnlessCapable)
	declareSuites(f, r.opts.Suites)
	ginkgo.ReportAfterSuite("ccm-conformance summary", func(rep ginkgo.Report) { r.report = rep })

	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	suiteConfig.LabelFilter = r.opts.LabelFilter
	suiteConfig.Timeout = 24 * time.Hour
	suiteConfig.RandomSeed = time.Now().Unix()
	reporterConfig.Verbose = true
	reporterConfig.NoColor = !term.IsTerminal(int(os.Stdout.Fd()))
	// ginkgo's reporter prints to formatter.ColorableStdOut; send it where
	// the rest of the run's output goes.
	stdout := formatter.ColorableStdOut
	formatter.ColorableStdOut = r.out
	defer func() { formatter.ColorableStdOut = stdout }()

	start := time.Now()
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(failRecorder{}, "CCM conformance: "+r.profile.Name, suiteConfig, reporterConfig)
	res := resultFrom(r.report)
	res.Duration = time.Since(start)
	if ctx.Err() != nil {
		res.Interrupted = true
	}
	r.writeSummary(res)
	return res
}

// failRecorder satisfies ginkgo.GinkgoTestingT; the result is read from the
// report instead.
type failRecorder struct{}

func (failRecorder) Fail() {}

func resultFrom(report types.Report) *Result {
	res := &Result{}
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			if s.State.Is(types.SpecStateFailureStates) {
				res.Failed++
				res.Failures = append(res.Failures, fmt.Sprintf("[%s] %s", s.LeafNodeType, oneLine(s.Failure.Message)))
			}
			continue
		}
		switch {
		case s.State == types.SpecStatePassed:
			res.Passed++
		case s.State == types.SpecStatePending:
			res.Pending++
		case s.State == types.SpecStateSkipped:
			res.Skipped++
		case s.State.Is(types.SpecStateFailureStates):
			res.Failed++
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %s", s.FullText(), oneLine(s.Failure.Message)))
		}
	}
	if report.SpecialSuiteFailureReasons != nil {
		for _, reason := range report.SpecialSuiteFailureReasons {
			if strings.Contains(reason, "Interrupted") {
				res.Interrupted = true
			}
		}
	}
	return res
}

func (r *run) writeSummary(res *Result) {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: %s\n", r.profile.Name)
	fmt.Fprintf(&b, "duration: %s\n", res.Duration.Round(time.Second))
	if res.Interrupted {
		fmt.Fprintf(&b, "interrupted: true\n")
	}
	for _, f := range res.Failures {
		fmt.Fprintf(&b, "FAILED %s\n", f)
	}
	fmt.Fprintf(&b, "conformance: %s\n", res.Summary())
	path := filepath.Join(r.opts.ArtifactsDir, "summary.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		r.logf("writing %s: %v", path, err)
	}
	fmt.Fprint(r.out, "\n"+b.String())
}

func (r *run) writePartialSummary(reason string) {
	if r.profile == nil || r.opts.ArtifactsDir == "" {
		return
	}
	if err := os.MkdirAll(r.opts.ArtifactsDir, 0o755); err != nil {
		return
	}
	content := fmt.Sprintf("provider: %s\nharness error: %s\nconformance: no specs ran\n", r.profile.Name, oneLine(reason))
	_ = os.WriteFile(filepath.Join(r.opts.ArtifactsDir, "summary.txt"), []byte(content), 0o644)
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m|\{\{/?[a-z-]*\}\}`)

// oneLine keeps the first line of a message, without terminal colours.
func oneLine(s string) string {
	s = strings.TrimSpace(ansiEscape.ReplaceAllString(s, ""))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

// labelFilterError renders ginkgo's label-filter parse error as one line.
func labelFilterError(err error) string {
	var ge types.GinkgoError
	if errors.As(err, &ge) {
		return oneLine(ge.Heading + ": " + strings.ReplaceAll(ge.Message, "\n", " "))
	}
	return oneLine(err.Error())
}

// declareSuites declares each suite inside a container named after it, so
// that every spec's full text starts with "[suite]" and reports can group
// specs by suite.
func declareSuites(f *framework.Framework, suites []framework.Suite) {
	for _, s := range suites {
		ginkgo.Describe("["+s.Name+"]", func() { s.Declare(f) })
	}
}

// SuiteOf returns the suite a spec belongs to, from the container
// declareSuites put around it, or "" if there is none.
func SuiteOf(spec types.SpecReport) string {
	if len(spec.ContainerHierarchyTexts) == 0 {
		return ""
	}
	t := spec.ContainerHierarchyTexts[0]
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		return strings.TrimSuffix(strings.TrimPrefix(t, "["), "]")
	}
	return ""
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// runDirBase is where run directories go: $TMPDIR, unless its path is so
// long that unix sockets below it (profile services often listen on one in
// ${RUN_DIR}) would pass the kernel's 108-byte limit; then /tmp.
func runDirBase() string {
	base := os.TempDir()
	if len(base) > 48 {
		if info, err := os.Stat("/tmp"); err == nil && info.IsDir() {
			return "/tmp"
		}
	}
	return base
}
