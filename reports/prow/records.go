// Package prow is the run directory's format: the layout that Prow's
// Spyglass and TestGrid read (started.json, finished.json, build-log.txt
// and artifacts/junit_*.xml), the records the results store and the LKG
// rules read (artifacts/specs.json, artifacts/timings.json), the metadata
// merge rule, and Validate, which checks a run directory for what would
// make TestGrid show an error.
//
// It is a leaf: it imports no harness package, so any reader of results
// (the store, the LKG rules, the dashboard) can use it. What writes a run
// directory during a run is reports/rundir. The layout is documented in
// docs/artifacts.md.
//
// Floor: the reports. They stand on the leaves and each other, not on the
// framework, so that reading and judging results builds no harness;
// testsupport/floors holds that.
package prow

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Names of the files of a run directory, relative to it.
const (
	StartedFile  = "started.json"
	FinishedFile = "finished.json"
	BuildLogFile = "build-log.txt"
	ArtifactsDir = "artifacts"
	MetadataFile = "artifacts/metadata.json"
	SpecsFile    = "artifacts/specs.json"
	TimingsFile  = "artifacts/timings.json"
	LogsDir      = "artifacts/logs"
	// SummaryFile is the run's summary as the harness printed it at the
	// end, for a reader with a shell.
	SummaryFile = "summary.txt"
	// ComparisonFile and UpstreamReportDir are compare-upstream's: the
	// two sides' counts, and the run directory of upstream's e2e specs.
	ComparisonFile    = "artifacts/upstream-comparison.json"
	UpstreamReportDir = "artifacts/upstream-e2e"
)

// Results of finished.json.
const (
	ResultSuccess = "SUCCESS"
	ResultFailure = "FAILURE"
	ResultAborted = "ABORTED"
)

// Keys this harness writes into finished.json's metadata and
// artifacts/metadata.json. TestGrid can head its columns with any of them
// (column_header: configuration_value).
const (
	MetaProvider          = "provider"
	MetaKubernetesVersion = "kubernetes-version"
	MetaKubernetesCommit  = "kubernetes-commit"
	MetaCCMBinary         = "ccm-binary"
	MetaCCMDigest         = "ccm-digest"
	MetaHarnessVersion    = "harness-version"
	MetaBackend           = "backend"
	MetaLabelFilter       = "label-filter"
	// MetaSeed is the seed that ordered the specs (run --seed repeats
	// the order).
	MetaSeed = "seed"
	// MetaJobVersion is the key TestGrid shows as a column's version; it
	// holds the Kubernetes version under test.
	MetaJobVersion = "job-version"
	// MetaErrors records metadata.json files that could not be merged, the
	// way Prow's sidecar records them under "sidecar-errors".
	MetaErrors = "ccm-conformance-errors"
	// MetaCCMImage is the image of the CCM under test: the profile's
	// ccm.image, or that of a CCM deployed in the cluster under test when
	// the caller names it (the kubetest2 tester does).
	MetaCCMImage = "ccm-image"
	// MetaProfileDigest is the sha256 of the profile file's content
	// ("sha256:<hex>"), which tells two versions of one profile apart.
	MetaProfileDigest = "profile-digest"
	// MetaCCMEnv lists the names (never the values) of the environment
	// variables the CCM under test got, sorted and comma-separated.
	MetaCCMEnv = "ccm-env"
	// MetaCCMModule is the module that holds the CCM executable's main
	// package, path@version, from its Go build info
	// (k8s.io/cloud-provider-vsphere@v1.36.0; path@(devel) for a build in
	// its own source tree): which module ran.
	MetaCCMModule = "ccm-module"
	// MetaCCMModuleSum is that module's h1: sum from the build info, when
	// it has one.
	MetaCCMModuleSum = "ccm-module-sum"
	// MetaCCMCloudProvider is the version of k8s.io/cloud-provider the
	// CCM executable links (v0.36.0).
	MetaCCMCloudProvider = "ccm-cloud-provider"
	// MetaCCMGoVersion is the Go release that built the CCM executable
	// (go1.26.8).
	MetaCCMGoVersion = "ccm-go-version"
	// MetaNodeManagerBinary is the node manager executable of a profile
	// with ccm.nodeManager.path, MetaNodeManagerImage its image with
	// ccm.nodeManager.image, and MetaNodeManagerDigest the sha256 of either
	// ("sha256:<hex>"); missing for a profile without one.
	MetaNodeManagerBinary = "node-manager-binary"
	MetaNodeManagerImage  = "node-manager-image"
	MetaNodeManagerDigest = "node-manager-digest"
)

