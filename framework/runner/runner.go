// Package runner runs the conformance suites against one CCM.
//
// A run brings up a world (world.go): a cluster from the caller's backend,
// the profile's services and cloud driver, the CCM under test and, where the
// cluster has no machines, simulated nodes. It runs the selected specs there
// with ginkgo (specs.go), tears the world down, also when interrupted, and
// tells its observers, which write the reports.
//
// A run on a backend that can make more than one cluster may split its specs
// over lanes (lanes.go): worker processes, each with a world of its own,
// that take the specs in turn. The results are merged as if one world had
// run them.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/internal/plainlog"
)

// DefaultArtifactsDir is the run directory when Options.ArtifactsDir is empty.
const DefaultArtifactsDir = "_artifacts"

// How finely progress lines and the summary round durations (display only).
const (
	phasePrecision   = 10 * time.Millisecond
	summaryPrecision = time.Second
)

// Options configure one run.
type Options struct {
	// ProfilePath is the provider profile. Required.
	ProfilePath string
	// Backend brings up the cluster. Required.
	Backend cluster.Backend
	// LabelFilter is a ginkgo label filter that narrows the specs, for
	// example "LoadBalancer && !DataPath". Default: every spec.
	LabelFilter string
	// ArtifactsDir is the run directory, which the observers write (see
	// reports/rundir). Default DefaultArtifactsDir.
	ArtifactsDir string
	// LogDir is where the components' logs go: the CCM's, the services',
	// the cluster's; each lane's under lane-N/. The run directory's writer
	// says where in its layout (reports/rundir). Default ArtifactsDir/logs.
	LogDir string
	// Suites are the suites to declare.
	Suites []framework.Suite
	// Out receives progress and the summary. Default os.Stdout.
	Out io.Writer
	// Progress receives the progress of building the CCM of
	// ccm.binary.module into the binary cache, which Run does before any
	// cluster starts (CCMExecutable). Default os.Stderr.
	Progress io.Writer
	// HarnessVersion goes into RunInfo.
	HarnessVersion string
	// Observers are told when the run starts and ends.
	Observers []Observer
	// Lanes is how many worlds run the specs side by side, each in a worker
	// process of its own (see lanes.go). 0 runs them in this process.
	// Only backends whose every Start makes a new cluster can have more
	// than one; the caller decides (AutoLanes suggests a number).
	Lanes int
	// LaneCommand returns the command line of a lane's worker: this
	// program, run as it was, plus lane.Args(). Required when Lanes > 0.
	LaneCommand func(lane Lane) *exec.Cmd
	// Lane is set in a worker process: run that lane's share of the specs
	// and write its report for the coordinating process, nothing else.
	Lane *Lane
	// KubernetesVersion is the release of a cluster the backend makes;
	// default the profile's cluster.kubernetesVersion, else the backend's
	// own default (the pinned release).
	KubernetesVersion string
	// EchoImage is the echo server image the data path specs run as
	// backend pods. A cluster that loads images (kind) gets it from the
	// Docker engine, default framework.DefaultEchoImage; any other cluster
	// (--kubeconfig) runs it as named, pulled from its registry or already
	// on its nodes, and without one the data path specs on real pods skip.
	EchoImage string
	// Seed orders the specs (ginkgo's random seed), the same in every
	// lane; 0 takes one from the clock. The seed used is printed and
	// recorded (RunInfo.Seed), so that an order-dependent failure can be
	// run again in the same order.
	Seed int64
	// AfterSpecs, if set, runs in the world once the specs and the leak
	// check are done and before the teardown, while the cluster, the cloud
	// and the CCM are still up: compare-upstream runs upstream's e2e specs
	// there. Its error is reported, and fails the run as a harness error.
	// Only a run in one world (Lanes 0) calls it.
	AfterSpecs func(ctx context.Context, w WorldView) error
}

// WorldView is what AfterSpecs gets of the world the specs ran in.
type WorldView struct {
	// Cluster is the world's cluster: its kubeconfig, and whether it loads
	// images (cluster.ImageLoader).
	Cluster cluster.Cluster
	// Report is the specs' ginkgo report.
	Report types.Report
	// Out receives progress lines.
	Out io.Writer
	// LogDir is the run directory's artifacts/logs.
	LogDir string
}

