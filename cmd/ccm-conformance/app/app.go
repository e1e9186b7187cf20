// Package app is the ccm-conformance command line.
//
// Floor: the commands, the top. They parse flags and delegate to the floors
// below.
package app

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

// Main runs the command line and returns the process exit code: 0 all
// passed, 1 a spec failed, 2 the harness or its input failed.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			printError(stderr, ee.err)
		}
		return ee.code
	}
	// Flag and argument errors from cobra: bad input.
	printError(stderr, err)
	return runner.ExitHarnessError
}

func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "ccm-conformance: %s\n", strings.TrimSpace(err.Error()))
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "ccm-conformance",
		Short: "Conformance tests for Kubernetes cloud-controller-managers",
		Long: `ccm-conformance runs one set of conformance suites (nodes, node IPs, and more)
against any cloud-controller-manager, on an embedded local cluster or an
existing one, and reports which specs pass.

Exit codes: 0 every selected spec passed, 1 a spec failed, 2 the harness or
its input failed (bad profile, missing binary, unreachable cluster, interrupt).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newRunCommand(stdout),
		newListCommand(stdout),
		newValidateCommand(stdout),
		newValidateDriverCommand(stdout),
		newValidateArtifactsCommand(stdout),
		newPublishCommand(stdout),
		newLKGCommand(stdout, stderr),
		newReportCommand(stdout, stderr),
		newTestGridConfigCommand(stdout),
		newClusterCommand(stdout, stderr),
		newKindCommand(stdout, stderr),
		newVersionCommand(stdout),
		newReleaseCheckCommand(stdout),
		newMatrixCommand(stdout, stderr),
		newCompareUpstreamCommand(stdout, stderr),
		newCCMCommand(stdout, stderr),
		newSweepCommand(stdout),
	)
	return root
}
