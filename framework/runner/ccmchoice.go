package runner

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/go-logr/logr"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/internal/ccmbuild"
	"github.com/ccm-conformance/ccm-conformance/internal/filehash"
	"github.com/ccm-conformance/ccm-conformance/labels"
)

// The CCM under test runs in one of four modes, chosen once per world by
// chooseCCM from the profile and the cluster's capabilities:
//
//	ccm.binary                              a process on the harness's host (binaryCCM)
//	ccm.image, on a cluster that loads images the standard Deployment in the cluster (deploymentCCM)
//	ccm.image, on any other cluster          a container beside the cluster (containerCCM)
//	ccm.deployed                            already running in the cluster (deployedCCM)
//
// This file holds every decision that depends on the mode: what is checked
// before a run, what names the CCM in the results, which launcher starts it
// (the launchers are in worldccm.go). Nothing else branches on the mode:
// the world starts what was chosen and asks it, by type, for its optional
// capabilities, as it asks the cluster for its own; commands ask the
// profile (profile.CCM's Module, Field, HarnessStarts).

// checkCCMInput refuses, before anything starts, a CCM the run could not
// start: a ccm.binary.path that is no executable, ccm.deployed on a
// backend whose new cluster has no CCM deployed, or ccm.nodeManager on a
// backend whose nodes are not simulated.
func checkCCMInput(p *profile.Profile, backend cluster.Backend) error {
	if b := p.CCM.Binary; b != nil && b.Module == nil {
		if err := checkExecutable(p.ResolvePath(b.Path)); err != nil {
			return &InputError{fmt.Errorf("profile %s: ccm.binary.path: %w", p.Path, err)}
		}
	}
	if nm := p.CCM.NodeManager; nm != nil && nm.Path != "" {
		if err := checkExecutable(p.ResolvePath(nm.Path)); err != nil {
			return &InputError{fmt.Errorf("profile %s: ccm.nodeManager.path: %w", p.Path, err)}
		}
	}
	if backend == nil {
		return nil
	}
	return checkCCMOnBackend(p, backend.Name(), backend.SimulatesNodes())
}

// checkCCMOnBackend refuses a CCM the named backend cannot run: a node
// manager where the nodes are not simulated, a deployed CCM where the
// backend makes a new cluster of simulated nodes. list foresees the same.
func checkCCMOnBackend(p *profile.Profile, backend string, simulatesNodes bool) error {
	if nm := p.CCM.NodeManager; nm != nil {
		switch {
		case nm.Path != "" && !simulatesNodes:
			return &InputError{fmt.Errorf("profile %s: ccm.nodeManager.path runs beside each simulated node, and the %s backend's nodes are its own; on kind give ccm.image and ccm.nodeManager.image, a DaemonSet", p.Path, backend)}
		case nm.Image != "" && backend != labels.BackendKind:
			return &InputError{fmt.Errorf("profile %s: ccm.nodeManager.image runs as a DaemonSet in a cluster the harness deploys the CCM into, which only the %s backend does, not %s", p.Path, labels.BackendKind, backend)}
		}
	}
	if img := p.CCM.Image; img != nil && img.Placement == profile.PlacementStaticPod && backend != labels.BackendKind {
		return &InputError{fmt.Errorf("profile %s: ccm.image.placement staticPod runs the CCM on the control-plane node of a cluster the harness makes and can write files on, which only the %s backend does, not %s", p.Path, labels.BackendKind, backend)}
	}
	if p.CCM.Deployed != nil && simulatesNodes {
		return &InputError{fmt.Errorf("profile %s: ccm.deployed names a CCM running in a cluster, and the %s backend's new cluster has none; name the cluster it runs in (run --kubeconfig, list --backend kubeconfig)", p.Path, backend)}
	}
	return nil
}

// inspectCCMImage is what the Docker engine knows of ccm.image, or nil for
// a CCM of another mode.
func inspectCCMImage(ctx context.Context, p *profile.Profile) (*ccm.ImageInfo, error) {
	img := p.CCM.Image
	if img == nil {
		return nil, nil
	}
	info, err := ccm.InspectImage(ctx, "", img.Reference)
	if err != nil {
		return nil, &InputError{fmt.Errorf("profile %s: ccm.image: %w", p.Path, err)}
	}
	return &info, nil
}

// inspectNodeManagerImage is what the Docker engine knows of
// ccm.nodeManager.image, or nil for a profile without one.
func inspectNodeManagerImage(ctx context.Context, p *profile.Profile) (*ccm.ImageInfo, error) {
	nm := p.CCM.NodeManager
	if nm == nil || nm.Image == "" {
		return nil, nil
	}
	info, err := ccm.InspectImage(ctx, "", nm.Image)
	if err != nil {
		return nil, &InputError{fmt.Errorf("profile %s: ccm.nodeManager.image: %w", p.Path, err)}
	}
	return &info, nil
}

