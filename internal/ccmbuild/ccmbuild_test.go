package ccmbuild

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	vsphereModule  = "k8s.io/cloud-provider-vsphere"
	vspherePackage = "k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager"
	testlabels     = "github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels"
)

// vsphereReplace is the one replace of k8s.io/cloud-provider-vsphere
// v1.36.0's go.mod that its build needs.
var vsphereReplace = Replace{
	Old: module.Version{Path: testlabels},
	New: module.Version{Path: testlabels, Version: "v1.9.1-0.20251029150609-93918c59a719"},
}

func vsphereRequest() Request {
	return Request{Module: vsphereModule, Version: "v1.36.0", Package: vspherePackage, Replace: []Replace{vsphereReplace}}
}

func TestGoMod(t *testing.T) {
	celGo := Replace{Old: module.Version{Path: "github.com/google/cel-go"}, New: module.Version{Path: "github.com/google/cel-go", Version: "v0.31.0"}}
	oldNew := Replace{Old: module.Version{Path: "example.com/old", Version: "v1.0.0"}, New: module.Version{Path: "example.com/new", Version: "v1.0.1"}}
	godebugReq := Request{Module: "example.com/ccm/v2", Version: "v2.3.0", Package: "example.com/ccm/v2/cmd/ccm"}
	tests := []struct {
		name    string
		fixture string
		req     Request
		// golden is the expected output, under testdata/; "" when an
		// error is expected.
		golden  string
		wantErr string
	}{
		{name: "vsphere", fixture: "valid-vsphere-v1.36.0.mod", req: vsphereRequest(), golden: "vsphere-v1.36.0.golden.mod"},
		{name: "vsphere without replaces", fixture: "valid-vsphere-v1.36.0.mod",
			req:    Request{Module: vsphereModule, Version: "v1.36.0", Package: vspherePackage},
			golden: "vsphere-v1.36.0-no-replace.golden.mod"},
		{name: "godebug kept, toolchain dropped, replaces chosen", fixture: "valid-godebug.mod",
			req:    func() Request { r := godebugReq; r.Replace = []Replace{oldNew, celGo}; return r }(),
			golden: "godebug.golden.mod"},
		{name: "a replace upstream does not have", fixture: "valid-vsphere-v1.36.0.mod",
			req: func() Request {
				r := vsphereRequest()
				r.Replace = append(r.Replace, celGo)
				return r
			}(),
			wantErr: "replace github.com/google/cel-go => github.com/google/cel-go v0.31.0 is not in the go.mod of k8s.io/cloud-provider-vsphere@v1.36.0 (its replaces: " + vsphereReplace.String() + ")"},
		{name: "a replace with another target", fixture: "valid-godebug.mod",
			req: func() Request {
				r := godebugReq
				r.Replace = []Replace{{Old: celGo.Old, New: module.Version{Path: "github.com/google/cel-go", Version: "v0.32.0"}}}
				return r
			}(),
			wantErr: "is not in the go.mod of example.com/ccm/v2@v2.3.0"},
		{name: "another module", fixture: "invalid-other-module.mod", req: godebugReq, wantErr: "declares another module"},
		{name: "syntax", fixture: "invalid-syntax.mod", req: godebugReq, wantErr: "parsing the go.mod of example.com/ccm/v2@v2.3.0"},
		{name: "a query", fixture: "valid-vsphere-v1.36.0.mod",
			req:     Request{Module: vsphereModule, Version: "latest", Package: vspherePackage},
			wantErr: `version "latest": want a semver release`},
		{name: "a package outside the module", fixture: "valid-vsphere-v1.36.0.mod",
			req:     Request{Module: vsphereModule, Version: "v1.36.0", Package: "k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager"},
			wantErr: "not a package of module k8s.io/cloud-provider-vsphere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upstream, err := os.ReadFile(filepath.Join("testdata", tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			got, err := GoMod(tt.req, upstream)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			f, err := modfile.Parse("go.mod", got, nil)
			if err != nil {
				t.Fatalf("generated go.mod does not parse: %v\n%s", err, got)
			}
			if f.Toolchain != nil {
				t.Errorf("generated go.mod has a toolchain line:\n%s", got)
			}
			if want := BuildModulePrefix + tt.req.Module; f.Module.Mod.Path != want {
				t.Errorf("module %s, want %s", f.Module.Mod.Path, want)
			}
			if len(f.Require) != 1 || f.Require[0].Mod != (module.Version{Path: tt.req.Module, Version: tt.req.Version}) {
				t.Errorf("requires %v, want only %s %s", f.Require, tt.req.Module, tt.req.Version)
			}
			if len(f.Replace) != len(tt.req.Replace) {
				t.Errorf("%d replaces, want the request's %d", len(f.Replace), len(tt.req.Replace))
			}
			goldenPath := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("generated go.mod differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", goldenPath, got, want)
			}
		})
	}
}

