package app

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

func newRunCommand(stdout io.Writer) *cobra.Command {
	var opts runner.Options
	cmd := &cobra.Command{
		Use:   "run --provider FILE",
		Short: "Run the conformance suites against a provider's CCM",
		Long: `Run brings up the cluster (the embedded local cluster unless --kubeconfig is
given), starts the profile's services and its CCM, registers simulated nodes,
runs the selected specs, writes junit_01.xml, summary.txt and logs/ under
--artifacts, and tears everything down, also on SIGINT or SIGTERM.

Specs carry the capabilities they need as labels; a spec whose capability the
profile does not declare is skipped and says which one was missing.`,
		Example: `  ccm-conformance run --provider providers/profiles/reference.yaml
  ccm-conformance run --provider my.yaml --label-filter 'InstancesV2 && !DualStack'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			opts.Suites = suites.All()
			opts.Out = stdout
			opts.HarnessVersion = Version
			res, err := runner.Run(ctx, opts)
			code := runner.ExitCode(res, err)
			if errors.Is(err, runner.ErrInterrupted) {
				return &exitError{code: code, err: errors.New("run interrupted; partial results are in " + opts.ArtifactsDir)}
			}
			if code != 0 {
				return &exitError{code: code, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.ProfilePath, "provider", "", "provider profile (YAML, see docs/profile.md)")
	cmd.Flags().StringVar(&opts.LabelFilter, "label-filter", "", "ginkgo label filter selecting specs, e.g. 'InstancesV2 && !IPv6'")
	cmd.Flags().StringVar(&opts.ArtifactsDir, "artifacts", defaultArtifacts(), "directory for junit_01.xml, summary.txt and logs (default $ARTIFACTS or _artifacts)")
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
