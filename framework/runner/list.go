package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"golang.org/x/sys/unix"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/labels"
)

// SpecInfo describes one spec for `ccm-conformance list`.
type SpecInfo struct {
	Text   string   `json:"text"`
	Labels []string `json:"labels"`
	// Suite is the suite's name.
	Suite string `json:"suite"`
	// Skip is why a run with the profile would skip the spec (a missing
	// capability, a verb the cloud driver lacks, no simulated machines);
	// empty when it would run. Only ListForProfile sets it.
	Skip string `json:"skip,omitempty"`
	// ReleaseBlocking: the spec decides the verdict of a run on the
	// listed backend; NotBlockingWhy says why a spec labelled
	// ReleaseBlocking does not there (package labels).
	ReleaseBlocking bool   `json:"releaseBlocking"`
	NotBlockingWhy  string `json:"notBlockingWhy,omitempty"`
}

// MarkReleaseBlocking sets each spec's ReleaseBlocking and NotBlockingWhy
// for a run on backend.
func MarkReleaseBlocking(specs []SpecInfo, backend string) {
	for i := range specs {
		specs[i].ReleaseBlocking, specs[i].NotBlockingWhy = labels.Blocks(specs[i].Labels, backend)
	}
}

// ListOptions say what ListForProfile lists.
type ListOptions struct {
	Suites      []framework.Suite
	LabelFilter string
	// ProfilePath is the profile whose run is foreseen. Required.
	ProfilePath string
	// Backend is the backend of the foreseen run (labels.BackendLocal, Kind or
	// Kubeconfig). On the local one the harness simulates the nodes, so
	// specs that need machines can have them when the cloud driver creates
	// instances; on kind the nodes await the CCM when the run begins, so
	// specs that watch a node join can use one of them; an existing
	// cluster has neither.
	Backend string
	// ClusterCIDRs are the pod networks of the foreseen cluster when its
	// backend knows them (the local one does); default the profile's
	// cluster.clusterCIDRs.
	ClusterCIDRs []string
}

// listProbeTimeout bounds ListForProfile's run of the specs: each ends at
// its first step past the checks of what it needs, at once.
const listProbeTimeout = time.Minute

// ListForProfile lists the specs the label filter selects and, for each,
// why a run with the profile would skip it. It checks the profile as a run
// does (CheckProfile, with the cloud driver's handshake), then runs every
// selected spec against a world in which nothing exists: the checks a spec
// makes first (capabilities, cloud-driver verbs, simulated machines, CCM
// instances) skip it as in a real run, and its first step past them ends
// it. Like Run, it can be called once per process (a ginkgo limit).
func ListForProfile(ctx context.Context, opts ListOptions) (*ProfileListing, error) {
	if opts.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(opts.LabelFilter); err != nil {
			return nil, &InputError{fmt.Errorf("--label-filter %q: %s", opts.LabelFilter, labelFilterError(err))}
		}
	}
	if !slices.Contains(labels.Backends, opts.Backend) {
		return nil, &InputError{fmt.Errorf("--backend %q: want one of %s", opts.Backend, strings.Join(labels.Backends, ", "))}
	}
	checked, err := CheckProfile(ctx, CheckOptions{ProfilePath: opts.ProfilePath})
	if err != nil {
		return nil, err
	}
	p := checked.Profile
	if err := checkCCMOnBackend(p, opts.Backend, labels.SimulatedNodes.MetOn(opts.Backend)); err != nil {
		return nil, err
	}
	// The probe world: the profile and what the driver said it can do;
	// every call fails, every client is missing.
	f := &framework.Framework{Profile: p, ClusterCIDRs: p.Cluster.ClusterCIDRs}
	if len(opts.ClusterCIDRs) > 0 {
		f.ClusterCIDRs = opts.ClusterCIDRs
	}
	if checked.Driver != nil {
		f.Driver = clouddriver.FromInfo(*checked.Driver)
	}
	if p.CCM.HarnessStarts() {
		f.CCMInstances = probeCCMs{}
		if labels.SimulatedNodes.MetOn(opts.Backend) && len(missingVerbs(checked.Driver, machineVerbs)) == 0 {
			f.Machines = &framework.Machines{}
		}
	}
	if opts.Backend == labels.BackendKind {
		// kind's nodes start with the uninitialized taint, for the CCM the
		// harness deploys.
		f.NodesAwaitingCCM = []string{"kind-worker"}
	}
	restore, err := silenceStdout()
	if err != nil {
		return nil, err
	}
	listing := &ProfileListing{Backend: opts.Backend}
	for _, c := range p.Capabilities {
		listing.Capabilities = append(listing.Capabilities, string(c))
	}
	report := specRun{suites: opts.Suites, labelFilter: opts.LabelFilter, out: io.Discard, timeout: listProbeTimeout}.run(f)
	restore()

	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt || (opts.LabelFilter != "" && !matches(opts.LabelFilter, s.Labels())) {
			continue
		}
		info := SpecInfo{Text: strings.TrimSpace(s.FullText()), Labels: s.Labels(), Suite: SuiteOf(s)}
		if s.State == types.SpecStateSkipped {
			info.Skip = oneLine(s.Failure.Message)
		}
		listing.Specs = append(listing.Specs, info)
	}
	MarkReleaseBlocking(listing.Specs, opts.Backend)
	return listing, nil
}

