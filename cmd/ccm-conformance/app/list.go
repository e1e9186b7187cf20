package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

func newListCommand(stdout io.Writer) *cobra.Command {
	var labelFilter, output, profilePath string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the specs and their labels",
		Long: `List prints every spec with its labels. Capability labels (InstancesV2,
LoadBalancer, ...) say what a profile must declare for the spec to run.

With --provider, the profile is checked as 'run' checks it (its cloud driver
answers its 'info' handshake), and each spec a run on the local cluster
would skip is marked with the reason the run would give: the missing
capability, a cloud-driver verb the driver does not implement, or simulated
machines the driver cannot create. A CCM built from its module
(ccm.binary.module) is checked as fields only and never built here.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("--output %q: want text or json", output)}
			}
			var (
				specs []runner.SpecInfo
				err   error
			)
			if profilePath != "" {
				specs, err = runner.ListForProfile(context.Background(), runner.ListOptions{
					Suites: suites.All(), LabelFilter: labelFilter, ProfilePath: profilePath,
					// As `run` without --kubeconfig: the local cluster.
					SimulatesNodes: true, ClusterCIDRs: local.DefaultClusterCIDRs(),
				})
			} else {
				specs, err = runner.List(suites.All(), labelFilter)
			}
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			if output == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(specs)
			}
			skipped := 0
			for _, s := range specs {
				line := fmt.Sprintf("%s [%s]", s.Text, strings.Join(s.Labels, ", "))
				if s.Skip != "" {
					skipped++
					line += " (skipped: " + skipReason(s) + ")"
				}
				fmt.Fprintln(stdout, line)
			}
			if profilePath != "" {
				fmt.Fprintf(stdout, "%d specs, %d would run, %d would skip\n", len(specs), len(specs)-skipped, skipped)
			} else {
				fmt.Fprintf(stdout, "%d specs\n", len(specs))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&labelFilter, "label-filter", "", "only specs this ginkgo label filter selects")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().StringVar(&profilePath, "provider", "", "mark the specs a run with this profile would skip, and why")
	return cmd
}

// skipReason says why a spec would skip: "missing CAP, ..." for
// capabilities the profile does not declare, else the run's own skip
// message.
func skipReason(s runner.SpecInfo) string {
	if _, caps, ok := strings.Cut(s.Skip, "does not declare capability "); ok {
		return "missing " + caps
	}
	return s.Skip
}
