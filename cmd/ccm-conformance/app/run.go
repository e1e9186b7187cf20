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
			buildLog := prow.NewBuildLog(opts.ArtifactsDir)
			opts.Suites = suites.All()
			opts.Out = buildLog.Tee(stdout)
			opts.HarnessVersion = Version
			opts.Observers = append(opts.Observers, prow.NewObserver(opts.ArtifactsDir))
			res, err := runner.Run(ctx, opts)
			code := runner.ExitCode(res, err)
			if errors.Is(err, runner.ErrInterrupted) {
				err = errors.New("run interrupted; partial results are in " + opts.ArtifactsDir)
			}
			if err != nil && buildLog.Opened() {
				// The line Main prints on stderr belongs in the build log too.
				fmt.Fprintf(buildLog, "ccm-conformance: %s\n", err)
			}
			if cerr := buildLog.Close(); cerr != nil {
				fmt.Fprintf(stdout, "[ccm-conformance] build log: %v\n", cerr)
			}
			if code != 0 {
				return &exitError{code: code, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.ProfilePath, "provider", "", "provider profile (YAML, see docs/profile.md)")
	cmd.Flags().StringVar(&opts.LabelFilter, "label-filter", "", "ginkgo label filter selecting specs, e.g. 'InstancesV2 && !IPv6'")
	cmd.Flags().StringVar(&opts.ArtifactsDir, "artifacts", defaultArtifacts(), "run directory for started.json, finished.json, build-log.txt and artifacts/ (default $ARTIFACTS or _artifacts)")
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
