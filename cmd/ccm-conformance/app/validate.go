package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
)

func newValidateCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "validate-profile FILE",
		Short: "Check a provider profile without running anything",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := profile.Load(args[0])
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			caps := make([]string, len(p.Capabilities))
			for i, c := range p.Capabilities {
				caps[i] = string(c)
			}
			fmt.Fprintf(stdout, "profile %s is valid: provider %q, capabilities %s\n", args[0], p.Name, strings.Join(caps, ", "))
			return nil
		},
	}
}
