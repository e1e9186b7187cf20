package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/internal/ccmbuild"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
	"github.com/ccm-conformance/ccm-conformance/internal/plainlog"
)

const moduleProfile = `apiVersion: ccm-conformance.dev/v1alpha1
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

func writeProfile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// CheckProfile, which validate-profile and list run, checks a module's
// fields and never builds it.
func TestCheckProfileDoesNotBuildAModule(t *testing.T) {
	t.Setenv(k8sbin.EnvCacheDir, t.TempDir())
	t.Setenv("PATH", t.TempDir()) // no go command to build with
	checked, err := CheckProfile(context.Background(), CheckOptions{ProfilePath: writeProfile(t, moduleProfile)})
	if err != nil {
		t.Fatalf("CheckProfile: %v", err)
	}
	if checked.CCMBinary != "" {
		t.Errorf("CheckProfile resolved the CCM to %s; it must leave that to Run", checked.CCMBinary)
	}
}

// CCMExecutable: a path is resolved against the profile's directory, a
// module is the binary in the cache, an image or deployed CCM has none.
func TestCCMExecutable(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(k8sbin.EnvCacheDir, cache)
	ctx := context.Background()

	p, err := profile.Load(writeProfile(t, moduleProfile))
	if err != nil {
		t.Fatal(err)
	}
	req, err := CCMModuleRequest(p)
	if err != nil {
		t.Fatal(err)
	}
	if req.Module != "k8s.io/cloud-provider-vsphere" || req.Version != "v1.36.0" || len(req.Replace) != 1 ||
		req.Replace[0].String() != p.CCM.Binary.Module.Replace[0] {
		t.Errorf("CCMModuleRequest = %+v", req)
	}
	// A binary already in the cache is used as it is, without a build.
	cached, err := ccmbuild.BinaryPath(cache, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	if got, err := CCMExecutable(ctx, p, &progress); err != nil || got != cached {
		t.Errorf("CCMExecutable(module) = %q, %v; want the cached %s", got, err, cached)
	}
	if progress.Len() != 0 {
		t.Errorf("a cached CCM reported progress:\n%s", progress.String())
	}

	pathProfile, err := profile.Load(writeProfile(t, strings.Replace(moduleProfile, `    module:
      path: k8s.io/cloud-provider-vsphere
      version: v1.36.0
      package: k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager
      replace:
        - github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels => github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels v1.9.1-0.20251029150609-93918c59a719
`, "    path: bin/my-ccm\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := CCMExecutable(ctx, pathProfile, nil); err != nil || got != filepath.Join(pathProfile.Dir, "bin/my-ccm") {
		t.Errorf("CCMExecutable(path) = %q, %v", got, err)
	}
	var inErr *InputError
	if _, err := CCMModuleRequest(pathProfile); !errors.As(err, &inErr) || !strings.Contains(err.Error(), "ccm.binary.module is not set") {
		t.Errorf("CCMModuleRequest(path profile) = %v, want an input error", err)
	}

	deployed := &profile.Profile{CCM: profile.CCM{Deployed: &profile.DeployedCCM{LabelSelector: "k8s-app=ccm"}}}
	if got, err := CCMExecutable(ctx, deployed, nil); err != nil || got != "" {
		t.Errorf("CCMExecutable(deployed) = %q, %v; want none", got, err)
	}
}

// A module that cannot be built is a setup error with the go command's
// words, and nothing is left in the cache.
func TestBuildCCMModuleFailure(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(k8sbin.EnvCacheDir, cache)
	bin := t.TempDir()
	fakeGo := "#!/bin/sh\necho 'go: k8s.io/cloud-provider-vsphere@v1.36.0: reading https://proxy.golang.org/...: 404 Not Found' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	p, err := profile.Load(writeProfile(t, moduleProfile))
	if err != nil {
		t.Fatal(err)
	}
	_, err = CCMExecutable(context.Background(), p, nil)
	var setupErr *SetupError
	if !errors.As(err, &setupErr) {
		t.Fatalf("CCMExecutable = %v, want a *SetupError", err)
	}
	for _, want := range []string{"building the CCM (ccm.binary.module)", "go mod download -json k8s.io/cloud-provider-vsphere@v1.36.0", "404 Not Found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// recordCCMBinary names the module of a Go executable (here the test
// binary, built in this module's tree) and says when an executable has
// no Go build info.
func TestRecordCCMBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var info RunInfo
	var out bytes.Buffer
	recordCCMBinary(&info, self, plainlog.New(&out, "", 0))
	if info.CCMBinary != self || !strings.HasPrefix(info.CCMDigest, "sha256:") ||
		!strings.HasPrefix(info.CCMModule, "github.com/ccm-conformance/ccm-conformance@") ||
		!strings.HasPrefix(info.CCMGoVersion, "go") {
		t.Errorf("recordCCMBinary(test binary) = %+v", info)
	}
	if out.Len() != 0 {
		t.Errorf("recordCCMBinary said %q about a Go executable", out.String())
	}

	script := filepath.Join(t.TempDir(), "ccm.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	info = RunInfo{}
	out.Reset()
	recordCCMBinary(&info, script, plainlog.New(&out, "", 0))
	if info.CCMModule != "" || info.CCMDigest == "" || !strings.Contains(out.String(), "does not record which module the CCM is") {
		t.Errorf("recordCCMBinary(script) = %+v, said %q", info, out.String())
	}
}
