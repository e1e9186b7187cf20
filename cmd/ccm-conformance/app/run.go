package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

func newRunCommand(stdout io.Writer) *cobra.Command {
	var opts runner.Options
	cmd := &cobra.Command{
		Use:   "run --provider FILE",
		Short: "Run the conformance suites against a provider's CCM",
		Long: `Run brings up the cluster (the embedded local cluster unless --kubeconfig is
given), starts the profile's services and its CCM, registers simulated nodes,
runs the selected specs, and tears everything down, also on SIGINT or SIGTERM.
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
profile does not declare is skipped and says which one was missing.`,
		Example: `  ccm-conformance run --provider providers/profiles/reference.yaml
  ccm-conformance run --provider my.yaml --label-filter 'InstancesV2 && !DualStack'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if opts.ArtifactsDir == "" {
				return &exitError{code: runner.ExitHarnessError, err: errors.New("--artifacts: empty directory name")}
			}
			pl, err := newProwLayout(cmd, &opts)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			resultsDir := opts.ArtifactsDir
			if pl != nil {
				resultsDir = pl.dst
			}
			buildLog := prow.NewBuildLog(opts.ArtifactsDir)
			opts.Suites = suites.All()
			opts.Out = buildLog.Tee(stdout)
			opts.HarnessVersion = Version
			opts.Observers = append(opts.Observers, prow.NewObserver(opts.ArtifactsDir))
			res, err := runner.Run(ctx, opts)
			code := runner.ExitCode(res, err)
			if errors.Is(err, runner.ErrInterrupted) {
				err = errors.New("run interrupted; partial results are in " + resultsDir)
			}
			if err != nil && buildLog.Opened() {
				// The line Main prints on stderr belongs in the build log too.
				fmt.Fprintf(buildLog, "ccm-conformance: %s\n", err)
			}
			if cerr := buildLog.Close(); cerr != nil {
				fmt.Fprintf(stdout, "[ccm-conformance] build log: %v\n", cerr)
			}
			if pl != nil {
				code = pl.finish(code, stdout)
			}
			if code != 0 {
				return &exitError{code: code, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.ProfilePath, "provider", "", "provider profile (YAML, see docs/profile.md)")
	cmd.Flags().StringVar(&opts.LabelFilter, "label-filter", "", "ginkgo label filter selecting specs, e.g. 'InstancesV2 && !IPv6'")
	cmd.Flags().StringVar(&opts.ArtifactsDir, "artifacts", defaultArtifacts(), "run directory for started.json, finished.json, build-log.txt and artifacts/ (default _artifacts; with only $ARTIFACTS set, results go straight into it, as a Prow job's)")
	cmd.Flags().StringVar(&opts.Kubeconfig, "kubeconfig", "", "run against this existing cluster instead of the embedded local one")
	cmd.Flags().StringVar(&opts.KubernetesVersion, "kubernetes-version", "", "Kubernetes release of the local cluster (default: the version this build is pinned to)")
	_ = cmd.MarkFlagRequired("provider")
	return cmd
}

func defaultArtifacts() string {
	if a := os.Getenv("ARTIFACTS"); a != "" {
		return a
	}
	return "_artifacts"
}
