package runner

import (
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// RunInfo describes a run for reports: what was tested, where, and when.
type RunInfo struct {
	// Provider is the profile's name.
	Provider string `json:"provider"`
	// ProfilePath is the profile file.
	ProfilePath string `json:"profilePath"`
	// ProfileDigest is the sha256 of the profile file's content
	// ("sha256:<hex>"): two runs of one profile path with different
	// content tell apart by it.
	ProfileDigest string `json:"profileDigest,omitempty"`
	// CCMEnv are the names, never the values, of the environment variables
	// the CCM under test got (the harness's environment and the profile's
	// ccm.binary.env), sorted; empty for a CCM the harness does not start.
	CCMEnv []string `json:"ccmEnv,omitempty"`
	// Backend is "local" (the embedded cluster), "kubeconfig" or "kind".
	Backend string `json:"backend"`
	// BackendMetadata are the backend's facts that tell two runs apart
	// (cluster.Describer), such as kind's node image.
	BackendMetadata map[string]string `json:"backendMetadata,omitempty"`
	// KubernetesVersion and KubernetesCommit come from the API server's
	// /version (the commit, when it reports none, from the backend:
	// cluster.Versioned); empty when the cluster never came up. The commit
	// is a full git hash or empty, never a placeholder (GitCommit).
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	KubernetesCommit  string `json:"kubernetesCommit,omitempty"`
	// CCMBinary is the CCM executable and CCMDigest its sha256
	// ("sha256:<hex>"), so that results name exactly what was tested.
	CCMBinary string `json:"ccmBinary,omitempty"`
	// CCMImage is the CCM's image as the profile names it (ccm.image);
	// CCMDigest is then its registry digest, or its image ID when the
	// local engine knows no registry digest (ccm.ImageInfo.Digest). For a
	// CCM already deployed (ccm.deployed) both are what its pods report.
	CCMImage  string `json:"ccmImage,omitempty"`
	CCMDigest string `json:"ccmDigest,omitempty"`
	// CCMModule, CCMModuleSum, CCMCloudProvider and CCMGoVersion are what
	// the CCM executable's Go build info says (ccm.BinaryInfo): the module
	// that holds its main package as path@version, that module's h1: sum,
	// the k8s.io/cloud-provider version it links, and the Go that built
	// it. They prove which module ran; empty for a CCM that is not a Go
	// executable the harness starts.
	CCMModule        string `json:"ccmModule,omitempty"`
	CCMModuleSum     string `json:"ccmModuleSum,omitempty"`
	CCMCloudProvider string `json:"ccmCloudProvider,omitempty"`
	CCMGoVersion     string `json:"ccmGoVersion,omitempty"`
	// NodeManagerBinary is the executable of ccm.nodeManager.path,
	// NodeManagerImage the image of ccm.nodeManager.image, and
	// NodeManagerDigest the sha256 of either; empty for a profile without
	// one.
	NodeManagerBinary string `json:"nodeManagerBinary,omitempty"`
	NodeManagerImage  string `json:"nodeManagerImage,omitempty"`
	NodeManagerDigest string `json:"nodeManagerDigest,omitempty"`
	// RunID tells this run's containers from others': they carry the
	// label ccm-conformance.run=RunID.
	RunID string `json:"runID,omitempty"`
	// HarnessVersion is the ccm-conformance version.
	HarnessVersion string `json:"harnessVersion"`
	// LabelFilter narrowed the specs, if set.
	LabelFilter string `json:"labelFilter,omitempty"`
	// Seed ordered the specs (Options.Seed).
	Seed int64 `json:"seed,omitempty"`
	// Capabilities are the capabilities the profile claims.
	Capabilities []string `json:"capabilities,omitempty"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Worlds are the worlds the specs ran in, with their setup steps: one
	// for a run in this process, one per lane otherwise.
	Worlds []WorldInfo `json:"worlds,omitempty"`
}

// WorldInfo is one world of a run.
type WorldInfo struct {
	// Name is "" for a run in one world, "lane-N" in a run over lanes.
	Name   string  `json:"name,omitempty"`
	Phases []Phase `json:"phases,omitempty"`
}

// Observer is told when a run starts and ends, to write reports in
// whatever layout it serves (the Prow/TestGrid one, for example). The
// runner calls RunFinished exactly once after RunStarted, also when setup
// failed or the run was interrupted; report is empty if no spec ran.
type Observer interface {
	RunStarted(info RunInfo) error
	RunFinished(info RunInfo, report types.Report, res *Result, runErr error) error
}

// merge takes what a world learned about itself into the run's info.
func (i *RunInfo) merge(w RunInfo) {
	if w.Backend != "" {
		i.Backend = w.Backend
	}
	if len(w.BackendMetadata) > 0 {
		i.BackendMetadata = w.BackendMetadata
	}
	if w.KubernetesVersion != "" {
		i.KubernetesVersion = w.KubernetesVersion
	}
	if w.KubernetesCommit != "" {
		i.KubernetesCommit = w.KubernetesCommit
	}
	if len(w.CCMEnv) > 0 {
		i.CCMEnv = w.CCMEnv
	}
	if w.CCMImage != "" {
		i.CCMImage, i.CCMDigest = w.CCMImage, w.CCMDigest
	}
}
