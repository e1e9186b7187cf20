package ccm

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	const (
		vsphere    = "k8s.io/cloud-provider-vsphere"
		vsphereSum = "h1:BzLS2rZW8qh/Yabh9SvWwGpyUiiyraYjrDSHO76sDfY="
		cpSum      = "h1:cloudprovidersum="
	)
	cloudProvider := &debug.Module{Path: CloudProviderModule, Version: "v0.36.0", Sum: cpSum}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want BinaryInfo
	}{
		{
			name: "built in a throwaway module: the go command names the main package's module as the main module",
			bi: &debug.BuildInfo{
				GoVersion: "go1.26.8",
				Path:      vsphere + "/cmd/vsphere-cloud-controller-manager",
				Main:      debug.Module{Path: vsphere, Version: "v1.36.0", Sum: vsphereSum},
				Deps:      []*debug.Module{{Path: "github.com/vmware/govmomi", Version: "v0.52.0"}, cloudProvider},
			},
			want: BinaryInfo{Module: vsphere + "@v1.36.0", ModuleSum: vsphereSum, CloudProvider: "v0.36.0", GoVersion: "go1.26.8"},
		},
		{
			name: "the main package's module as a dependency of another main module",
			bi: &debug.BuildInfo{
				GoVersion: "go1.25.4",
				Path:      vsphere + "/cmd/vsphere-cloud-controller-manager",
				Main:      debug.Module{Path: "ccm-conformance.local/build/ccm/" + vsphere, Version: "(devel)"},
				Deps: []*debug.Module{
					{Path: "k8s.io/cloud-provider-vsphere-extra", Version: "v9.9.9"}, // a prefix of the string, not of the path
					{Path: vsphere, Version: "v1.36.0", Sum: vsphereSum},
					cloudProvider,
				},
			},
			want: BinaryInfo{Module: vsphere + "@v1.36.0", ModuleSum: vsphereSum, CloudProvider: "v0.36.0", GoVersion: "go1.25.4"},
		},
		{
			name: "nested modules: the longest prefix holds the package",
			bi: &debug.BuildInfo{
				Path: "example.com/repo/ccm/cmd/ccm",
				Main: debug.Module{Path: "example.com/build", Version: "(devel)"},
				Deps: []*debug.Module{{Path: "example.com/repo", Version: "v1.0.0", Sum: "h1:repo="}, {Path: "example.com/repo/ccm", Version: "v0.3.0", Sum: "h1:ccm="}},
			},
			want: BinaryInfo{Module: "example.com/repo/ccm@v0.3.0", ModuleSum: "h1:ccm="},
		},
		{
			name: "built in its own source tree: (devel), no sum",
			bi: &debug.BuildInfo{
				GoVersion: "go1.26.8",
				Path:      "github.com/ccm-conformance/ccm-conformance/providers/reference/cmd/reference-ccm",
				Main:      debug.Module{Path: "github.com/ccm-conformance/ccm-conformance/providers", Version: "(devel)"},
				Deps:      []*debug.Module{{Path: CloudProviderModule, Version: "v0.37.2", Sum: cpSum}},
			},
			want: BinaryInfo{Module: "github.com/ccm-conformance/ccm-conformance/providers@(devel)", CloudProvider: "v0.37.2", GoVersion: "go1.26.8"},
		},
		{
			name: "a replaced main package's module and cloud-provider under another path",
			bi: &debug.BuildInfo{
				Path: "example.com/ccm/cmd/ccm",
				Main: debug.Module{Path: "example.com/build"},
				Deps: []*debug.Module{
					{Path: "example.com/ccm", Version: "v1.0.0", Sum: "h1:old=", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1", Sum: "h1:fork="}},
					{Path: CloudProviderModule, Version: "v0.0.0", Replace: &debug.Module{Path: "../staging/src/k8s.io/cloud-provider"}},
				},
			},
			want: BinaryInfo{Module: "example.com/ccm@v1.0.0 => example.com/fork@v1.0.1", ModuleSum: "h1:fork=", CloudProvider: "v0.0.0 => ../staging/src/k8s.io/cloud-provider"},
		},
		{
			name: "cloud-provider replaced by a version of itself",
			bi: &debug.BuildInfo{
				Path: "example.com/ccm",
				Main: debug.Module{Path: "example.com/ccm", Version: "v2.0.0+incompatible", Sum: "h1:x="},
				Deps: []*debug.Module{{Path: CloudProviderModule, Version: "v0.0.0", Replace: &debug.Module{Path: CloudProviderModule, Version: "v0.36.1", Sum: cpSum}}},
			},
			want: BinaryInfo{Module: "example.com/ccm@v2.0.0+incompatible", ModuleSum: "h1:x=", CloudProvider: "v0.36.1"},
		},
		{
			name: "cloud-provider's own sample main",
			bi: &debug.BuildInfo{
				Path: CloudProviderModule + "/sample",
				Main: debug.Module{Path: CloudProviderModule, Version: "v0.37.2", Sum: cpSum},
			},
			want: BinaryInfo{Module: CloudProviderModule + "@v0.37.2", ModuleSum: cpSum, CloudProvider: "v0.37.2"},
		},
		{
			name: "a go run binary: no module holds the command-line package",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Path: "command-line-arguments"},
			want: BinaryInfo{GoVersion: "go1.26.8"},
		},
		{name: "no build info", bi: nil, want: BinaryInfo{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DescribeBuild(tt.bi); got != tt.want {
				t.Errorf("DescribeBuild =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

// ReadBinaryInfo reads the test binary itself, a Go executable built in
// this module's tree, and refuses a file that is not one.
func TestReadBinaryInfo(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	info, err := ReadBinaryInfo(self)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.GoVersion, "go") || !strings.HasPrefix(info.Module, "github.com/ccm-conformance/ccm-conformance@") {
		t.Errorf("ReadBinaryInfo(test binary) = %+v", info)
	}
	script := filepath.Join(t.TempDir(), "ccm.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBinaryInfo(script); err == nil || !strings.Contains(err.Error(), script) {
		t.Errorf("ReadBinaryInfo(shell script) = %v, want an error naming it", err)
	}
}