func (o Options) withDefaults() Options {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.ArtifactsDir == "" {
		o.ArtifactsDir = DefaultArtifactsDir
	}
	if o.LogDir == "" {
		o.LogDir = filepath.Join(o.ArtifactsDir, "logs")
	}
	return o
}

// Result counts the specs of a run.
type Result struct {
	Passed, Failed, Skipped, Pending int
	// NotSelected counts the specs the label filter left out. They are
	// not skips: a skip says what the spec was missing.
	NotSelected int
	// SkipReasons counts the skipped specs by the first line of what each
	// said it was missing.
	SkipReasons map[string]int
	Interrupted bool
	// Failures holds one line per failed spec: its name and message.
	Failures []string
	// DriverFailures are the failed specs (counted in Failed too) in which
	// the cloud driver broke its protocol; DriverFault is the first such
	// protocol error. Those specs failed for the driver, not the CCM.
	DriverFailures []string
	DriverFault    string
	// Leftovers name what the specs left behind (LeakError), also when a
	// spec failed and the run's error is not the leak.
	Leftovers []string
	Duration  time.Duration
}

// Summary is the closing line of a run: "N passed, N failed, N skipped",
// the shape CI jobs parse. Specs the label filter left out are not in it
// (see NotSelectedLine).
func (r *Result) Summary() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", r.Passed, r.Failed, r.Skipped)
}

// NothingTested says in one line why a run that finished tested nothing:
// no spec passed or failed, because every selected spec was skipped (the
// most common reason is named) or none was selected. It is "" when some
// spec passed or failed, or when the run was interrupted (which is its own
// outcome). A run that tested nothing is not a pass: a CI job that ran it
// would turn green having shown nothing of the CCM.
func (r *Result) NothingTested() string {
	if r.Interrupted || r.Passed+r.Failed > 0 {
		return ""
	}
	if r.Skipped == 0 {
		if r.NotSelected > 0 {
			return fmt.Sprintf("the label filter selected none of the %d specs", r.NotSelected)
		}
		return "the run has no specs"
	}
	reason, most := "", 0
	for why, n := range r.SkipReasons {
		if n > most || n == most && why < reason {
			reason, most = why, n
		}
	}
	line := fmt.Sprintf("all %d selected specs were skipped", r.Skipped)
	if reason != "" {
		line += fmt.Sprintf("; %d of them: %s", most, reason)
	}
	if others := len(r.SkipReasons) - 1; others > 0 {
		line += fmt.Sprintf(" (and %d other reason(s), in the run's output)", others)
	}
	return line
}

// NotSelectedLine says how many specs the label filter left out, or is
// empty when it left none out.
func (r *Result) NotSelectedLine() string {
	if r.NotSelected == 0 {
		return ""
	}
	return fmt.Sprintf("not selected: %d (left out by the label filter; not run, not skipped)", r.NotSelected)
}

