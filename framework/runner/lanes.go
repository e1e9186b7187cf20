package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/cloudside"
	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
	"github.com/ccm-conformance/ccm-conformance/internal/plainlog"
)

// Lanes split a run's specs over worker processes, each with a world of
// its own (its own cluster, cloud, CCM and nodes), so that specs that spend
// their time waiting (for a node to turn NotReady, a lease to expire) wait
// side by side. No state is shared between worlds, so no spec can disturb
// another.
//
// Every lane runs the same ginkgo tree with the same seed, so all see the
// specs in the same order. Before each spec, a lane claims it by creating a
// file named after the spec in a directory all lanes share; the first lane
// to create it runs the spec, the others skip it quietly. Lanes thus take
// the specs in turn, the way ginkgo's own parallel processes take them from
// a counter, without a server. At the end each lane writes its ginkgo
// report; the coordinating process keeps, for each spec, the report of the
// lane that claimed it, and hands the merged report to the observers as if
// one world had run every spec.
//
// The layout of the coordinator's directory:
//
//	lane-N.json         the Lane a worker reads (its --lane flag names it)
//	lane-N.report.json  what the worker writes at its end (laneReport)
//	claims/<spec id>    one per spec taken, holding a claimRecord

// Lane tells a worker process which lane it is.
type Lane struct {
	// Index is the lane's number, from 1.
	Index int `json:"index"`
	// Count is how many lanes the run has.
	Count int `json:"count"`
	// Dir is the coordinator's directory (claims, reports).
	Dir string `json:"dir"`
	// Seed orders the specs, the same in every lane.
	Seed int64 `json:"seed"`
	// RunID is the run's ID (RunInfo.RunID), which the lane's containers
	// carry as a label.
	RunID string `json:"runID,omitempty"`
	// CCMImageID is the image ID the coordinator found for ccm.image, so
	// that every lane runs the image the results name.
	CCMImageID string `json:"ccmImageID,omitempty"`
	// CCMBinary is the CCM executable the coordinator resolved (and, for
	// ccm.binary.module, built), so that every lane runs the binary the
	// results name.
	CCMBinary string `json:"ccmBinary,omitempty"`
	// LogDir is the run's log directory (Options.LogDir); the lane's
	// components log under LogDir/lane-N.
	LogDir string `json:"logDir"`
}

// LaneFlag is the flag that makes a program a lane's worker; its value is
// the path of the lane's file. Programs that support lanes declare it
// (hidden) and pass its value to ReadLane.
const LaneFlag = "lane"

// Args are the arguments to add to a worker's command line.
func (l Lane) Args() []string { return []string{"--" + LaneFlag + "=" + l.file()} }

func (l Lane) file() string { return filepath.Join(l.Dir, fmt.Sprintf("lane-%d.json", l.Index)) }

func (l Lane) reportFile() string {
	return filepath.Join(l.Dir, fmt.Sprintf("lane-%d.report.json", l.Index))
}

func (l Lane) logDir() string {
	return filepath.Join(l.LogDir, fmt.Sprintf("lane-%d", l.Index))
}

// ReadLane reads the lane file a worker's --lane flag names.
func ReadLane(path string) (*Lane, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", LaneFlag, err)
	}
	var l Lane
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("--%s %s: %w", LaneFlag, path, err)
	}
	return &l, nil
}

// AutoLanes suggests how many lanes to run specs in: about one per ten
// seconds of spec time (each suite says how long its specs take), at most
// two per CPU and at most four, since each lane brings up a cluster of its
// own in about as long.
func AutoLanes(suites []framework.Suite, specs []SpecInfo) int {
	seconds := map[string]float64{}
	for _, s := range suites {
		seconds[s.Name] = s.SpecSeconds
	}
	var total float64
	for _, s := range specs {
		total += max(seconds[s.Suite], 1)
	}
	lanes := int(math.Ceil(total / laneSeconds))
	return max(1, min(lanes, 2*runtime.GOMAXPROCS(0), maxLanes))
}

// laneSeconds and maxLanes shape AutoLanes.
const (
	laneSeconds = 10
	maxLanes    = 4
)

