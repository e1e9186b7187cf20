package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir"
)

// runDirOptions says where run writes its results. With --artifacts DIR
// (or neither --artifacts nor $ARTIFACTS), DIR is the run directory.
// Under a Prow job (or kubetest2's exec tester) --artifacts is not given
// and $ARTIFACTS is set: $ARTIFACTS is then the job's artifacts directory,
// whose parent holds the started.json, finished.json and build-log.txt of
// Prow's sidecar, so the run directory is a temporary one whose artifacts/
// are exported straight into $ARTIFACTS, with the run's keys merged into
// $ARTIFACTS/metadata.json; nothing is nested one level too deep.
func runDirOptions(cmd *cobra.Command, opts runner.Options, stdout io.Writer) (rundir.Options, error) {
	o := rundir.Options{
		Runner:      opts,
		Name:        "ccm-conformance",
		Dir:         opts.ArtifactsDir,
		Out:         stdout,
		LaneCommand: laneCommand,
	}
	if cmd.Flags().Changed("artifacts") || os.Getenv(rundir.EnvArtifacts) == "" {
		return o, nil
	}
	dst, err := filepath.Abs(os.Getenv(rundir.EnvArtifacts))
	if err != nil {
		return o, fmt.Errorf("$%s: %w", rundir.EnvArtifacts, err)
	}
	o.Dir, o.ExportTo = "", dst
	return o, nil
}
