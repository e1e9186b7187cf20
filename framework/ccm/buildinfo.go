package ccm

import (
	"debug/buildinfo"
	"fmt"
	"runtime/debug"
	"strings"
)

// CloudProviderModule is the module of the cloud provider framework that a
// CCM links (k8s.io/cloud-provider), whose version BinaryInfo reports.
const CloudProviderModule = "k8s.io/cloud-provider"

// BinaryInfo is what a CCM executable's embedded Go build info says of the
// code it was built from, so that a run names the module that ran. A field
// is empty when the build info does not say.
type BinaryInfo struct {
	// Module is the module that holds the main package, as path@version
	// (k8s.io/cloud-provider-vsphere@v1.36.0); a binary built in its
	// own module's source tree has the version (devel). A replaced module
	// reads path@version => new[@version].
	Module string
	// ModuleSum is that module's h1: sum (of its replacement, when
	// replaced); a build from a source tree has none.
	ModuleSum string
	// CloudProvider is the version of k8s.io/cloud-provider the binary
	// links (v0.36.0); a replacement under another path or a directory
	// reads version => new[@version].
	CloudProvider string
	// GoVersion is the Go release that built it (go1.26.8).
	GoVersion string
}

// ReadBinaryInfo reads the Go build info embedded in the executable at
// path. A file that is not a Go executable is an error.
func ReadBinaryInfo(path string) (BinaryInfo, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return BinaryInfo{}, fmt.Errorf("reading the Go build info of %s: %w", path, err)
	}
	return DescribeBuild(bi), nil
}

// DescribeBuild reads a BinaryInfo out of a binary's build info. The
// module of the main package is the main module when it holds the main
// package: for a build in the module's own tree, and for one that
// requires the module from a throwaway module or with go install
// pkg@version, where the go command records the main package's module as
// the main module. Otherwise it is the dependency whose path is the
// longest prefix of the main package's.
func DescribeBuild(bi *debug.BuildInfo) BinaryInfo {
	if bi == nil {
		return BinaryInfo{}
	}
	info := BinaryInfo{GoVersion: bi.GoVersion}
	var mod *debug.Module
	if holds(bi.Main.Path, bi.Path) {
		mod = &bi.Main
	} else {
		for _, d := range bi.Deps {
			if d != nil && holds(d.Path, bi.Path) && (mod == nil || len(d.Path) > len(mod.Path)) {
				mod = d
			}
		}
	}
	if mod != nil {
		info.Module = mod.Path + "@" + orDevel(mod.Version)
		info.ModuleSum = mod.Sum
		if r := mod.Replace; r != nil {
			info.Module += " => " + at(r.Path, r.Version)
			info.ModuleSum = r.Sum
		}
	}
	if bi.Main.Path == CloudProviderModule {
		info.CloudProvider = orDevel(bi.Main.Version)
	}
	for _, d := range bi.Deps {
		if d == nil || d.Path != CloudProviderModule {
			continue
		}
		info.CloudProvider = d.Version
		if r := d.Replace; r != nil {
			if r.Path == d.Path && r.Version != "" {
				info.CloudProvider = r.Version
			} else {
				info.CloudProvider = d.Version + " => " + at(r.Path, r.Version)
			}
		}
	}
	return info
}

// holds reports whether module path mod holds package pkg.
func holds(mod, pkg string) bool {
	return mod != "" && (pkg == mod || strings.HasPrefix(pkg, mod+"/"))
}

func orDevel(version string) string {
	if version == "" {
		return "(devel)"
	}
	return version
}

func at(path, version string) string {
	if version == "" {
		return path
	}
	return path + "@" + version
}
