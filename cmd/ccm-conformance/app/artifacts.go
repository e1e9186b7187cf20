package app

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

func newValidateArtifactsCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "validate-artifacts DIR",
		Short: "Check a run directory for what makes TestGrid show an error",
		Long: `validate-artifacts checks a run directory (what run writes to --artifacts)
for the cases that make TestGrid or Spyglass show an error instead of results:
a missing or unparsable started.json or finished.json, a zero timestamp, no
"passed" in finished.json, a result that contradicts it, no junit file or one
that does not parse, and a failed run with no failing test case.

Exit codes: 0 valid, 1 invalid (each problem is printed), 2 DIR unreadable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			v, err := prow.Validate(dir)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("validate-artifacts %s: %w", dir, err)}
			}
			if !v.Valid() {
				for _, p := range v.Problems {
					fmt.Fprintf(stdout, "%s: %s\n", filepath.Join(dir, p.File), p.Message)
				}
				return &exitError{code: 1, err: fmt.Errorf("%s: not a valid run directory (%d problem(s))", dir, len(v.Problems))}
			}
			fmt.Fprintf(stdout, "%s: valid run directory: result %s, %d junit file(s), %d test case(s), %d failed\n",
				dir, v.Result, len(v.JUnitFiles), v.Cases, v.FailedCases)
			return nil
		},
	}
}
