// Package rundir writes a run directory (docs/artifacts.md) while a run
// happens: the Observer that the runner tells when a run starts and ends,
// the junit files made from ginkgo's report, the build log, and the export
// of a run's artifacts/ into a Prow job's (or kubetest2's) $ARTIFACTS.
//
// Run owns the whole flow for both binaries (ccm-conformance run and
// kubetest2-tester-ccm): it seeds the run directory from the destination's
// metadata.json, runs the suites, exports the artifacts and merges the
// metadata back.
//
// The format itself, which readers of results need, is reports/prow; this
// package is above it and above framework/runner.
//
// Floor: the reports, as their one writer of a run directory: the only
// reports package that stands on the framework (its runner).
package rundir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/redact"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// Options say where one run writes its results. Every field but Runner
// and Name has a default.
type Options struct {
	// Runner configures the run. Its ArtifactsDir, Out and LaneCommand are
	// set by Run; its Observers get the run directory's Observer added.
	Runner runner.Options
	// Name is the program's name. It heads the lines Run prints about the
	// results ("[Name] results in …") and the error line it writes into
	// the build log ("Name: …"), which is the line the program prints on
	// stderr. Required.
	Name string
	// Dir is the run directory. Default: a temporary directory, removed
	// when the run is over; only useful with ExportTo.
	Dir string
	// ExportTo is an artifacts directory that receives the run's
	// artifacts/ as a Prow job's artifacts are laid out ($ARTIFACTS under
	// Prow or kubetest2): Dir is seeded with its metadata.json before the
	// run, and after it the junit files, records and logs are copied there
	// and the run's keys merged into its metadata.json (ExportArtifacts).
	// Default: none, Dir is where the results are.
	ExportTo string
	// Metadata are keys to add to metadata.json and finished.json over the
	// run's own (WithMetadata); empty values are left out.
	Metadata map[string]string
	// Out receives the run's progress and summary; the build log gets a
	// copy. Default os.Stdout.
	Out io.Writer
	// LaneCommand, when the run has lanes, makes the command line of a
	// lane's worker for the run directory, where the worker writes its
	// logs. Required when Runner.Lanes > 0.
	LaneCommand func(dir string) func(runner.Lane) *exec.Cmd

	// run runs the suites; runner.Run unless a test sets it.
	run func(context.Context, runner.Options) (*runner.Result, error)
}

func (o Options) withDefaults() Options {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.run == nil {
		o.run = runner.Run
	}
	return o
}

// resultsDir is where a run's results end up.
func (o Options) resultsDir(dir string) string {
	if o.ExportTo != "" {
		return o.ExportTo
	}
	return dir
}

// interruptedError is the error of a run that SIGINT or SIGTERM ended.
type interruptedError struct{ results string }

func (e *interruptedError) Error() string {
	return "run interrupted; partial results are in " + e.results
}

func (e *interruptedError) Unwrap() error { return runner.ErrInterrupted }

