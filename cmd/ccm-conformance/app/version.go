package app

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/local"
)

// Version is the harness version, set at build time with
// -ldflags "-X github.com/ccm-conformance/ccm-conformance/cmd/ccm-conformance/app.Version=v0.1.0".
var Version = "devel"

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the harness version and the Kubernetes version it is pinned to",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			commit := "unknown"
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" {
						commit = s.Value
					}
				}
			}
			fmt.Fprintf(stdout, "ccm-conformance %s (commit %s), Kubernetes %s\n", Version, commit, local.DefaultKubernetesVersion)
		},
	}
}
