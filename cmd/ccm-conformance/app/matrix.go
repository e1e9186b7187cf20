package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/kubeversion"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// parseVersions reads --kubernetes: a comma-separated list of distinct
// Kubernetes versions (kubeversion.Parse), kept in the order given.
func parseVersions(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("--kubernetes %q: want a comma-separated list of versions such as v1.36.3,v1.37.2", list)
	}
	var versions []string
	seen := map[string]bool{}
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
			return nil, fmt.Errorf("--kubernetes %q: an empty version in the list", list)
		case seen[v]:
			return nil, fmt.Errorf("--kubernetes %q: version %s is listed twice", list, v)
		}
		if _, err := kubeversion.Parse(v); err != nil {
			return nil, fmt.Errorf("--kubernetes %q: %w", list, err)
		}
		seen[v] = true
		versions = append(versions, v)
	}
	return versions, nil
}

// cellResult is how one version's run went.
type cellResult struct {
	// Code is the run's exit code: 0 passed, 1 a spec failed, 2 the
	// harness failed.
	Code                    int
	Passed, Failed, Skipped int
	Duration                time.Duration
	// Interrupted is true when SIGINT or SIGTERM stopped the cell.
	Interrupted bool
	// Err says why the cell did not pass, in one line.
	Err error
	// Published is where the store holds the run ("" when not published).
	Published string
}

func (c cellResult) status() string {
	switch {
	case c.Interrupted:
		return "interrupted"
	case c.Code == 0:
		return "passed"
	case c.Code == 1:
		return "failed"
	}
	return "error"
}

// cellRunner runs the suites on one Kubernetes version, writing the run
// directory dir.
type cellRunner func(ctx context.Context, version, dir string) cellResult

// matrix runs one cell per version, in order, and prints the table.
type matrix struct {
	versions  []string
	artifacts string
	run       cellRunner
	// publish, when set, publishes a finished cell's run directory and
	// returns where the store holds it.
	publish func(ctx context.Context, dir string) (string, error)
	out     io.Writer
}

// cellDir is the run directory of a version's cell.
func (m *matrix) cellDir(version string) string { return filepath.Join(m.artifacts, version) }

// Run runs the cells and returns the exit code: 2 when a cell's harness
// failed, a publish failed or the matrix was interrupted; otherwise 1 when
// a cell had a failed spec; 0 when every cell passed.
func (m *matrix) Run(ctx context.Context) (int, error) {
	var cells []cellResult
	var done []string
	tw := newMatrixTable(m.out)
	for _, v := range m.versions {
		if ctx.Err() != nil {
			break
		}
		c := m.run(ctx, v, m.cellDir(v))
		if ctx.Err() != nil {
			c.Interrupted = true
		}
		if m.publish != nil && !c.Interrupted {
			loc, err := m.publish(ctx, m.cellDir(v))
			if err != nil {
				c.Err = errors.Join(c.Err, fmt.Errorf("publishing %s: %w", m.cellDir(v), err))
				if c.Code == 0 {
					c.Code = runner.ExitHarnessError
				}
			}
			c.Published = loc
		}
		cells = append(cells, c)
		done = append(done, v)
		tw.row(v, c)
		if c.Interrupted {
			break
		}
	}
	fmt.Fprintln(m.out)
	fmt.Fprintln(m.out, "matrix:")
	final := newMatrixTable(m.out)
	for i, c := range cells {
		final.row(done[i], c)
	}
	return matrixExit(m.versions, done, cells)
}

// matrixExit is the exit code and error line of a matrix.
func matrixExit(versions, done []string, cells []cellResult) (int, error) {
	code := 0
	var bad []string
	for i, c := range cells {
		switch {
		case c.Interrupted || c.Code >= runner.ExitHarnessError:
			code = runner.ExitHarnessError
		case c.Code != 0 && code == 0:
			code = 1
		}
		if c.Code != 0 || c.Interrupted {
			bad = append(bad, fmt.Sprintf("%s %s", done[i], c.status()))
		}
	}
	if len(done) < len(versions) {
		code = runner.ExitHarnessError
		bad = append(bad, fmt.Sprintf("not run: %s", strings.Join(versions[len(done):], ",")))
	}
	if code == 0 {
		return 0, nil
	}
	return code, fmt.Errorf("matrix: %s", strings.Join(bad, "; "))
}

// matrixTable prints rows aligned as they come: each row is flushed at
// once, so the widths are fixed.
type matrixTable struct{ w io.Writer }

const matrixRowFormat = "%-12s %-12s %7s %7s %8s %9s  %s\n"

func newMatrixTable(w io.Writer) matrixTable {
	fmt.Fprintf(w, matrixRowFormat, "KUBERNETES", "STATUS", "PASSED", "FAILED", "SKIPPED", "TIME", "NOTE")
	return matrixTable{w: w}
}

func (t matrixTable) row(version string, c cellResult) {
	note := c.Published
	if c.Err != nil {
		note = strings.TrimSpace(strings.ReplaceAll(c.Err.Error(), "\n", "; "))
	}
	fmt.Fprintf(t.w, matrixRowFormat, version, c.status(), strconv.Itoa(c.Passed), strconv.Itoa(c.Failed), strconv.Itoa(c.Skipped),
		c.Duration.Round(time.Second).String(), note)
}