// Run executes the suites. It returns a harness error (an *InputError, a
// *SetupError or ErrInterrupted) when the specs could not run, and a
// *DriverError with the result when every failed spec failed because the
// cloud driver broke its protocol; otherwise the result says how they
// went. ctx ending means the run was interrupted: teardown still happens
// and partial results are written.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	opts = opts.withDefaults()
	checked, err := checkInput(ctx, opts)
	if err != nil {
		return nil, err
	}
	p := checked.Profile
	if opts.Lane != nil {
		return nil, runLane(ctx, opts, checked)
	}
	// A CCM built from its module is built now, before any cluster: a
	// cold build takes minutes. Like bad input, a failed (or interrupted)
	// build leaves no results: no run started.
	if checked.CCMBinary, err = CCMExecutable(ctx, p, opts.progressOut()); err != nil {
		return nil, err
	}
	runID, err := newRunID()
	if err != nil {
		return nil, &SetupError{Step: "run ID", Err: err}
	}
	info := RunInfo{
		Provider:       p.Name,
		ProfilePath:    p.Path,
		ProfileDigest:  p.Digest,
		Backend:        opts.Backend.Name(),
		HarnessVersion: opts.HarnessVersion,
		LabelFilter:    opts.LabelFilter,
		Started:        time.Now(),
		RunID:          runID,
		Seed:           cmp.Or(opts.Seed, time.Now().UnixNano()%1_000_000+1),
	}
	log := opts.logger()
	log.Info(fmt.Sprintf("specs in the order of seed %d (--seed %d runs them in this order again)", info.Seed, info.Seed))
	for _, c := range p.Capabilities {
		info.Capabilities = append(info.Capabilities, string(c))
	}
	recordCCMIdentity(&info, checked, log)
	for _, o := range opts.Observers {
		if oerr := o.RunStarted(info); oerr != nil {
			return nil, &SetupError{Step: "reports", Err: oerr}
		}
	}
	var report types.Report
	defer func() {
		for _, o := range opts.Observers {
			if oerr := o.RunFinished(info, report, res, err); oerr != nil {
				log.Error(oerr, "writing reports")
				if err == nil {
					err = &SetupError{Step: "reports", Err: oerr}
				}
			}
		}
	}()

	start := time.Now()
	var specsErr error
	if opts.Lanes > 0 {
		report, specsErr = runLanes(ctx, opts, checked, &info)
	} else {
		report, specsErr = runOneWorld(ctx, opts, checked, &info)
	}
	if len(report.SpecReports) == 0 && specsErr != nil {
		// No spec ran: the world never came up.
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		return nil, specsErr
	}
	res = resultFrom(report, opts.LabelFilter)
	res.Duration = time.Since(start)
	if leak := asLeak(specsErr); leak != nil {
		res.Leftovers = leak.Leftovers
	}
	if ctx.Err() != nil {
		res.Interrupted = true
	}
	fmt.Fprint(opts.Out, "\n"+SummaryText(p.Name, res))
	switch {
	case res.Interrupted:
		return res, ErrInterrupted
	case specsErr != nil && res.Failed == 0:
		// The specs passed, but the world did not come down cleanly (or a
		// lane failed to come up): the harness failed.
		return res, specsErr
	case res.Failed > 0 && len(res.DriverFailures) == res.Failed:
		// Every failure is the driver's: the CCM is not to blame.
		return res, &DriverError{Driver: driverName(p), Specs: res.DriverFailures, Err: errors.New(res.DriverFault)}
	case res.NothingTested() != "":
		return res, &NothingTestedError{Why: res.NothingTested()}
	}
	return res, nil
}

// driverName is the base name of the profile's cloud driver executable.
func driverName(p *profile.Profile) string {
	if p.CloudDriver == nil || len(p.CloudDriver.Command) == 0 {
		return ""
	}
	return filepath.Base(p.CloudDriver.Command[0])
}

// runOneWorld brings up one world in this process, runs every selected
// spec there and tears the world down. The report is empty when the world
// did not come up. The error is a harness error: setup or teardown failed.
func runOneWorld(ctx context.Context, opts Options, checked *Checked, info *RunInfo) (types.Report, error) {
	w := &world{
		profile:           checked.Profile,
		image:             checked.Image,
		ccmBinary:         checked.CCMBinary,
		runID:             info.RunID,
		backend:           opts.Backend,
		kubernetesVersion: opts.KubernetesVersion,
		out:               opts.Out,
		log:               opts.logger(),
		logDir:            opts.LogDir,
		info:              *info,
		echoRef:           opts.EchoImage,
	}
	report, err := w.run(ctx, specRun{suites: opts.Suites, labelFilter: opts.LabelFilter, seed: info.Seed, out: opts.Out, verbose: true, afterSpecs: opts.AfterSpecs})
	info.merge(w.info)
	info.Worlds = []WorldInfo{{Phases: w.phases}}
	return report, err
}

