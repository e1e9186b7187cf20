package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/kind"
	"github.com/ccm-conformance/ccm-conformance/kubeversion"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

func newRunCommand(stdout io.Writer) *cobra.Command {
	var opts runner.Options
	var kubeconfig, clusterDir, kubernetesVersion, parallel, laneFile, backendName string
	cmd := &cobra.Command{
		Use:   "run --provider FILE",
		Short: "Run the conformance suites against a provider's CCM",
		Long: `Run brings up the cluster, starts the profile's services and its CCM,
registers simulated nodes where the cluster has no machines, runs the
selected specs, and tears everything down, also on SIGINT or SIGTERM.

The cluster is the embedded local one (etcd, kube-apiserver and
kube-controller-manager on loopback) unless --kubeconfig names an existing
cluster or --cluster-dir one started with 'ccm-conformance cluster up'.
On a new local cluster the specs are spread over --parallel lanes, each a
worker process with a local cluster of its own, so that specs that wait
(for a node to turn NotReady, a lease to expire) wait side by side.

--artifacts receives the run directory in the layout Prow's Spyglass and
TestGrid read (docs/artifacts.md): started.json, finished.json,
build-log.txt, summary.txt, and artifacts/ with a junit file per suite,
specs.json, timings.json, metadata.json and the components' logs/.

When --artifacts is not given but $ARTIFACTS is set (a Prow job, or
kubetest2's exec tester), $ARTIFACTS is a job's artifacts directory: the junit
files, specs.json, timings.json and logs/ go straight into it, and the run's
keys are merged into $ARTIFACTS/metadata.json, which Prow folds into its own
finished.json.

Specs carry the capabilities they need as labels; a spec whose capability the
profile does not declare is skipped and says which one was missing.

Exit codes: 0 every selected spec that ran passed, 1 a spec failed, 2 bad
input, a harness error, an interrupt, or a run that tested nothing (every
selected spec was skipped; the error line names the commonest reason).`,
		Example: `  ccm-conformance run --provider providers/profiles/reference.yaml
  ccm-conformance run --provider my.yaml --label-filter 'InstancesV2 && !DualStack'
  ccm-conformance run --provider my.yaml --kubeconfig ~/.kube/config`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if opts.ArtifactsDir == "" {
				return &exitError{code: runner.ExitHarnessError, err: errors.New("--artifacts: empty directory name")}
			}
			if kubernetesVersion != "" {
				if err := checkVersionFlag("--kubernetes-version", kubernetesVersion); err != nil {
					return &exitError{code: runner.ExitHarnessError, err: err}
				}
			}
			existing := kubeconfig != "" || clusterDir != ""
			if existing && kubernetesVersion != "" {
				return &exitError{code: runner.ExitHarnessError, err: errors.New("--kubernetes-version picks the release of a cluster the harness makes; --kubeconfig and --cluster-dir name an existing one")}
			}
			opts.KubernetesVersion = kubernetesVersion
			backend, err := chooseBackend(backendName, kubeconfig, clusterDir)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			opts.Backend = backend
			opts.Suites = suites.All()
			opts.HarnessVersion = Version
			if laneFile != "" {
				return runLaneWorker(ctx, opts, laneFile, stdout)
			}
			if err := chooseLanes(&opts, parallel, backendName == local.BackendName && kubeconfig == "" && clusterDir == ""); err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			ro, err := runDirOptions(cmd, opts, stdout)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			code, err := rundir.Run(ctx, ro)
			if code != 0 {
				return &exitError{code: code, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.ProfilePath, "provider", "", "provider profile (YAML, see docs/profile.md)")
	cmd.Flags().StringVar(&opts.LabelFilter, "label-filter", "", "ginkgo label filter selecting specs, e.g. 'InstancesV2 && !IPv6'")
	cmd.Flags().StringVar(&opts.ArtifactsDir, "artifacts", defaultArtifacts(), "run directory for started.json, finished.json, build-log.txt and artifacts/ (with only $ARTIFACTS set, results go straight into it, as a Prow job's)")
	cmd.Flags().StringVar(&backendName, "backend", local.BackendName, "cluster for the run: local (the embedded control plane, simulated nodes) or kind (a new kind cluster of real nodes from the offline node image, docs/kind.md)")
	cmd.Flags().Int64Var(&opts.Seed, "seed", 0, "order the specs by this seed, as an earlier run printed it (default: one from the clock)")
	cmd.Flags().StringVar(&opts.EchoImage, "echo-image", "", "echo server image the data path specs run as backend pods (docs/images.md): on kind loaded from the Docker engine (default "+framework.DefaultEchoImage+", built by make images); with --kubeconfig run as named, so the cluster must pull it or have it (default: none, and those specs skip)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "run against this existing cluster instead of the embedded local one")
	cmd.Flags().StringVar(&clusterDir, "cluster-dir", "", "run on the local cluster that 'ccm-conformance cluster up --dir DIR' started, and leave it running")
	cmd.Flags().StringVar(&kubernetesVersion, "kubernetes-version", "", "Kubernetes release of the cluster the harness makes (default: the profile's cluster.kubernetesVersion, else the version this build is pinned to)")
	cmd.Flags().StringVar(&parallel, "parallel", "auto", "lanes on a new local cluster: a number, or auto (one per 10 seconds of expected spec time, at most 4)")
	cmd.Flags().StringVar(&laneFile, runner.LaneFlag, "", "run as a worker of a run split over lanes (internal)")
	_ = cmd.Flags().MarkHidden(runner.LaneFlag)
	_ = cmd.MarkFlagRequired("provider")
	return cmd
}

// checkVersionFlag checks a flag's Kubernetes version with the parser
// matrix, lkg and the profile use (kubeversion.Parse).
func checkVersionFlag(flag, v string) error {
	if _, err := kubeversion.Parse(v); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// chooseBackend picks the cluster backend from the flags.
func chooseBackend(backendName, kubeconfig, clusterDir string) (cluster.Backend, error) {
	switch backendName {
	case local.BackendName:
	case kind.BackendName:
		if kubeconfig != "" || clusterDir != "" {
			return nil, errors.New("--backend kind makes a new cluster; --kubeconfig and --cluster-dir name an existing one")
		}
		return kind.Backend(kind.Options{}), nil
	default:
		return nil, fmt.Errorf("--backend %q: want %s or %s", backendName, local.BackendName, kind.BackendName)
	}
	switch {
	case kubeconfig != "" && clusterDir != "":
		return nil, errors.New("--kubeconfig and --cluster-dir name two clusters; pass one")
	case kubeconfig != "":
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		return cluster.FromKubeconfig(kubeconfig), nil
	case clusterDir != "":
		return local.Attach(clusterDir), nil
	}
	return local.Backend(local.Options{}), nil
}

// chooseLanes sets opts.Lanes from --parallel. Only a backend that makes a
// new cluster for every world can run lanes.
func chooseLanes(opts *runner.Options, parallel string, newClusters bool) error {
	if parallel == "auto" {
		if !newClusters {
			return nil
		}
		specs, err := runner.List(opts.Suites, opts.LabelFilter)
		if err != nil {
			return err
		}
		// The listing used up this process's one ginkgo run: even one lane
		// runs in a worker.
		opts.Lanes = runner.AutoLanes(opts.Suites, specs)
	} else {
		n, err := strconv.Atoi(parallel)
		if err != nil || n < 1 {
			return fmt.Errorf("--parallel %q: want a number of lanes (1 or more) or auto", parallel)
		}
		if n > 1 && !newClusters {
			return fmt.Errorf("--parallel %d: lanes need a cluster each, and --kubeconfig or --cluster-dir name one", n)
		}
		if n > 1 {
			opts.Lanes = n
		}
	}
	return nil
}

// laneCommand runs this program again as a lane's worker: as it was run,
// writing its logs into the run directory artifacts.
func laneCommand(artifacts string) func(runner.Lane) *exec.Cmd {
	return func(lane runner.Lane) *exec.Cmd {
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		args := append(slices.Clone(os.Args[1:]), "--artifacts="+artifacts)
		return exec.Command(self, append(args, lane.Args()...)...)
	}
}

// runLaneWorker is run's job in a lane's worker process: the runner writes
// the lane's report for the coordinator, which writes everything else.
func runLaneWorker(ctx context.Context, opts runner.Options, laneFile string, stdout io.Writer) error {
	lane, err := runner.ReadLane(laneFile)
	if err != nil {
		return &exitError{code: runner.ExitHarnessError, err: err}
	}
	opts.Lane = lane
	opts.Out = stdout
	if _, err := runner.Run(ctx, opts); err != nil {
		return &exitError{code: runner.ExitHarnessError, err: err}
	}
	return nil
}

func defaultArtifacts() string { return rundir.DefaultArtifacts(os.Getenv) }
