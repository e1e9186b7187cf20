// Package harnessversion says which release of ccm-conformance a binary is:
// the version a release build stamps, else the module version `go install
// ...@version` records, else "devel".
//
// Floor: a leaf (standard library only).
package harnessversion

import "runtime/debug"

// Stamped is set by release and bin/ builds with
// -ldflags "-X github.com/ccm-conformance/ccm-conformance/internal/harnessversion.Stamped=v0.1.0"
// (scripts/build.sh, scripts/release.sh).
var Stamped = ""

// Get returns the harness version: Stamped when set; else the main
// module's version when the binary was built by `go install
// module/cmd@version` (the go command records it); else "devel".
func Get() string {
	info, _ := debug.ReadBuildInfo()
	return resolve(Stamped, info)
}

func resolve(stamped string, info *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

// Commit is the VCS revision the go command stamped into a binary built in
// a checkout, "" otherwise (a `go install ...@version` build has none).
func Commit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