// countSpecs reads a cell's counts from its run directory's specs.json,
// as the run's own summary counts them: specs that passed, failed (also
// when an interrupt cut them short) and skipped, leaving out suite-level
// nodes and the specs the label filter left out (skipped with no reason).
// A run that wrote no specs.json (it stopped before its specs) counts
// nothing.
func countSpecs(dir string, c *cellResult) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(prow.SpecsFile)))
	if err != nil {
		return
	}
	defer f.Close()
	rec, err := prow.DecodeSpecs(f)
	if err != nil {
		return
	}
	for _, s := range rec.Specs {
		switch {
		case s.Node != "":
		case s.Passed():
			c.Passed++
		case s.Failed():
			c.Failed++
		case s.Skipped() && s.SkipReason != "":
			c.Skipped++
		}
	}
}

// cellStopWait is how long an interrupted cell's run has, after its
// SIGINT, to tear its clusters down and write its partial results before
// it is killed: well above a local cluster's teardown (seconds).
const cellStopWait = 2 * time.Minute

// execCell runs a cell as `run` in a child process of this binary.
//
// A child, not runner.Run in this process: ginkgo runs its specs once per
// process (run's own lanes re-exec for the same reason), so a second
// version cannot run here. The child is exactly what `run --kubernetes-version
// V --artifacts DIR/V` does, run directory, lanes and exit code included.
func execCell(profilePath, labelFilter string, log io.Writer) cellRunner {
	return func(ctx context.Context, version, dir string) cellResult {
		self, err := os.Executable()
		if err != nil {
			return cellResult{Code: runner.ExitHarnessError, Err: fmt.Errorf("finding this program: %w", err)}
		}
		args := []string{"run", "--provider", profilePath, "--kubernetes-version", version, "--artifacts", dir}
		if labelFilter != "" {
			args = append(args, "--label-filter", labelFilter)
		}
		cmd := exec.CommandContext(ctx, self, args...)
		// Interrupted, the child tears its cluster down and writes its
		// partial results, as run does on SIGINT.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = cellStopWait
		cmd.Stdout, cmd.Stderr = log, log
		fmt.Fprintf(log, "[ccm-conformance] matrix: %s\n", strings.Join(cmd.Args, " "))
		start := time.Now()
		err = cmd.Run()
		c := cellResult{Duration: time.Since(start)}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ExitCode() > 0:
			c.Code = ee.ExitCode()
			c.Err = fmt.Errorf("run exited %d, results in %s", c.Code, dir)
		default:
			c.Code = runner.ExitHarnessError
			c.Err = fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
		}
		countSpecs(dir, &c)
		return c
	}
}

func newMatrixCommand(stdout, stderr io.Writer) *cobra.Command {
	var profilePath, versionList, storeURL, artifacts, labelFilter string
	cmd := &cobra.Command{
		Use:   "matrix --provider FILE --kubernetes v1.36.3,v1.37.2",
		Short: "Run the suites on several Kubernetes versions, one after another",
		Long: `matrix runs the suites against the provider once per Kubernetes version, in the
order given, each exactly as 'run --kubernetes-version V --artifacts DIR/V'
would, on the embedded local cluster. It prints a row (version, status,
passed, failed, skipped, time) as each version finishes and the whole table at
the end. With --store, each finished version's run directory is published to
the results store, as 'publish' does. The runs' own output goes to stderr.

Each version's binaries build once and are cached (docs/local-cluster.md);
a version not yet built takes many minutes the first time.

SIGINT or SIGTERM stops the current version (its run tears down and writes
its partial results, which are not published) and prints the table of what
finished.

Exit codes: 0 every version passed, 1 a spec failed on some version, 2 bad
input, a harness error on some version, a failed publish, or an interrupt.`,
		Example: `  ccm-conformance matrix --provider providers/profiles/reference.yaml --kubernetes v1.36.3,v1.37.2
  ccm-conformance matrix --provider my.yaml --kubernetes v1.35.4,v1.36.3,v1.37.2 --store gs://my-results`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			versions, err := parseVersions(versionList)
			if err != nil {
				return badInput(err)
			}
			if artifacts == "" {
				return badInput(errors.New("--artifacts: empty directory name"))
			}
			if _, err := os.Stat(profilePath); err != nil {
				return badInput(fmt.Errorf("--provider: %w", err))
			}
			// The children run from the same working directory, but
			// absolute paths keep the rows' notes unambiguous.
			if abs, err := filepath.Abs(profilePath); err == nil {
				profilePath = abs
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			m := &matrix{versions: versions, artifacts: artifacts, run: execCell(profilePath, labelFilter, stderr), out: stdout}
			if storeURL != "" {
				st, err := store.Open(ctx, storeURL, store.WithCreate())
				if err != nil {
					return badInput(fmt.Errorf("--store: %w", err))
				}
				defer st.Close()
				m.publish = func(ctx context.Context, dir string) (string, error) {
					b, err := st.Publish(ctx, dir)
					if err != nil {
						return "", err
					}
					return st.Location(b.Prefix()), nil
				}
			}
			code, err := m.Run(ctx)
			if code != 0 {
				return &exitError{code: code, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&profilePath, "provider", "", "provider profile (YAML, see docs/profile.md)")
	cmd.Flags().StringVar(&versionList, "kubernetes", "", "Kubernetes versions to run on, comma-separated and in order, e.g. v1.36.3,v1.37.2")
	cmd.Flags().StringVar(&storeURL, "store", "", "publish each version's run to this results store: a directory, file:///dir, gs://bucket[/prefix] or s3://bucket[/prefix] (default: publish nothing)")
	cmd.Flags().StringVar(&artifacts, "artifacts", defaultArtifacts(), "directory of the run directories, one per version: DIR/v1.37.2/...")
	cmd.Flags().StringVar(&labelFilter, "label-filter", "", "ginkgo label filter passed to each run, e.g. 'InstancesV2 && !IPv6'")
	_ = cmd.MarkFlagRequired("provider")
	_ = cmd.MarkFlagRequired("kubernetes")
	return cmd
}
