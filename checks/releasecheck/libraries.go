package releasecheck

import (
	"debug/buildinfo"
	"fmt"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// The Kubernetes staging modules RG8 reads from a binary's build info.
// Their v0.N.P releases are cut from Kubernetes v1.N.P.
const (
	cloudProviderModule = "k8s.io/cloud-provider"
	clientGoModule      = "k8s.io/client-go"
)

// moduleVersion is the version of module in info, following a replace
// (the version actually built); empty when info does not have it.
func moduleVersion(info *buildinfo.BuildInfo, module string) string {
	if info == nil {
		return ""
	}
	for _, d := range info.Deps {
		if d.Path != module {
			continue
		}
		if d.Replace != nil {
			if d.Replace.Version == "" {
				// Replaced by a directory: no version to read.
				return "(replaced by " + d.Replace.Path + ")"
			}
			return d.Replace.Version
		}
		return d.Version
	}
	return ""
}

// ParseKubernetesVersion reads a Kubernetes version, v1.N or v1.N.P (a
// leading "v" optional), and returns it with the leading "v".
func ParseKubernetesVersion(s string) (string, error) {
	v := s
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) || semver.Major(v) != "v1" {
		return "", fmt.Errorf("not a Kubernetes version (v1.N or v1.N.P)")
	}
	return v, nil
}

// kubernetesFor maps a staging module's version v0.N.P to the Kubernetes
// version v1.N.P it was released with; ok is false for anything else (a
// pseudo-version, a directory).
func kubernetesFor(v string) (string, bool) {
	if !semver.IsValid(v) || semver.Major(v) != "v0" || semver.Build(v) != "" {
		return "", false
	}
	if module.IsPseudoVersion(v) {
		return "", false
	}
	return "v1" + strings.TrimPrefix(v, "v0"), true
}

// checkLibraries is RG8: every staging module's Kubernetes version has the
// claimed minor or a later one (older minor: fail; same minor, older
// patch: warn).
func checkLibraries(info *buildinfo.BuildInfo, claim, claimSource string) (Status, string) {
	if info == nil {
		return Warn, "no Go build info in the entrypoint binary: the libraries cannot be read"
	}
	var seen []string
	var libs []string // Kubernetes versions of the modules found
	for _, m := range []string{cloudProviderModule, clientGoModule} {
		v := moduleVersion(info, m)
		if v == "" {
			continue
		}
		seen = append(seen, m+" "+v)
		libs = append(libs, m+"="+v)
	}
	if len(seen) == 0 {
		return Fail, fmt.Sprintf("the binary (%s) is built with neither %s nor %s", info.Path, cloudProviderModule, clientGoModule)
	}
	built := strings.Join(seen, ", ")
	if claim == "" {
		return Warn, fmt.Sprintf("built with %s; no Kubernetes version claimed (--kubernetes-version, label %s, or a KEP-1771 version label v1.N.P)", built, LabelK8sVersion)
	}
	want, err := ParseKubernetesVersion(claim)
	if err != nil {
		return Fail, fmt.Sprintf("claimed Kubernetes version %q (%s): %v", claim, claimSource, err)
	}
	var older, olderPatch, unknown []string
	for _, lib := range libs {
		m, v, _ := strings.Cut(lib, "=")
		k, ok := kubernetesFor(v)
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%s %s", m, v))
			continue
		}
		switch {
		case semver.Compare(semver.MajorMinor(k), semver.MajorMinor(want)) < 0:
			older = append(older, fmt.Sprintf("%s %s (Kubernetes %s)", m, v, k))
		case semver.MajorMinor(want) != want && semver.Compare(k, want) < 0:
			olderPatch = append(olderPatch, fmt.Sprintf("%s %s (Kubernetes %s)", m, v, k))
		}
	}
	claimed := fmt.Sprintf("claims Kubernetes %s (%s)", claim, claimSource)
	switch {
	case len(older) > 0:
		return Fail, fmt.Sprintf("%s, but is built with the older %s", claimed, strings.Join(older, ", "))
	case len(unknown) > 0:
		return Warn, fmt.Sprintf("%s; built with %s: %s not a release version", claimed, built, strings.Join(unknown, ", "))
	case len(olderPatch) > 0:
		return Warn, fmt.Sprintf("%s; built with an older patch release: %s", claimed, strings.Join(olderPatch, ", "))
	}
	return Pass, fmt.Sprintf("%s; built with %s", claimed, built)
}