// Keys other writers of a run directory add. Every metadata key is spelled
// in lower case with dashes and named here, and nowhere else
// (TestMetadataKeysHaveOneHome).
const (
	// The release check's verdict ("pass (9 passed, 0 warned, 0
	// failed)"), the image it checked and that image's digest
	// (release-check --run-dir).
	MetaReleaseCheck       = "release-check"
	MetaReleaseCheckImage  = "release-check-image"
	MetaReleaseCheckDigest = "release-check-digest"

	// MetaTesterVersion is the kubetest2 tester's version, under the key
	// kubetest2's own testers write; MetaKubetest2RunID is the kubetest2
	// run's id (KUBETEST2_RUN_ID).
	MetaTesterVersion  = "tester-version"
	MetaKubetest2RunID = "kubetest2-run-id"

	// The kind backend's facts (docs/kind.md): the kind release it links,
	// the cluster's name, the node image's tag, ID and source
	// (nodeimage.Source), whether the nodes run privileged and, when not,
	// the fallback's run arguments and why, and who routes pod traffic
	// between nodes ("backend" or "cloud").
	MetaKindVersion            = "kind-version"
	MetaKindCluster            = "kind-cluster"
	MetaKindNodeImage          = "kind-node-image"
	MetaKindNodeImageID        = "kind-node-image-id"
	MetaKindNodeImageSource    = "kind-node-image-source"
	MetaKindPrivileged         = "kind-privileged"
	MetaKindPrivilegedFallback = "kind-privileged-fallback"
	MetaKindPodRoutes          = "kind-pod-routes"
)

// ColumnHeaderKeys are the metadata keys that head a run's column on
// TestGrid (testgrid-config's column_header): what Kubernetes build and
// what CCM build the run tested. TestGrid shows "missing" in the header
// of a finished run whose metadata lacks one of them, so MergeMetadata
// writes each one, empty when it is not known.
func ColumnHeaderKeys() []string {
	return []string{MetaKubernetesVersion, MetaCCMDigest, MetaCCMImage}
}