// claimRecord is the content of a claim file.
type claimRecord struct {
	Lane int `json:"lane"`
	// Spec identifies the spec, to report on it should the lane die.
	Hierarchy []string `json:"hierarchy"`
	Text      string   `json:"text"`
	Labels    []string `json:"labels"`
	Location  string   `json:"location"`
}

// laneReport is what a worker leaves for the coordinator.
type laneReport struct {
	Report types.Report `json:"report"`
	// Info is what the lane's world learned (Kubernetes version, ...).
	Info RunInfo `json:"info"`
	// Phases are the lane's setup steps.
	Phases []Phase `json:"phases,omitempty"`
	// Error is the lane's harness error, if any; InputError says it was
	// bad input.
	Error      string `json:"error,omitempty"`
	InputError bool   `json:"inputError,omitempty"`
	// DriverError says the cloud driver broke its protocol (DriverError),
	// naming the driver.
	DriverError string `json:"driverError,omitempty"`
	// Leftovers and LeakWaited are the lane's LeakError, if any;
	// LeakOnly says the leak was the lane's only harness error.
	Leftovers  []string      `json:"leftovers,omitempty"`
	LeakWaited time.Duration `json:"leakWaited,omitempty"`
	LeakOnly   bool          `json:"leakOnly,omitempty"`
}

// specID names a spec the same way in every lane.
func specID(s types.SpecReport) string {
	sum := sha256.Sum256([]byte(s.FullText() + "\x00" + s.LeafNodeLocation.String()))
	return hex.EncodeToString(sum[:12])
}

