package app

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

func newListCommand(stdout io.Writer) *cobra.Command {
	var labelFilter, output, profilePath string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the specs and their labels",
		Long: `List prints every spec with its labels. Capability labels (InstancesV2,
LoadBalancer, ...) say what a profile must declare for the spec to run; with
--provider, specs the profile would skip are marked with the missing
capability.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var p *profile.Profile
			if profilePath != "" {
				var err error
				if p, err = profile.Load(profilePath); err != nil {
					return &exitError{code: runner.ExitHarnessError, err: err}
				}
			}
			specs, err := runner.List(suites.All(), labelFilter)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			if output == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(specs)
			}
			if output != "text" {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("--output %q: want text or json", output)}
			}
			for _, s := range specs {
				line := fmt.Sprintf("%s [%s]", s.Text, strings.Join(s.Labels, ", "))
				if p != nil {
					var missing []string
					for _, l := range s.Labels {
						if c := profile.Capability(l); c.Known() && !p.Has(c) {
							missing = append(missing, l)
						}
					}
					if len(missing) > 0 {
						line += " (skipped: missing " + strings.Join(missing, ", ") + ")"
					}
				}
				fmt.Fprintln(stdout, line)
			}
			fmt.Fprintf(stdout, "%d specs\n", len(specs))
			return nil
		},
	}
	cmd.Flags().StringVar(&labelFilter, "label-filter", "", "only specs this ginkgo label filter selects")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().StringVar(&profilePath, "provider", "", "mark the specs this profile would skip")
	return cmd
}