// run sets the world up, runs the specs, and tears it down.
func (w *world) run(ctx context.Context, sr specRun) (types.Report, error) {
	ctx = logr.NewContext(ctx, w.log)
	setupErr := w.setUp(ctx)
	var report types.Report
	var leakErr error
	if setupErr == nil {
		w.logf("setup took %s", formatPhases(w.phases))
		// What the world holds before the specs: afterwards it must hold
		// nothing more (checkLeftovers).
		before, invErr := takeInventory(ctx, w.client, w.driver, w.inventoryScope())
		// ginkgo ends the specs on SIGINT or SIGTERM itself; ctx ends
		// with them, and Run reads it.
		report = sr.run(w.framework())
		switch {
		case ctx.Err() != nil:
		case invErr != nil:
			leakErr = w.blameDriver(&SetupError{Step: "leak check", Err: fmt.Errorf("taking the inventory before the specs: %w", invErr)})
		default:
			leakErr = w.blameDriver(w.checkLeftovers(ctx, before))
		}
		if leakErr != nil {
			w.logf("leak check: %v", leakErr)
		}
		if sr.afterSpecs != nil && ctx.Err() == nil {
			if err := sr.afterSpecs(ctx, WorldView{Cluster: w.cluster, Report: report, Out: w.out, LogDir: w.logDir}); err != nil {
				w.logf("after the specs: %v", err)
				leakErr = errors.Join(leakErr, &SetupError{Step: "after the specs", Err: err})
			}
		}
	}
	if terr := w.tearDown(); terr != nil {
		w.logf("teardown: %v", terr)
		if setupErr == nil {
			return report, errors.Join(leakErr, &SetupError{Step: "teardown", Err: terr})
		}
	}
	if setupErr != nil {
		return report, setupErr
	}
	return report, leakErr
}

func formatPhases(phases []Phase) string {
	var total time.Duration
	parts := make([]string, len(phases))
	for i, p := range phases {
		total += p.Duration
		parts[i] = fmt.Sprintf("%s %s", p.Name, p.Duration.Round(phasePrecision))
	}
	return fmt.Sprintf("%s (%s)", total.Round(phasePrecision), strings.Join(parts, ", "))
}

// SummaryText is the run's summary as the runner prints it at the end
// and the run directory keeps it (summary.txt): the provider, how long the
// specs took, each failure and leftover, and the counts.
func SummaryText(provider string, res *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: %s\n", provider)
	fmt.Fprintf(&b, "duration: %s\n", res.Duration.Round(summaryPrecision))
	if res.Interrupted {
		fmt.Fprintf(&b, "interrupted: true\n")
	}
	for _, f := range res.Failures {
		fmt.Fprintf(&b, "FAILED %s\n", f)
	}
	for _, what := range res.Leftovers {
		fmt.Fprintf(&b, "LEFT BEHIND %s\n", what)
	}
	if n := len(res.DriverFailures); n > 0 {
		fmt.Fprintf(&b, "cloud driver failed: it broke the protocol in %d of the %d failed specs, which count against the driver, not the CCM\n", n, res.Failed)
	}
	if line := res.NotSelectedLine(); line != "" {
		fmt.Fprintln(&b, line)
	}
	fmt.Fprintf(&b, "conformance: %s\n", res.Summary())
	return b.String()
}

// NoSpecsSummaryText is the summary of a run whose specs never ran: the
// world did not come up (runErr says why) or the run was interrupted
// first.
func NoSpecsSummaryText(provider string, runErr error) string {
	reason := "interrupted during setup"
	if !errors.Is(runErr, ErrInterrupted) {
		reason = oneLine(runErr.Error())
	}
	return fmt.Sprintf("provider: %s\nharness error: %s\nconformance: no specs ran\n", provider, reason)
}

var errNoBackend = errors.New("no cluster backend")

// runIDBytes is how many random bytes a run ID has (twice as many hex
// digits).
const runIDBytes = 6

// newRunID returns a run's ID: random hex digits, short enough for
// container names.
func newRunID() (string, error) {
	b := make([]byte, runIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// logPrefix starts every line the run's logger writes.
const logPrefix = "[ccm-conformance]"

// logger is the run's logger: plain lines on Out (internal/plainlog).
func (o Options) logger() logr.Logger {
	if o.Out == nil {
		return logr.Discard()
	}
	return plainlog.New(o.Out, logPrefix, 0)
}

// progressOut is where the progress of building the CCM goes.
func (o Options) progressOut() io.Writer {
	if o.Progress != nil {
		return o.Progress
	}
	return os.Stderr
}