// claim takes s for the lane, unless another lane took it first.
func (l Lane) claim(s types.SpecReport) (bool, error) {
	data, err := json.Marshal(claimRecord{
		Lane: l.Index, Hierarchy: s.ContainerHierarchyTexts, Text: s.LeafNodeText,
		Labels: s.Labels(), Location: s.LeafNodeLocation.String(),
	})
	if err != nil {
		return false, err
	}
	f, err := os.OpenFile(filepath.Join(l.Dir, "claims", specID(s)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, err = f.Write(data)
	return true, errors.Join(err, f.Close())
}

// runLane is a worker's run: its world, its share of the specs, its report.
func runLane(ctx context.Context, opts Options, checked *Checked) error {
	lane := *opts.Lane
	p := checked.Profile
	image := checked.Image
	if image != nil && lane.CCMImageID != "" {
		pinned := *image
		pinned.ID = lane.CCMImageID
		image = &pinned
	}
	ccmBinary := lane.CCMBinary
	if ccmBinary == "" {
		var err error
		if ccmBinary, err = CCMExecutable(ctx, p, opts.progressOut()); err != nil {
			return err
		}
	}
	w := &world{
		profile:           p,
		image:             image,
		ccmBinary:         ccmBinary,
		runID:             lane.RunID,
		worldName:         fmt.Sprintf("lane-%d", lane.Index),
		backend:           opts.Backend,
		kubernetesVersion: opts.KubernetesVersion,
		out:               opts.Out,
		log:               opts.logger(),
		logDir:            lane.logDir(),
		info:              RunInfo{Provider: p.Name},
	}
	report, err := w.run(ctx, specRun{
		suites: opts.Suites, labelFilter: opts.LabelFilter, out: opts.Out,
		seed: lane.Seed, claim: lane.claim,
	})
	lr := laneReport{Report: report, Info: w.info, Phases: w.phases}
	if err != nil {
		lr.Error = err.Error()
		var inErr *InputError
		lr.InputError = errors.As(err, &inErr)
		var drvErr *DriverError
		if errors.As(err, &drvErr) {
			lr.DriverError = drvErr.Driver
		}
		if le := asLeak(err); le != nil {
			lr.Leftovers, lr.LeakWaited = le.Leftovers, le.Waited
			_, lr.LeakOnly = err.(*LeakError)
		}
	}
	data, merr := json.Marshal(lr)
	if merr != nil {
		return errors.Join(err, merr)
	}
	if werr := os.WriteFile(lane.reportFile(), data, 0o644); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// laneStopGrace is how long a worker gets to tear its world down after the
// coordinator passed on an interrupt, before it is killed.
const laneStopGrace = 3 * time.Minute

// runLanes is the coordinator's run: it starts the workers, waits for
// them, and merges their reports. The error is a harness error of a lane
// (the first one), if any.
func runLanes(ctx context.Context, opts Options, checked *Checked, info *RunInfo) (types.Report, error) {
	dir, err := cloudside.ScratchDir("ccm-conformance-lanes-")
	if err != nil {
		return types.Report{}, &SetupError{Step: "lanes", Err: err}
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "claims"), 0o755); err != nil {
		return types.Report{}, &SetupError{Step: "lanes", Err: err}
	}
	out := &lockedWriter{w: opts.Out}
	log := plainlog.New(out, logPrefix, 0)
	log.Info(fmt.Sprintf("running the specs in %d lanes, each with a %s cluster of its own", opts.Lanes, opts.Backend.Name()))

	seed := info.Seed
	lanes := make([]Lane, opts.Lanes)
	exits := make([]error, opts.Lanes)
	var wg sync.WaitGroup
	var cmds []*exec.Cmd
	for i := range lanes {
		lanes[i] = Lane{Index: i + 1, Count: opts.Lanes, Dir: dir, Seed: seed, RunID: info.RunID, LogDir: opts.LogDir}
		if checked.Image != nil {
			lanes[i].CCMImageID = checked.Image.ID
		}
		lanes[i].CCMBinary = checked.CCMBinary
		data, _ := json.Marshal(lanes[i])
		if err := os.WriteFile(lanes[i].file(), data, 0o644); err != nil {
			return types.Report{}, &SetupError{Step: "lanes", Err: err}
		}
		cmd := opts.LaneCommand(lanes[i])
		prefix := &prefixWriter{out: out, prefix: fmt.Sprintf("[lane %d] ", i+1)}
		cmd.Stdout, cmd.Stderr = prefix, prefix
		// Its own process group, so that a terminal's ^C reaches only the
		// coordinator, which passes it on once; SIGTERM when the
		// coordinator dies, so that it tears its world down.
		if err := proc.StartCommand(cmd, proc.Tie{DeathSignal: syscall.SIGTERM}); err != nil {
			exits[i] = fmt.Errorf("starting lane %d: %w", i+1, err)
			continue
		}
		cmds = append(cmds, cmd)
		wg.Go(func() {
			exits[i] = cmd.Wait()
			prefix.flush()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-done:
		case <-time.After(laneStopGrace):
			for _, c := range cmds {
				_ = c.Process.Kill()
			}
			<-done
		}
	}

	reports := make([]*laneReport, len(lanes))
	var laneErrs []error
	// The lanes' leftovers make one error, each named by its lane.
	var leak *LeakError
	for i, l := range lanes {
		lr, err := readLaneReport(l)
		if err != nil {
			laneErrs = append(laneErrs, &SetupError{Step: fmt.Sprintf("lane %d", l.Index),
				Err: fmt.Errorf("%w (the worker exited: %v)", err, exits[i])})
			continue
		}
		reports[i] = lr
		info.merge(lr.Info)
		info.Worlds = append(info.Worlds, WorldInfo{Name: fmt.Sprintf("lane-%d", l.Index), Phases: lr.Phases})
		if len(lr.Leftovers) > 0 {
			if leak == nil {
				leak = &LeakError{Waited: lr.LeakWaited}
			}
			for _, what := range lr.Leftovers {
				leak.Leftovers = append(leak.Leftovers, fmt.Sprintf("lane %d: %s", l.Index, what))
			}
		}
		if lr.Error != "" && !lr.LeakOnly {
			switch {
			case lr.DriverError != "":
				laneErrs = append(laneErrs, &DriverError{Driver: lr.DriverError, Err: fmt.Errorf("lane %d: %s", l.Index, lr.Error)})
			case lr.InputError:
				laneErrs = append(laneErrs, &InputError{fmt.Errorf("lane %d: %s", l.Index, lr.Error)})
			default:
				laneErrs = append(laneErrs, &SetupError{Step: fmt.Sprintf("lane %d", l.Index), Err: errors.New(lr.Error)})
			}
		}
		log.Info(fmt.Sprintf("lane %d setup took %s", l.Index, formatPhases(lr.Phases)))
	}
	claims, err := readClaims(filepath.Join(dir, "claims"))
	if err != nil {
		laneErrs = append(laneErrs, &SetupError{Step: "lanes", Err: err})
	}
	report := mergeLaneReports(reports, claims)
	if leak != nil {
		laneErrs = append(laneErrs, leak)
	}
	if len(laneErrs) > 0 {
		return report, laneErrs[0]
	}
	return report, nil
}

func readLaneReport(l Lane) (*laneReport, error) {
	data, err := os.ReadFile(l.reportFile())
	if err != nil {
		return nil, fmt.Errorf("lane %d left no report", l.Index)
	}
	var lr laneReport
	if err := json.Unmarshal(data, &lr); err != nil {
		return nil, fmt.Errorf("lane %d's report: %w", l.Index, err)
	}
	return &lr, nil
}

func readClaims(dir string) (map[string]claimRecord, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	claims := map[string]claimRecord{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var c claimRecord
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("claim %s: %w", e.Name(), err)
		}
		claims[e.Name()] = c
	}
	return claims, nil
}

// mergeLaneReports keeps, for each spec, the report of the lane that
// claimed it; a spec nobody claimed (one the label filter left out) is
// taken from the first lane that reports it. A claimed spec whose lane left
// no report of it (the lane died while running it) is reported as failed.
// Suite-level nodes are kept from the first lane, and from the others when
// they failed. reports[i] is lane i+1's, nil if it left none.
func mergeLaneReports(reports []*laneReport, claims map[string]claimRecord) types.Report {
	var merged types.Report
	first := true
	seen := map[string]bool{}
	for i, lr := range reports {
		if lr == nil {
			continue
		}
		r := lr.Report
		if first {
			merged = r
			merged.SpecReports = nil
			merged.SpecialSuiteFailureReasons = nil
			first = false
		} else {
			if !r.StartTime.IsZero() && (merged.StartTime.IsZero() || r.StartTime.Before(merged.StartTime)) {
				merged.StartTime = r.StartTime
			}
			if r.EndTime.After(merged.EndTime) {
				merged.EndTime = r.EndTime
			}
			merged.SuiteSucceeded = merged.SuiteSucceeded && r.SuiteSucceeded
		}
		for _, reason := range r.SpecialSuiteFailureReasons {
			if !slices.Contains(merged.SpecialSuiteFailureReasons, reason) {
				merged.SpecialSuiteFailureReasons = append(merged.SpecialSuiteFailureReasons, reason)
			}
		}
		for _, s := range r.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt {
				if i == 0 || s.State.Is(types.SpecStateFailureStates) {
					merged.SpecReports = append(merged.SpecReports, s)
				}
				continue
			}
			id := specID(s)
			c, claimed := claims[id]
			switch {
			case claimed && c.Lane == i+1:
			case !claimed && !seen[id]:
			default:
				continue
			}
			seen[id] = true
			merged.SpecReports = append(merged.SpecReports, s)
		}
	}
	for id, c := range claims {
		if seen[id] {
			continue
		}
		merged.SpecReports = append(merged.SpecReports, types.SpecReport{
			ContainerHierarchyTexts: c.Hierarchy,
			LeafNodeText:            c.Text,
			LeafNodeLabels:          c.Labels,
			LeafNodeType:            types.NodeTypeIt,
			State:                   types.SpecStateFailed,
			Failure: types.Failure{Message: fmt.Sprintf(
				"[harness] lane %d ended while running this spec (at %s); its log is under artifacts/logs/lane-%d", c.Lane, c.Location, c.Lane)},
		})
	}
	merged.RunTime = merged.EndTime.Sub(merged.StartTime)
	return merged
}

// lockedWriter serializes writes from several lanes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// prefixWriter writes whole lines, each with a prefix.
type prefixWriter struct {
	out    io.Writer
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		if _, err := p.out.Write(append([]byte(p.prefix), p.buf[:i+1]...)); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// flush writes what is left without a final newline.
func (p *prefixWriter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		_, _ = p.out.Write(append(append([]byte(p.prefix), p.buf...), '\n'))
		p.buf = nil
	}
}
