package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/internal/ccmbuild"
	"github.com/ccm-conformance/ccm-conformance/internal/filehash"
)

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
	if p.CCM.Binary == nil || p.CCM.Binary.Module == nil {
		return ccmbuild.Request{}, &InputError{fmt.Errorf("profile %s: ccm.binary.module is not set: the CCM is not built from a module", p.Path)}
	}
	m := p.CCM.Binary.Module
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

// recordCCMBinary puts what names the CCM executable at path into the
// run's info: its digest and what its Go build info says of the module it
// was built from. A binary without Go build info (not a Go program) is
// said on out, and its module keys stay empty.
func recordCCMBinary(info *RunInfo, path string, out io.Writer) {
	info.CCMBinary = path
	file := path
	if !strings.Contains(path, "/") {
		file, _ = exec.LookPath(path)
	}
	info.CCMDigest, _ = filehash.Digest(file)
	bi, err := ccm.ReadBinaryInfo(file)
	if err != nil {
		fmt.Fprintf(out, "[ccm-conformance] the run does not record which module the CCM is: %v\n", err)
		return
	}
	info.CCMModule, info.CCMModuleSum = bi.Module, bi.ModuleSum
	info.CCMCloudProvider, info.CCMGoVersion = bi.CloudProvider, bi.GoVersion
}

// progressOut is where the progress of building the CCM goes.
func (o Options) progressOut() io.Writer {
	if o.Progress != nil {
		return o.Progress
	}
	return os.Stderr
}