// ProfileListing is what ListForProfile foresees of a run.
type ProfileListing struct {
	Specs []SpecInfo
	// Capabilities are the profile's, Backend the foreseen run's.
	Capabilities []string
	Backend      string
}

// probeCCMs stands for the CCM instances a run could start.
type probeCCMs struct{}

var errProbe = errors.New("listing only: nothing runs")

func (probeCCMs) Start(context.Context, string, []string) (*ccm.Process, error) {
	return nil, errProbe
}

func (probeCCMs) StopMain(context.Context) (func(context.Context) error, error) {
	return nil, errProbe
}

// List returns the specs of suites that labelFilter selects, without
// running anything. Like Run, it can be called once per process (a ginkgo
// limit).
func List(suites []framework.Suite, labelFilter string) ([]SpecInfo, error) {
	if labelFilter != "" {
		if _, err := types.ParseLabelFilter(labelFilter); err != nil {
			return nil, &InputError{fmt.Errorf("--label-filter %q: %s", labelFilter, labelFilterError(err))}
		}
	}
	declareSuites(&framework.Framework{}, suites)
	var specs []SpecInfo
	ginkgo.ReportAfterSuite("list", func(rep ginkgo.Report) {
		for _, s := range rep.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt || (labelFilter != "" && !matches(labelFilter, s.Labels())) {
				continue
			}
			specs = append(specs, SpecInfo{Text: strings.TrimSpace(s.FullText()), Labels: s.Labels(), Suite: SuiteOf(s)})
		}
	})
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	suiteConfig.DryRun = true
	suiteConfig.LabelFilter = labelFilter
	reporterConfig.Succinct = true

	// Ginkgo's reporter writes to the process's stdout; a dry run has
	// nothing to say there, so stdout points at /dev/null meanwhile.
	restore, err := silenceStdout()
	if err != nil {
		return nil, err
	}
	ginkgo.RunSpecs(failRecorder{}, "list", suiteConfig, reporterConfig)
	restore()
	return specs, nil
}

func matches(filter string, labels []string) bool {
	f, err := types.ParseLabelFilter(filter)
	return err == nil && f(labels)
}

func silenceStdout() (func(), error) {
	saved, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("silencing ginkgo: %w", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		unix.Close(saved)
		return nil, fmt.Errorf("silencing ginkgo: %w", err)
	}
	defer null.Close()
	if err := unix.Dup2(int(null.Fd()), 1); err != nil {
		unix.Close(saved)
		return nil, fmt.Errorf("silencing ginkgo: %w", err)
	}
	return func() {
		_ = unix.Dup2(saved, 1)
		unix.Close(saved)
	}, nil
}
