package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccm-conformance/ccm-conformance/checks/upstreame2e"
	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
	"github.com/ccm-conformance/ccm-conformance/kind"
	"github.com/ccm-conformance/ccm-conformance/kind/nodeimage"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

// Comparison is compare-upstream's record of one run.
type Comparison struct {
	Backend           string `json:"backend"`
	KubernetesVersion string `json:"kubernetesVersion"`
	// Ours are ccm-conformance's specs of the label filter.
	Ours SideResult `json:"ours"`
	// Upstream are upstream's LoadBalancers specs that ran.
	Upstream SideResult `json:"upstream"`
	// UpstreamSpecs are upstream's specs, one by one.
	UpstreamSpecs []upstreame2e.SpecResult `json:"upstreamSpecs,omitempty"`
	// NotRun are upstream's LoadBalancers specs left out, with the reason.
	NotRun []upstreame2e.Spec `json:"notRun,omitempty"`
}

// SideResult is one side of a comparison.
type SideResult struct {
	What                    string  `json:"what"`
	Passed, Failed, Skipped int     `json:",omitempty"`
	WallSeconds             float64 `json:"wallSeconds"`
}

func newCompareUpstreamCommand(stdout, stderr io.Writer) *cobra.Command {
	var providerPath, labelFilter, artifacts, backendName, kubernetesVersion, e2eBinary, focus, echoImage string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "compare-upstream --provider FILE",
		Short: "Run ccm-conformance's load balancer specs and upstream's [sig-network] LoadBalancers e2e specs on one cluster, and compare their wall time",
		Long: `compare-upstream brings up a cluster as run does (by default a new kind
cluster with the profile's CCM image), runs ccm-conformance's specs of
--label-filter there, then, with the same cluster, cloud and CCM still up,
upstream's "[sig-network] LoadBalancers" e2e specs
(k8s.io/kubernetes/test/e2e/network at the cluster's Kubernetes version),
and prints both sides' wall times and results.

On first use it builds, with progress, into the binary cache: upstream's
e2e test binary, kubectl and agnhost, and makes upstream's agnhost test
image, which cannot be pulled here (a Debian root filesystem with sh, nc
and curl, and agnhost). Upstream's specs that the reference cloud's load
balancers on kind cannot serve are left out, each with its reason
(docs/performance.md), and so are those that need a capability the
profile does not claim (UDP, session affinity, source ranges, health
check node ports, a data path); --focus picks others.

The run directory (--artifacts) is a run's, plus artifacts/upstream-e2e/
(upstream's JUnit file and e2e.log) and artifacts/upstream-comparison.json.
Exit code: 0 when both sides passed, 1 when a spec of either side failed,
2 when the harness could not run.`,
		Example: `  ccm-conformance compare-upstream --provider providers/profiles/reference-kind.yaml
  ccm-conformance compare-upstream --provider providers/profiles/reference-kind.yaml --focus 'cleanup finalizer'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			harnessErr := func(err error) error { return &exitError{code: runner.ExitHarnessError, err: err} }
			if artifacts == "" {
				return harnessErr(errors.New("--artifacts: empty directory name"))
			}
			if backendName != kind.BackendName && backendName != local.BackendName {
				return harnessErr(fmt.Errorf("--backend %q: want %s or %s", backendName, kind.BackendName, local.BackendName))
			}
			comparison := Comparison{Backend: backendName}
			if e2eBinary != "" {
				if err := checkExecutableFile(e2eBinary); err != nil {
					return harnessErr(fmt.Errorf("--e2e-binary: %w", err))
				}
			}
			// The profile is checked before anything is built. Upstream's
			// specs that need a capability it does not claim are left out.
			prof, err := profile.Load(providerPath)
			if err != nil {
				return harnessErr(err)
			}
			specs := upstreame2e.ForProfile(upstreame2e.Specs, prof.Has)
			if focus == "" {
				if !slices.ContainsFunc(specs, func(s upstreame2e.Spec) bool { return s.Run }) {
					return harnessErr(fmt.Errorf("%s claims none of the capabilities upstream's LoadBalancers specs need (LoadBalancer at least): nothing to compare", providerPath))
				}
				focus = upstreame2e.Focus(specs)
				for _, s := range specs {
					if !s.Run {
						comparison.NotRun = append(comparison.NotRun, s)
					}
				}
			}
			version := cmp.Or(clusterKubernetesVersion(kubernetesVersion, providerPath), local.DefaultKubernetesVersion)
			comparison.KubernetesVersion = version
			backend, err := chooseBackend(backendName, "", "")
			if err != nil {
				return harnessErr(err)
			}
			tools, err := ensureUpstreamTools(ctx, version, e2eBinary, backendName == kind.BackendName, stderr)
			if err != nil {
				return harnessErr(err)
			}

			var upstreamRan bool
			opts := runner.Options{
				ProfilePath:       providerPath,
				Backend:           backend,
				LabelFilter:       labelFilter,
				ArtifactsDir:      artifacts,
				KubernetesVersion: version,
				Suites:            suites.All(),
				HarnessVersion:    Version,
				EchoImage:         echoImage,
				AfterSpecs: func(ctx context.Context, w runner.WorldView) error {
					comparison.Ours = oursFrom(w.Report, labelFilter)
					res, err := runUpstream(ctx, w, tools, upstreame2e.Options{
						ReportDir: filepath.Join(artifacts, filepath.FromSlash(prow.UpstreamReportDir)),
						Focus:     focus,
						Timeout:   timeout,
					})
					if err != nil {
						return err
					}
					upstreamRan = true
					comparison.Upstream = SideResult{What: upstreame2e.Describe + " (upstream e2e, " + version + ")",
						Passed: res.Passed, Failed: res.Failed, Skipped: res.Skipped, WallSeconds: res.Wall.Seconds()}
					comparison.UpstreamSpecs = res.Specs
					return nil
				},
			}
			code, runErr := rundir.Run(ctx, rundir.Options{Runner: opts, Name: "ccm-conformance", Dir: artifacts, Out: stdout})
			if !upstreamRan {
				if runErr == nil {
					runErr = errors.New("upstream's specs did not run")
				}
				return &exitError{code: cmp.Or(code, runner.ExitHarnessError), err: runErr}
			}
			path := filepath.Join(artifacts, filepath.FromSlash(prow.ComparisonFile))
			if err := writeComparison(path, comparison); err != nil {
				return harnessErr(err)
			}
			printComparison(stdout, comparison, path)
			switch {
			case code != 0:
				return &exitError{code: code, err: runErr}
			case comparison.Upstream.Failed > 0:
				return &exitError{code: runner.ExitFailed, err: fmt.Errorf("%d of upstream's specs failed (%s)", comparison.Upstream.Failed, filepath.Join(artifacts, filepath.FromSlash(prow.UpstreamReportDir), "e2e.log"))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&providerPath, "provider", "", "provider profile (YAML, see docs/profile.md); on kind one with a CCM image, such as providers/profiles/reference-kind.yaml")
	cmd.Flags().StringVar(&labelFilter, "label-filter", "LoadBalancer && !LeaderMigration", "ginkgo label filter selecting ccm-conformance's side")
	cmd.Flags().StringVar(&artifacts, "artifacts", "_artifacts/compare-upstream", "run directory")
	cmd.Flags().StringVar(&backendName, "backend", kind.BackendName, "cluster: kind (upstream's specs run real pods) or local (no pods run there: only for trying the plumbing with --e2e-binary)")
	cmd.Flags().StringVar(&echoImage, "echo-image", framework.DefaultEchoImage, "echo server image ccm-conformance's data path specs run on kind (make images)")
	cmd.Flags().StringVar(&kubernetesVersion, "kubernetes-version", "", "Kubernetes release of the cluster and of upstream's specs (default: the profile's cluster.kubernetesVersion, else "+local.DefaultKubernetesVersion+")")
	cmd.Flags().StringVar(&e2eBinary, "e2e-binary", "", "upstream e2e test binary to run instead of the one built from k8s.io/kubernetes at that version")
	cmd.Flags().StringVar(&focus, "focus", "", "ginkgo focus for upstream's specs (default: the LoadBalancers specs that can pass here, docs/performance.md)")
	cmd.Flags().DurationVar(&timeout, "upstream-timeout", upstreame2e.DefaultTimeout, "bound on upstream's whole run (a failing spec waits up to 15 minutes for a load balancer)")
	_ = cmd.MarkFlagRequired("provider")
	return cmd
}

// upstreamTools are what upstream's specs need from the binary cache.
type upstreamTools struct {
	e2e, kubectl string
	// agnhostRef is the agnhost image made for the specs, "" on a cluster
	// that runs no pods.
	agnhostRef string
}

// ensureUpstreamTools builds what upstream's specs need, with progress on
// out: the e2e binary (unless one is given), kubectl, and on kind agnhost
// and its image.
func ensureUpstreamTools(ctx context.Context, version, e2eBinary string, images bool, out io.Writer) (upstreamTools, error) {
	names := []string{k8sbin.Kubectl}
	if e2eBinary == "" {
		names = append(names, k8sbin.E2ELoadBalancers)
	}
	if images {
		names = append(names, k8sbin.Agnhost)
	}
	paths, err := k8sbin.EnsureAll(ctx, k8sbin.Request{Version: version, Progress: out}, names...)
	if err != nil {
		return upstreamTools{}, err
	}
	t := upstreamTools{e2e: cmp.Or(e2eBinary, paths[k8sbin.E2ELoadBalancers]), kubectl: paths[k8sbin.Kubectl]}
	if !images {
		return t, nil
	}
	if t.agnhostRef, err = upstreame2e.AgnhostImage(ctx, t.e2e); err != nil {
		return t, err
	}
	err = nodeimage.EnsureAgnhostImage(ctx, nodeimage.AgnhostOptions{
		Ref: t.agnhostRef, Binary: paths[k8sbin.Agnhost], Options: nodeimage.Options{KubernetesVersion: version, Progress: out},
	})
	return t, err
}

// runUpstream runs upstream's specs in the world w, after loading the
// agnhost image into a cluster that takes images.
func runUpstream(ctx context.Context, w runner.WorldView, t upstreamTools, o upstreame2e.Options) (upstreame2e.Result, error) {
	if t.agnhostRef != "" {
		loader, ok := w.Cluster.(cluster.ImageLoader)
		if !ok {
			return upstreame2e.Result{}, errors.New("the cluster cannot be given the agnhost image")
		}
		if err := loader.LoadImage(ctx, t.agnhostRef); err != nil {
			return upstreame2e.Result{}, fmt.Errorf("loading %s into the cluster: %w", t.agnhostRef, err)
		}
	}
	nodes, err := schedulableNodes(ctx, w.Cluster.Kubeconfig())
	if err != nil {
		return upstreame2e.Result{}, err
	}
	o.Binary, o.Kubectl, o.Kubeconfig, o.Nodes = t.e2e, t.kubectl, w.Cluster.Kubeconfig(), nodes
	fmt.Fprintf(w.Out, "[ccm-conformance] running upstream's %s e2e specs on the same cluster and CCM (%s, %d schedulable nodes); their output goes to %s\n",
		upstreame2e.Describe, filepath.Base(o.Binary), nodes, filepath.Join(o.ReportDir, "e2e.log"))
	done := make(chan struct{})
	defer close(done)
	start := time.Now()
	go func() {
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintf(w.Out, "[ccm-conformance] upstream's specs still running, %s elapsed\n", time.Since(start).Round(time.Second))
			}
		}
	}()
	res, err := upstreame2e.Run(ctx, o)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(w.Out, "[ccm-conformance] upstream's specs: %s\n", res.Summary())
	for _, s := range res.Specs {
		line := fmt.Sprintf("  %-7s %6.1fs  %s", s.State, s.Time.Seconds(), s.Name)
		if s.Message != "" {
			line += ": " + s.Message
		}
		fmt.Fprintln(w.Out, line)
	}
	return res, nil
}

// schedulableNodes counts the nodes a pod can land on: those without a
// NoSchedule or NoExecute taint.
func schedulableNodes(ctx context.Context, kubeconfig string) (int, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing the cluster's nodes: %w", err)
	}
	n := 0
	for _, node := range list.Items {
		if schedulable(node) {
			n++
		}
	}
	return n, nil
}

func schedulable(node corev1.Node) bool {
	if node.Spec.Unschedulable {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}

// oursFrom counts ccm-conformance's side from the world's report: the
// specs the label filter selected, and the time from the first spec's
// start to the last one's end.
func oursFrom(r types.Report, labelFilter string) SideResult {
	s := SideResult{What: "ccm-conformance --label-filter '" + labelFilter + "'"}
	var first, last time.Time
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		switch sr.State {
		case types.SpecStatePassed:
			s.Passed++
		case types.SpecStateSkipped:
			if sr.Failure.Message == "" {
				continue // not selected by the label filter
			}
			s.Skipped++
		case types.SpecStatePending:
			continue
		default:
			s.Failed++
		}
		if first.IsZero() || sr.StartTime.Before(first) {
			first = sr.StartTime
		}
		if sr.EndTime.After(last) {
			last = sr.EndTime
		}
	}
	if !first.IsZero() {
		s.WallSeconds = last.Sub(first).Seconds()
	}
	return s
}

func writeComparison(path string, c Comparison) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// printComparison prints the two sides as a table.
func printComparison(out io.Writer, c Comparison, path string) {
	fmt.Fprintf(out, "\nside by side on one %s cluster (Kubernetes %s), same CCM:\n", c.Backend, c.KubernetesVersion)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  side\tpassed\tfailed\tskipped\twall")
	for _, s := range []SideResult{c.Ours, c.Upstream} {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%.1fs\n", s.What, s.Passed, s.Failed, s.Skipped, s.WallSeconds)
	}
	tw.Flush()
	if len(c.NotRun) > 0 {
		fmt.Fprintf(out, "upstream specs left out (%d):\n", len(c.NotRun))
		for _, s := range c.NotRun {
			fmt.Fprintf(out, "  %s: %s\n", s.Name, s.Reason)
		}
	}
	fmt.Fprintf(out, "comparison: %s\n", path)
}

// checkExecutableFile says why path is not an executable file, or nil.
func checkExecutableFile(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// clusterKubernetesVersion is the Kubernetes release of the cluster
// compare-upstream makes, which it must know before the run to build
// upstream's specs of that release: --kubernetes-version, else the profile's
// cluster.kubernetesVersion, else "" (the pinned release). A profile that
// does not load is reported by the run itself, with its other problems.
func clusterKubernetesVersion(flag, profilePath string) string {
	if flag != "" {
		return flag
	}
	if p, err := profile.Load(profilePath); err == nil {
		return p.Cluster.KubernetesVersion
	}
	return ""
}
