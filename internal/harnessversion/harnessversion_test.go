package harnessversion

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	withMain := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/ccm-conformance/ccm-conformance", Version: v}}
	}
	tests := []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		want    string
	}{
		{"a release build", "v0.1.0", withMain("(devel)"), "v0.1.0"},
		{"stamped wins over the module version", "v0.1.0-3-gabc", withMain("v0.1.0"), "v0.1.0-3-gabc"},
		{"go install at a version", "", withMain("v0.2.0"), "v0.2.0"},
		{"go install at a pseudo-version", "", withMain("v0.0.0-20261206050000-0123456789ab"), "v0.0.0-20261206050000-0123456789ab"},
		{"go build in a checkout", "", withMain("(devel)"), "devel"},
		{"no build info", "", nil, "devel"},
	}
	for _, tt := range tests {
		if got := resolve(tt.stamped, tt.info); got != tt.want {
			t.Errorf("%s: resolve = %q, want %q", tt.name, got, tt.want)
		}
	}
}
