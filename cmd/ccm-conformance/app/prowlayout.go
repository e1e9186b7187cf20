package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

// prowLayout is run's mode for a Prow job (or a kubetest2 exec tester):
// --artifacts is not given and $ARTIFACTS is set, so $ARTIFACTS is the
// job's artifacts directory, whose parent holds the started.json,
// finished.json and build-log.txt of Prow's sidecar. The run directory is
// then a temporary one, and its artifacts/ (junit files, specs.json,
// timings.json, logs/) are exported straight into $ARTIFACTS, with the
// run's keys merged into $ARTIFACTS/metadata.json; nothing is nested one
// level too deep.
type prowLayout struct {
	// dst is $ARTIFACTS; runDir the temporary run directory.
	dst, runDir string
}

// newProwLayout returns nil unless run is in that mode; then it points
// opts at a temporary run directory seeded with $ARTIFACTS/metadata.json.
func newProwLayout(cmd *cobra.Command, opts *runner.Options) (*prowLayout, error) {
	if cmd.Flags().Changed("artifacts") || os.Getenv("ARTIFACTS") == "" {
		return nil, nil
	}
	dst, err := filepath.Abs(os.Getenv("ARTIFACTS"))
	if err != nil {
		return nil, fmt.Errorf("$ARTIFACTS: %w", err)
	}
	runDir, err := os.MkdirTemp("", "ccm-conformance-run-")
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if err := prow.SeedMetadata(filepath.Join(dst, filepath.Base(prow.MetadataFile)), runDir); err != nil {
		os.RemoveAll(runDir)
		return nil, err
	}
	opts.ArtifactsDir = runDir
	return &prowLayout{dst: dst, runDir: runDir}, nil
}

// finish exports the run into $ARTIFACTS, removes the temporary run
// directory, and returns the exit code, made 2 if the export failed.
func (p *prowLayout) finish(code int, stdout io.Writer) int {
	defer os.RemoveAll(p.runDir)
	if _, err := os.Stat(filepath.Join(p.runDir, prow.FinishedFile)); err != nil {
		return code // the run never started: bad input
	}
	var names []string
	for _, s := range suites.All() {
		names = append(names, s.Name)
	}
	if err := prow.ExportArtifacts(p.runDir, p.dst, names); err != nil {
		fmt.Fprintf(stdout, "[ccm-conformance] %v\n", err)
		if code == runner.ExitPassed {
			code = runner.ExitHarnessError
		}
		return code
	}
	fmt.Fprintf(stdout, "[ccm-conformance] results in $ARTIFACTS (%s), in the layout of a Prow job's artifacts\n", p.dst)
	return code
}