func TestBinaryPath(t *testing.T) {
	root := "/cache"
	vsphere := vsphereRequest()
	got, err := BinaryPath(root, vsphere)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "bin", "ccm", "k8s.io", "cloud-provider-vsphere@v1.36.0", Key(vsphere), "vsphere-cloud-controller-manager")
	if got != want {
		t.Errorf("BinaryPath = %s, want %s", got, want)
	}

	// Upper-case letters are escaped as the module cache escapes them.
	upper := Request{Module: "github.com/Example/CCM", Version: "v0.1.0", Package: "github.com/Example/CCM/cmd/ccm"}
	if got, err := BinaryPath(root, upper); err != nil || !strings.Contains(got, filepath.Join("github.com", "!example", "!c!c!m@v0.1.0")) {
		t.Errorf("BinaryPath = %s, %v; want the module path escaped", got, err)
	}

	if _, err := BinaryPath(root, Request{Module: vsphereModule, Version: "v1.36", Package: vspherePackage}); err == nil {
		t.Error("BinaryPath of version v1.36 succeeded, want an error")
	}
}

// The key tells builds of one module version apart by their package and
// replaces, whatever the order of the replaces.
func TestKey(t *testing.T) {
	base := vsphereRequest()
	other := Replace{Old: module.Version{Path: "example.com/a"}, New: module.Version{Path: "example.com/a", Version: "v1.0.0"}}
	withTwo := base
	withTwo.Replace = []Replace{vsphereReplace, other}
	reordered := base
	reordered.Replace = []Replace{other, vsphereReplace}
	none := base
	none.Replace = nil
	newer := base
	newer.Replace = []Replace{{Old: vsphereReplace.Old, New: module.Version{Path: testlabels, Version: "v1.9.1"}}}
	otherPackage := base
	otherPackage.Package = vsphereModule + "/cmd/vcpi"
	otherCache := base
	otherCache.CacheDir, otherCache.Go = "/elsewhere", "/usr/bin/go"

	if k := Key(base); len(k) != keyLength {
		t.Errorf("Key = %q, want %d hex digits", k, keyLength)
	}
	if Key(withTwo) != Key(reordered) {
		t.Error("the order of the replaces changed the key")
	}
	if Key(otherCache) != Key(base) {
		t.Error("where and with which go command it is built changed the key")
	}
	keys := map[string]string{}
	for name, r := range map[string]Request{"base": base, "two replaces": withTwo, "no replace": none, "another target": newer, "another package": otherPackage} {
		k := Key(r)
		if prev, seen := keys[k]; seen {
			t.Errorf("%s and %s have the same key %s", prev, name, k)
		}
		keys[k] = name
	}
}

func TestBinaryName(t *testing.T) {
	for pkg, want := range map[string]string{
		vspherePackage:                     "vsphere-cloud-controller-manager",
		"example.com/ccm/v2":               "ccm",
		"example.com/ccm/v2/cmd/ccm":       "ccm",
		"example.com/v2":                   "example.com",
		"sigs.k8s.io/cloud-provider-kind":  "cloud-provider-kind",
		"example.com/ccm/cmd/v1":           "v1",
		"gopkg.in/yaml.v3/cmd/ccm-manager": "ccm-manager",
	} {
		if got := BinaryName(pkg); got != want {
			t.Errorf("BinaryName(%q) = %q, want %q", pkg, got, want)
		}
	}
}
