package releasecheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/ccm-conformance/ccm-conformance/internal/images"
)

const (
	// oldLibsVersion is the version testdata/oldlibs serves its stub
	// modules as.
	oldLibsVersion = "v0.30.0"
	// oldCCMBuildTimeout bounds the go build of the stand-in CCM (a second
	// or two; the machine is shared).
	oldCCMBuildTimeout = 5 * time.Minute
)

// buildOldCCM builds testdata/oldlibs/ccm against stub k8s.io/cloud-provider
// and k8s.io/client-go modules served as v0.30.0 from a file:// GOPROXY
// (testdata/oldlibs/README.md) and returns the binary's path.
func buildOldCCM(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	for dir, path := range map[string]string{"cloud-provider": "k8s.io/cloud-provider", "client-go": "k8s.io/client-go"} {
		src := filepath.Join("testdata", "oldlibs", "modules", dir)
		at := filepath.Join(proxy, filepath.FromSlash(path), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			t.Fatal(err)
		}
		mod, err := os.ReadFile(filepath.Join(src, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"list":                   oldLibsVersion + "\n",
			oldLibsVersion + ".info": fmt.Sprintf(`{"Version":%q,"Time":"2024-04-17T00:00:00Z"}`, oldLibsVersion),
			oldLibsVersion + ".mod":  string(mod),
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(at, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		zf, err := os.Create(filepath.Join(at, oldLibsVersion+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		if err := modzip.CreateFromDir(zf, module.Version{Path: path, Version: oldLibsVersion}, src); err != nil {
			t.Fatal(err)
		}
		zf.Close()
	}
	quoted := make([]string, len(RequiredFlags))
	for i, f := range RequiredFlags {
		quoted[i] = strconv.Quote(f)
	}
	main, err := os.ReadFile(filepath.Join("testdata", "oldlibs", "ccm", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join("testdata", "oldlibs", "ccm", "go.mod.txt"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(tmp, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "main.go"), []byte(strings.Replace(string(main), "FLAGS", strings.Join(quoted, ", "), 1)), 0o644)
	os.WriteFile(filepath.Join(src, "go.mod"), gomod, 0o644)

	bin := filepath.Join(tmp, "old-ccm")
	ctx, cancel := context.WithTimeout(context.Background(), oldCCMBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy),
		"GOMODCACHE="+filepath.Join(tmp, "modcache"), // never the shared module cache
		"GOFLAGS=-mod=mod -modcacherw -buildvcs=false",
		"GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local",
		"CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH,
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return bin
}

// TestOldLibraries: an image whose CCM binary was built with
// k8s.io/cloud-provider v0.30.0, labelled v1.37.0, fails RG8 and only RG8.
func TestOldLibraries(t *testing.T) {
	data, err := os.ReadFile(buildOldCCM(t))
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Image(images.Target{Name: "old-ccm"}, data, images.Metadata{
		Version: "v1.37.0", Revision: refRevision, Source: images.DefaultSource,
		Created: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Arch: runtime.GOARCH,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), writeTarball(t, img), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.FailedIDs(); len(got) != 1 || got[0] != RuleLibraries {
		t.Fatalf("failed items %v, want [%s]:\n%s", got, RuleLibraries, statuses(rep))
	}
	it, _ := rep.Item(RuleLibraries)
	for _, want := range []string{"k8s.io/cloud-provider v0.30.0 (Kubernetes v1.30.0)", "k8s.io/client-go v0.30.0", "claims Kubernetes v1.37.0"} {
		if !strings.Contains(it.Evidence, want) {
			t.Errorf("RG8 evidence %q lacks %q", it.Evidence, want)
		}
	}
}
