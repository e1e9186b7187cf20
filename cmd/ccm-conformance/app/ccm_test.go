package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/ccmbuild"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
)

// goVersionM is `go version -m` of a vSphere CCM built from its module.
const goVersionM = `/cache/vsphere-cloud-controller-manager: go1.26.8
	path	k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager
	mod	k8s.io/cloud-provider-vsphere	v1.36.0	h1:BzLS2rZW8qh/Yabh9SvWwGpyUiiyraYjrDSHO76sDfY=
	dep	github.com/vmware/govmomi	v0.52.0	h1:govmomi=
	dep	github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels	v0.0.0-20240404200847-de75746a9505
	=>	github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels	v1.9.1-0.20251029150609-93918c59a719	h1:testlabels=
	dep	k8s.io/cloud-provider	v0.36.0	h1:cloudprovider=
	dep	k8s.io/klog/v2	v2.130.1	h1:klog=
	build	-buildmode=exe
	build	-compiler=gc
	build	-trimpath=true
	build	DefaultGODEBUG=asynctimerchan=1
	build	CGO_ENABLED=0
	build	GOARCH=amd64
	build	GOOS=linux
	build	GOAMD64=v1
`

func TestGoVersionMLinesOfInterest(t *testing.T) {
	got := strings.Join(goVersionMLinesOfInterest(goVersionM), "\n")
	want := `/cache/vsphere-cloud-controller-manager: go1.26.8
	path	k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager
	mod	k8s.io/cloud-provider-vsphere	v1.36.0	h1:BzLS2rZW8qh/Yabh9SvWwGpyUiiyraYjrDSHO76sDfY=
	dep	github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels	v0.0.0-20240404200847-de75746a9505
	=>	github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels	v1.9.1-0.20251029150609-93918c59a719	h1:testlabels=
	dep	k8s.io/cloud-provider	v0.36.0	h1:cloudprovider=
	build	-trimpath=true
	build	CGO_ENABLED=0
	build	GOARCH=amd64
	build	GOOS=linux`
	if got != want {
		t.Errorf("lines of interest:\n%s\nwant\n%s", got, want)
	}
}

const vsphereModuleProfile = `apiVersion: ccm-conformance.dev/v1alpha1
kind: Profile
name: vsphere
ccm:
  binary:
    module:
      path: k8s.io/cloud-provider-vsphere
      version: v1.36.0
      package: k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager
      replace:
        - github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels => github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels v1.9.1-0.20251029150609-93918c59a719
capabilities: [InstancesV2]
`

// ccm build: a bad profile is exit 2 in one line naming it, a profile
// whose CCM is no module has nothing to build, and a module CCM in the
// cache is shown without a build.
func TestCCMBuild(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cache := t.TempDir()
	t.Setenv(k8sbin.EnvCacheDir, cache)
	t.Setenv("PATH", t.TempDir()) // no go command: nothing may be built

	moduleProfile := write("vsphere.yaml", vsphereModuleProfile)
	p, err := profile.Load(moduleProfile)
	if err != nil {
		t.Fatal(err)
	}
	req, err := runner.CCMModuleRequest(p)
	if err != nil {
		t.Fatal(err)
	}
	// A Go executable in the cache where the build would put it: this
	// test binary, with a go version -m file beside it.
	cached, err := ccmbuild.BinaryPath(cache, req)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached+ccmbuild.GoVersionMSuffix, []byte(goVersionM), 0o644); err != nil {
		t.Fatal(err)
	}
	upstream := []byte("module k8s.io/cloud-provider-vsphere\n\ngo 1.26.0\n\nreplace " + p.CCM.Binary.Module.Replace[0] + "\n")
	goMod, err := ccmbuild.GoMod(req, upstream)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached+ccmbuild.GoModSuffix, goMod, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantErr    string
		wantOneErr bool
	}{
		{
			name:     "a module CCM in the cache",
			args:     []string{"ccm", "build", "--provider", moduleProfile},
			wantCode: 0,
			wantOut: []string{
				"k8s.io/cloud-provider-vsphere@v1.36.0 k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager (from the cache):\n" + cached + "\n",
				"\tmod\tk8s.io/cloud-provider-vsphere\tv1.36.0\th1:",
				"\t=>\tgithub.com/vmware-tanzu/vm-operator/pkg/constants/testlabels\tv1.9.1-0.20251029150609-93918c59a719",
				"requires and replaces:\n\trequire k8s.io/cloud-provider-vsphere v1.36.0\n\tgithub.com/vmware-tanzu/vm-operator/pkg/constants/testlabels => github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels v1.9.1-0.20251029150609-93918c59a719\n",
				"a run of it records:\n  ccm-module: github.com/ccm-conformance/ccm-conformance@(devel)\n",
				"  ccm-go-version: go1.",
			},
		},
		{
			name:     "a CCM that is no module",
			args:     []string{"ccm", "build", "--provider", write("path.yaml", "apiVersion: ccm-conformance.dev/v1alpha1\nkind: Profile\nname: p\nccm:\n  binary:\n    path: /bin/ccm\ncapabilities: [InstancesV2]\n")},
			wantCode: 0,
			wantOut:  []string{"the CCM is not built from a module (ccm.binary.path), so there is nothing to build\n"},
		},
		{
			name:       "a bad profile",
			args:       []string{"ccm", "build", "--provider", write("bad.yaml", strings.Replace(vsphereModuleProfile, "v1.36.0\n", "latest\n", 1))},
			wantCode:   runner.ExitHarnessError,
			wantErr:    "ccm.binary.module.version: Invalid value: \"latest\"",
			wantOneErr: true,
		},
		{
			name:       "no profile",
			args:       []string{"ccm", "build"},
			wantCode:   runner.ExitHarnessError,
			wantErr:    "--provider: the provider profile is required",
			wantOneErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if tt.wantErr != "" && !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, stderr.String())
			}
			if tt.wantOneErr && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr is not one line:\n%s", stderr.String())
			}
		})
	}
}

// validate-profile checks a module CCM's fields and says whether the cache
// has it, without building it (there is no go command to build with).
func TestValidateProfileDoesNotBuildAModule(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vsphere.yaml")
	if err := os.WriteFile(path, []byte(vsphereModuleProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(k8sbin.EnvCacheDir, t.TempDir())
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"validate-profile", path}, &stdout, &stderr); code != 0 {
		t.Fatalf("validate-profile exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	want := "ccm: k8s.io/cloud-provider-vsphere@v1.36.0 is not built yet (minutes, once): 'ccm-conformance ccm build --provider " + path + "' builds it, and so does the first run\n"
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
	}
}