// Run runs the suites and writes the run directory: it seeds the run
// directory from ExportTo's metadata.json, runs with the run directory's
// observer and build log, exports the artifacts into ExportTo, and writes
// the final error line into the build log.
//
// It returns the exit code (runner.ExitCode; 2 when the export failed
// after a passing run) and, when the run or its export failed, the error,
// in one line for the program to print. Interrupted, the run still writes
// its partial results and the error says where they are. Bad input found
// before the run started leaves no run directory and exports nothing.
func Run(ctx context.Context, o Options) (int, error) {
	o = o.withDefaults()
	dir, cleanup, err := o.prepare()
	if err != nil {
		return runner.ExitHarnessError, err
	}
	defer cleanup()

	// The profile's ${env:NAME} values never reach the output, the build
	// log or the run directory.
	secrets, err := runner.ProfileSecrets(o.Runner.ProfilePath)
	if err != nil {
		return runner.ExitHarnessError, err
	}
	red, err := redact.New(secrets)
	if err != nil {
		return runner.ExitHarnessError, fmt.Errorf("profile %s: %w", o.Runner.ProfilePath, err)
	}

	ro := o.Runner
	ro.ArtifactsDir = dir
	ro.LogDir = filepath.Join(dir, filepath.FromSlash(prow.LogsDir))
	if ro.Lanes > 0 && o.LaneCommand != nil {
		ro.LaneCommand = o.LaneCommand(dir)
	}
	buildLog := NewBuildLog(dir)
	redacted := red.Writer(buildLog.Tee(o.Out))
	out := redacted
	ro.Out = out
	ro.Observers = append(slices.Clone(ro.Observers), NewObserver(dir, WithMetadata(o.Metadata)))

	res, err := o.run(ctx, ro)
	code := runner.ExitCode(res, err)
	if errors.Is(err, runner.ErrInterrupted) {
		err = &interruptedError{results: o.resultsDir(dir)}
	}
	err = red.Error(err)
	if changed, rerr := red.Dir(dir); rerr != nil {
		fmt.Fprintf(out, "[%s] keeping secrets out of the run directory: %v\n", o.Name, rerr)
		code = max(code, runner.ExitHarnessError)
	} else if len(changed) > 0 {
		fmt.Fprintf(out, "[%s] secrets from the environment redacted in %d file(s) of the run directory\n", o.Name, len(changed))
	}
	if o.ExportTo != "" && fileExists(filepath.Join(dir, prow.FinishedFile)) {
		if xerr := ExportArtifacts(dir, o.ExportTo, suiteNames(ro)); xerr != nil {
			if code == runner.ExitPassed {
				code = runner.ExitHarnessError
			}
			if err == nil {
				err = xerr
			} else {
				fmt.Fprintf(out, "[%s] %v\n", o.Name, xerr)
			}
		} else {
			fmt.Fprintf(out, "[%s] results in %s, laid out as a Prow job's artifacts", o.Name, o.ExportTo)
			if o.Dir != "" {
				fmt.Fprintf(out, "; run directory %s (ccm-conformance publish takes it)", dir)
			}
			fmt.Fprintln(out)
		}
	}
	_ = redacted.Close()
	if err != nil && buildLog.Opened() {
		// The line the program prints on stderr belongs in the build log too.
		fmt.Fprintf(buildLog, "%s: %s\n", o.Name, strings.TrimSpace(err.Error()))
	}
	if cerr := buildLog.Close(); cerr != nil {
		fmt.Fprintf(o.Out, "[%s] build log: %v\n", o.Name, cerr)
	}
	return code, err
}

// prepare returns the run directory and what undoes it: a temporary
// directory when Dir is empty, seeded with ExportTo's metadata.json when
// there is an ExportTo.
func (o Options) prepare() (dir string, cleanup func(), err error) {
	dir, cleanup = o.Dir, func() {}
	if dir == "" {
		if o.ExportTo == "" {
			return "", nil, errors.New("run directory: neither a directory nor an artifacts directory to export to")
		}
		if dir, err = os.MkdirTemp("", o.Name+"-run-"); err != nil {
			return "", nil, fmt.Errorf("run directory: %w", err)
		}
		cleanup = func() { os.RemoveAll(dir) }
	}
	if o.ExportTo == "" {
		return dir, cleanup, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("run directory: %w", err)
	}
	if err := SeedMetadata(filepath.Join(o.ExportTo, filepath.Base(prow.MetadataFile)), dir); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("seeding the run directory: %w", err)
	}
	return dir, cleanup, nil
}

// suiteNames are the names of the run's suites, whose junit files an
// earlier export may have left.
func suiteNames(ro runner.Options) []string {
	names := make([]string, 0, len(ro.Suites))
	for _, s := range ro.Suites {
		names = append(names, s.Name)
	}
	return names
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// EnvArtifacts is the variable that names a Prow job's (and a kubetest2
// run's) artifacts directory.
const EnvArtifacts = "ARTIFACTS"

// DefaultArtifacts is where results go unless a flag says otherwise:
// $ARTIFACTS when it is set, else runner.DefaultArtifactsDir.
func DefaultArtifacts(getenv func(string) string) string {
	if a := getenv(EnvArtifacts); a != "" {
		return a
	}
	return runner.DefaultArtifactsDir
}
