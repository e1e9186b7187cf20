package app

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/checks/releasecheck"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
)

func newReleaseCheckCommand(stdout io.Writer) *cobra.Command {
	var (
		image, output, runDir string
		opts                  releasecheck.Options
	)
	cmd := &cobra.Command{
		Use:   "release-check --image REF",
		Short: "Check a CCM release image against docs/release-guidelines.md",
		Long: `release-check inspects a cloud-controller-manager image against the release
guidelines (docs/release-guidelines.md): a non-root numeric user, no shell and
no package manager, the CCM as entrypoint, the OCI labels version, source and
revision, --version printing the labelled version, the flags of
k8s.io/cloud-provider in --help, Kubernetes libraries not older than the
Kubernetes version claimed, and a multi-arch index. It extracts the
entrypoint binary into a temporary directory to run it (--version, --help) and
read its Go build info, and removes it after. Nothing is pulled.

` + releasecheck.RefHelp + `

With --run-dir DIR (a run directory, as run writes to --artifacts) the report
is also written to DIR/` + releasecheck.ResultFile + ` and its summary merged into
DIR/artifacts/metadata.json (keys release-check, release-check-image,
release-check-digest).

Exit codes: 0 no item failed (warnings allowed), 1 an item failed, 2 bad input
(an image that is missing or unreadable, bad flags).`,
		Example: `  ccm-conformance release-check --image ccm-conformance/reference-ccm:latest
  ccm-conformance release-check --image _output/images/reference-ccm.tar --kubernetes-version v1.37.2
  ccm-conformance release-check --image oci-layout:./ccm-layout -o json
  ccm-conformance release-check --image my-ccm:v1.37.0 --run-dir _artifacts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if image == "" {
				return badInput(errors.New("--image: required (a Docker image name, oci-layout:DIR or a .tar path)"))
			}
			if output != "text" && output != "json" {
				return badInput(fmt.Errorf("--output %q: want text or json", output))
			}
			if opts.KubernetesVersion != "" {
				if _, err := releasecheck.ParseKubernetesVersion(opts.KubernetesVersion); err != nil {
					return badInput(fmt.Errorf("--kubernetes-version %q: %w", opts.KubernetesVersion, err))
				}
			}
			rep, err := releasecheck.Check(cmd.Context(), image, opts)
			var ie *releasecheck.InputError
			switch {
			case errors.As(err, &ie):
				return badInput(ie)
			case err != nil:
				return badInput(fmt.Errorf("release check of %s: %w", image, err))
			}
			if output == "json" {
				err = rep.WriteJSON(stdout)
			} else {
				err = rep.WriteText(stdout)
			}
			if err != nil {
				return badInput(err)
			}
			if runDir != "" {
				if err := rep.WriteToRunDir(runDir); err != nil {
					return badInput(fmt.Errorf("--run-dir %s: %w", runDir, err))
				}
			}
			if rep.Failed > 0 {
				return &exitError{code: runner.ExitFailed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "the CCM image: a Docker engine image name, oci-layout:DIR, or a .tar path")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().StringVar(&opts.KubernetesVersion, "kubernetes-version", "", "the Kubernetes version (v1.N or v1.N.P) the image claims (default: label "+releasecheck.LabelK8sVersion+", else a v1.N.P version label, per KEP-1771)")
	cmd.Flags().StringVar(&opts.Platform, "platform", "", "the os/arch checked from a multi-arch index (default linux/<this machine's arch>)")
	cmd.Flags().StringVar(&runDir, "run-dir", "", "also store the report with this run directory: artifacts/release-check.json and keys in artifacts/metadata.json")
	return cmd
}
