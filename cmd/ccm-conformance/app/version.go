package app

import (
	"cmp"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/internal/harnessversion"
)

// Version is the harness version (internal/harnessversion: stamped by a
// release build, else the module version of `go install ...@version`).
var Version = harnessversion.Get()

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the harness version and the Kubernetes version it is pinned to",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			commit := cmp.Or(harnessversion.Commit(), "unknown")
			fmt.Fprintf(stdout, "ccm-conformance %s (commit %s), Kubernetes %s\n", Version, commit, local.DefaultKubernetesVersion)
		},
	}
}