// recordCCMIdentity puts into the run's info what names the CCM that ran:
// the executable with its digest and module, or the image with its digest,
// and the node manager's executable with its digest. A CCM already
// deployed is known by its pods only.
func recordCCMIdentity(info *RunInfo, checked *Checked, log logr.Logger) {
	if m := checked.Profile.CCM.Module(); m != nil {
		log.Info(fmt.Sprintf("the CCM, built from %s@%s (ccm.binary.module): %s", m.Path, m.Version, checked.CCMBinary))
	}
	if checked.CCMBinary != "" {
		recordCCMBinary(info, checked.CCMBinary, log)
	}
	if img := checked.Image; img != nil {
		info.CCMImage = img.Reference
		info.CCMDigest = img.Digest()
	}
	if nm := checked.Profile.CCM.NodeManager; nm != nil && nm.Path != "" {
		info.NodeManagerBinary = checked.Profile.ResolvePath(nm.Path)
		info.NodeManagerDigest, _ = filehash.Digest(executableFile(info.NodeManagerBinary))
	}
	if img := checked.NodeManagerImage; img != nil {
		info.NodeManagerImage = img.Reference
		info.NodeManagerDigest = img.Digest()
	}
}

// chooseCCM picks the launcher of the world's CCM.
func chooseCCM(w *world) ccmLauncher {
	c := w.profile.CCM
	switch {
	case c.Deployed != nil:
		return &deployedCCM{w: w}
	case c.Image != nil:
		if loader, ok := w.cluster.(cluster.ImageLoader); ok {
			if c.Image.Placement == profile.PlacementStaticPod {
				// checkCCMOnBackend admits it only on kind, whose
				// clusters are control-plane hosts.
				host, _ := w.cluster.(cluster.ControlPlaneHost)
				return &staticPodCCM{w: w, loader: loader, host: host}
			}
			return &deploymentCCM{w: w, loader: loader}
		}
		return &processCCM{w: w, starter: containerCCM{w: w}}
	default:
		return &processCCM{w: w, starter: binaryCCM{w: w}}
	}
}

// CCMExecutable returns the executable of a CCM the harness starts as a
// process: ccm.binary.path resolved against the profile's directory, or,
// for ccm.binary.module, the binary built from that module in the binary
// cache, which it builds first when it is not there (a cold build takes
// minutes; progress receives its progress lines). It returns "" for a CCM
// run from an image or already deployed. Run calls it before any cluster
// starts; CheckProfile, and so validate-profile and list, never do.
func CCMExecutable(ctx context.Context, p *profile.Profile, progress io.Writer) (string, error) {
	b := p.CCM.Binary
	switch {
	case b == nil:
		return "", nil
	case b.Module == nil:
		return p.ResolvePath(b.Path), nil
	}
	built, err := BuildCCMModule(ctx, p, progress)
	return built.Path, err
}

// BuildCCMModule builds the CCM of a profile with ccm.binary.module into
// the binary cache, or finds it there (internal/ccmbuild). A build that
// fails is a *SetupError that carries the go command line and the tail of
// its output; a profile without ccm.binary.module is an *InputError.
func BuildCCMModule(ctx context.Context, p *profile.Profile, progress io.Writer) (ccmbuild.Build, error) {
	req, err := CCMModuleRequest(p)
	if err != nil {
		return ccmbuild.Build{}, err
	}
	req.Progress = progress
	built, err := ccmbuild.Ensure(ctx, req)
	if err != nil {
		return built, &SetupError{Step: "building the CCM (ccm.binary.module)", Err: err}
	}
	return built, nil
}

// CCMModuleRequest is the build of a profile's ccm.binary.module; a profile
// without one is an *InputError.
func CCMModuleRequest(p *profile.Profile) (ccmbuild.Request, error) {
	m := p.CCM.Module()
	if m == nil {
		return ccmbuild.Request{}, &InputError{fmt.Errorf("profile %s: ccm.binary.module is not set: the CCM is not built from a module", p.Path)}
	}
	replaces, err := m.Replaces()
	if err != nil {
		return ccmbuild.Request{}, &InputError{fmt.Errorf("profile %s: %w", p.Path, err)}
	}
	req := ccmbuild.Request{Module: m.Path, Version: m.Version, Package: m.Package}
	for _, r := range replaces {
		req.Replace = append(req.Replace, ccmbuild.Replace{Old: r.Old, New: r.New})
	}
	return req, nil
}

// executableFile is the file an executable's path names: the path, or for
// a bare name the file PATH finds ("" if none).
func executableFile(path string) string {
	if strings.Contains(path, "/") {
		return path
	}
	file, _ := exec.LookPath(path)
	return file
}

// recordCCMBinary puts what names the CCM executable at path into the
// run's info: its digest and what its Go build info says of the module it
// was built from. A binary without Go build info (not a Go program) is
// said in the log, and its module keys stay empty.
func recordCCMBinary(info *RunInfo, path string, log logr.Logger) {
	info.CCMBinary = path
	file := executableFile(path)
	info.CCMDigest, _ = filehash.Digest(file)
	bi, err := ccm.ReadBinaryInfo(file)
	if err != nil {
		log.Info(fmt.Sprintf("the run does not record which module the CCM is: %v", err))
		return
	}
	info.CCMModule, info.CCMModuleSum = bi.Module, bi.ModuleSum
	info.CCMCloudProvider, info.CCMGoVersion = bi.CloudProvider, bi.GoVersion
}