// Started is started.json. TestGrid needs a non-zero timestamp.
type Started struct {
	// Timestamp is when the run began, in Unix seconds.
	Timestamp int64 `json:"timestamp"`
	// Metadata is deprecated in started.json (TestGrid reads finished.json's)
	// and left empty here.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Finished is finished.json. Passed and Timestamp are pointers so that a
// missing field can be told from false or zero.
type Finished struct {
	// Timestamp is when the run ended, in Unix seconds.
	Timestamp *int64 `json:"timestamp,omitempty"`
	// Passed is true when the run passed.
	Passed *bool `json:"passed"`
	// Result is SUCCESS, FAILURE or ABORTED.
	Result string `json:"result,omitempty"`
	// Metadata holds the keys of artifacts/metadata.json, merged.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// MetaString returns a string key of the metadata, or "".
func (f *Finished) MetaString(key string) string {
	if f == nil || f.Metadata == nil {
		return ""
	}
	s, _ := f.Metadata[key].(string)
	return s
}

// SpecsVersion is the version of the specs.json format.
const SpecsVersion = 1

// HarnessErrorDriver is the HarnessErrorClass of a run whose cloud driver
// broke its protocol: the specs it made fail failed for the driver, so the
// run says nothing about the CCM (the LKG rules count it for neither side).
const HarnessErrorDriver = "driver"

// HarnessErrorSetup and HarnessErrorInput are the classes of a run whose
// environment could not be brought up or torn down (a cluster that did not
// start, a port taken by another process) or whose input was bad: failures
// outside the CCM, which the LKG rules count against neither side of the
// pair. HarnessErrorCCM is a CCM under test that did not start or become
// ready, which they count as the CCM's failure.
const (
	HarnessErrorSetup = "setup"
	HarnessErrorInput = "input"
	HarnessErrorCCM   = "ccm"
)

// SpecRecords is artifacts/specs.json: every spec of the run with its
// suite, labels and outcome. It is what the LKG rules read.
type SpecRecords struct {
	Version int `json:"version"`
	// Provider is the profile's name.
	Provider string `json:"provider"`
	// HarnessError is the harness's error when the run did not complete:
	// bad input, a setup step that failed, an interrupt, a failed teardown,
	// or a cloud driver that broke its protocol.
	HarnessError string `json:"harnessError,omitempty"`
	// HarnessErrorClass says whose failure HarnessError is: "input",
	// "setup", "interrupted", or HarnessErrorDriver; empty for runs
	// recorded before the class was.
	HarnessErrorClass string `json:"harnessErrorClass,omitempty"`
	// Interrupted is true when SIGINT or SIGTERM ended the run.
	Interrupted bool `json:"interrupted,omitempty"`
	// Capabilities are the capabilities the profile claimed, so that a
	// reader can tell a spec skipped for a capability the CCM does not
	// claim from one skipped for another reason; nil in runs recorded
	// before they were.
	Capabilities []string `json:"capabilities,omitempty"`
	// LabelFilter is the ginkgo label filter that narrowed the run, if
	// any (also in metadata.json as label-filter).
	LabelFilter string `json:"labelFilter,omitempty"`
	// Leftovers name what the run left behind in the cluster or the cloud
	// once its specs were done ("cloud load balancer lb-0003"), whether or
	// not a spec also failed; the LKG rules fail a run that leaked.
	Leftovers []string `json:"leftovers,omitempty"`
	// Specs are the specs in the order they ran; suite-level nodes
	// (BeforeSuite and the like) appear only when they failed.
	Specs []SpecRecord `json:"specs"`
}

// SpecRecord is one spec of specs.json.
type SpecRecord struct {
	// Suite is the suite the spec belongs to ("" for suite-level nodes).
	Suite string `json:"suite"`
	// Text is the spec's full text; it starts with "[suite]".
	Text string `json:"text"`
	// Node is the ginkgo node type when it is not "It" (for example
	// "BeforeSuite").
	Node string `json:"node,omitempty"`
	// Labels are the spec's ginkgo labels, containers' included.
	Labels []string `json:"labels,omitempty"`
	// State is ginkgo's: passed, failed, skipped, pending, panicked,
	// interrupted, aborted or timedout.
	State string `json:"state"`
	// DurationSeconds is how long the spec ran.
	DurationSeconds float64 `json:"durationSeconds"`
	// Failure is the failure message, for a spec that did not pass.
	Failure string `json:"failure,omitempty"`
	// FailureLocation is file:line of the failure.
	FailureLocation string `json:"failureLocation,omitempty"`
	// SkipReason is what a skipped spec said it was missing ("profile "x"
	// does not declare capability DualStack"); empty for a spec the label
	// filter left out.
	SkipReason string `json:"skipReason,omitempty"`
}

// Passed reports whether the spec passed.
func (s SpecRecord) Passed() bool { return s.State == "passed" }

// Failed reports whether the spec failed in any way (failed, panicked,
// interrupted, aborted, timed out).
func (s SpecRecord) Failed() bool {
	switch s.State {
	case "failed", "panicked", "interrupted", "aborted", "timedout":
		return true
	}
	return false
}

// FailedToEnd reports whether the spec ran to its end and failed (failed,
// panicked or timed out). A spec that an interrupt or an abort cut short
// did not: its state says nothing about the CCM.
func (s SpecRecord) FailedToEnd() bool {
	switch s.State {
	case "failed", "panicked", "timedout":
		return true
	}
	return false
}

// Skipped reports whether the spec was skipped (or left out by the label
// filter).
func (s SpecRecord) Skipped() bool { return s.State == "skipped" }

// HasLabel reports whether the spec carries the label.
func (s SpecRecord) HasLabel(label string) bool {
	for _, l := range s.Labels {
		if l == label {
			return true
		}
	}
	return false
}

// Timings is artifacts/timings.json: how long each spec took, and the
// named latencies a spec recorded as ginkgo report entries whose value is a
// time.Duration (for example "node-initialized").
type Timings struct {
	Version int          `json:"version"`
	Specs   []SpecTiming `json:"specs"`
	// Setup are the setup steps of each world of the run (one per lane),
	// in seconds.
	Setup []SetupTiming `json:"setup,omitempty"`
}

// SpecTiming is one spec of timings.json.
type SpecTiming struct {
	Suite           string             `json:"suite"`
	Spec            string             `json:"spec"`
	State           string             `json:"state"`
	DurationSeconds float64            `json:"durationSeconds"`
	Latencies       map[string]float64 `json:"latencies,omitempty"`
	// ObservationLagsSeconds are, for each watched wait of the spec that
	// had to wait, how long after the awaited change reached the harness
	// the wait returned.
	ObservationLagsSeconds []float64 `json:"observationLagsSeconds,omitempty"`
}

// SetupTiming is one setup step of one world.
type SetupTiming struct {
	// World is "" for a run in one world, "lane-N" in a run over lanes.
	World   string  `json:"world,omitempty"`
	Step    string  `json:"step"`
	Seconds float64 `json:"seconds"`
}

// DecodeStarted parses started.json.
func DecodeStarted(r io.Reader) (*Started, error) {
	var s Started
	if err := decodeStrict(r, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DecodeFinished parses finished.json.
func DecodeFinished(r io.Reader) (*Finished, error) {
	var f Finished
	if err := decodeStrict(r, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// DecodeSpecs parses specs.json.
func DecodeSpecs(r io.Reader) (*SpecRecords, error) {
	var s SpecRecords
	if err := decodeStrict(r, &s); err != nil {
		return nil, err
	}
	if s.Version != SpecsVersion {
		return nil, fmt.Errorf("unsupported specs.json version %d (want %d)", s.Version, SpecsVersion)
	}
	return &s, nil
}

// DecodeTimings parses timings.json.
func DecodeTimings(r io.Reader) (*Timings, error) {
	var t Timings
	if err := decodeStrict(r, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// decodeStrict decodes one JSON value and rejects trailing data, so that a
// truncated or concatenated file is an error.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return fmt.Errorf("empty file")
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

// WriteJSON writes v, indented, to path atomically (WriteFileAtomic).
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	return WriteFileAtomic(path, append(data, '\n'))
}

// WriteFileAtomic writes data to path through a temporary file beside it,
// renamed into place, so that a reader never sees half a file. It creates
// path's directory.
func WriteFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
