package release

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/ccm-conformance/ccm-conformance/internal/images"
)

func TestSBOMOf(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/ccm-conformance/ccm-conformance", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "k8s.io/client-go", Version: "v0.37.2", Sum: "h1:abc="},
			{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/new", Version: "v1.0.1", Sum: "h1:def="}},
		},
	}
	doc := sbomOf("ccm-conformance-linux-amd64", info, "v0.1.0", time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	var got []string
	for _, p := range doc.Packages {
		got = append(got, p.Name+"@"+p.VersionInfo+" "+p.ExternalRefs[0].ReferenceLocator+" "+p.Comment)
	}
	want := []string{
		"github.com/ccm-conformance/ccm-conformance@v0.1.0 pkg:golang/github.com/ccm-conformance/ccm-conformance@v0.1.0 ",
		"k8s.io/client-go@v0.37.2 pkg:golang/k8s.io/client-go@v0.37.2 h1:abc=",
		"example.com/new@v1.0.1 pkg:golang/example.com/new@v1.0.1 h1:def=",
	}
	if !slices.Equal(got, want) {
		t.Errorf("packages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(doc.Relationships) != 3 || doc.Relationships[0].Type != "DESCRIBES" || doc.Relationships[2].Type != "DEPENDS_ON" {
		t.Errorf("relationships = %+v", doc.Relationships)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-12-06T00:00:00Z" {
		t.Errorf("document header = %+v", doc)
	}
}

func TestMakeRefusesBadInput(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "old"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"a used directory", Options{RepoDir: "../..", OutDir: full, Version: "v0.1.0"}, "is not empty"},
		{"a platform without an arch", Options{RepoDir: "../..", OutDir: t.TempDir(), Version: "v0.1.0", Platforms: []string{"linux"}}, `platform "linux": want linux/GOARCH`},
		{"another OS", Options{RepoDir: "../..", OutDir: t.TempDir(), Version: "v0.1.0", Platforms: []string{"darwin/arm64"}}, `platform "darwin/arm64"`},
	}
	for _, tt := range tests {
		_, err := Make(context.Background(), tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

// TestIntegrationRelease makes a release for this machine's platform (make
// release builds linux/arm64 too, the same way) and checks every promise
// of docs/releasing.md: stamped binaries that run, a module list per
// binary naming what was linked, checksums that match, and an image index
// whose image holds both binaries with the CLI as its entrypoint.
func TestIntegrationRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and the tester")
	}
	out := filepath.Join(t.TempDir(), "release")
	platform := "linux/" + runtime.GOARCH
	res, err := Make(context.Background(), Options{RepoDir: "../..", OutDir: out, Version: "v0.9.0-test.1", Platforms: []string{platform}, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	wantBinaries := []string{"ccm-conformance-linux-" + runtime.GOARCH, "kubetest2-tester-ccm-linux-" + runtime.GOARCH}
	if !slices.Equal(res.Binaries, wantBinaries) {
		t.Fatalf("binaries %v, want %v", res.Binaries, wantBinaries)
	}

	// The CLI runs and says which release it is.
	cli := filepath.Join(out, wantBinaries[0])
	v, err := exec.Command(cli, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "ccm-conformance v0.9.0-test.1 ") {
		t.Errorf("%s version: %q, %v", cli, v, err)
	}

	// One SBOM per binary, naming the staging modules it links.
	for _, b := range wantBinaries {
		data, err := os.ReadFile(filepath.Join(out, b+".spdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc spdxDocument
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s.spdx.json: %v", b, err)
		}
		var names []string
		for _, p := range doc.Packages {
			names = append(names, p.Name+"@"+p.VersionInfo)
		}
		if names[0] != "github.com/ccm-conformance/ccm-conformance@v0.9.0-test.1" || !slices.Contains(names, "k8s.io/client-go@v0.37.2") {
			t.Errorf("%s.spdx.json packages start %v and hold no k8s.io/client-go@v0.37.2 (%d packages)", b, names[:1], len(names))
		}
	}

	// SHA256SUMS covers every file, and each sum is right.
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		data, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s has the wrong sum", file)
		}
		listed = append(listed, file)
	}
	entries, _ := os.ReadDir(out)
	var files []string
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" {
			files = append(files, e.Name())
		}
	}
	if !slices.Equal(listed, files) {
		t.Errorf("SHA256SUMS lists %v; the directory holds %v", listed, files)
	}

	if want := []string{"ccm-conformance-v0.9.0-test.1-image-linux-" + runtime.GOARCH + ".docker.tar"}; !slices.Equal(res.DockerImages, want) {
		t.Errorf("docker tarballs %v, want %v", res.DockerImages, want)
	}

	// Where a Docker engine answers, the image loads and its entrypoint
	// is the CLI, with the tester beside it.
	if err := exec.Command("docker", "version").Run(); err == nil {
		ref := ImageRepository + ":v0.9.0-test.1"
		if out, err := exec.Command("docker", "load", "-i", filepath.Join(out, res.DockerImages[0])).CombinedOutput(); err != nil {
			t.Fatalf("docker load: %v\n%s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", ref).Run() })
		if v, err := exec.Command("docker", "run", "--rm", ref, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(v), "ccm-conformance v0.9.0-test.1 ") {
			t.Errorf("docker run %s version: %q, %v", ref, v, err)
		}
		if h, err := exec.Command("docker", "run", "--rm", "--entrypoint", images.BinDir+"/kubetest2-tester-ccm", ref, "--help").CombinedOutput(); err != nil || !strings.Contains(string(h), "--provider") {
			t.Errorf("the image's kubetest2-tester-ccm --help: %v\n%s", err, h)
		}
	} else {
		t.Logf("no Docker engine (%v): the docker tarball is not loaded", err)
	}

	// The image index: one image per platform, both binaries inside.
	dir := t.TempDir()
	untar(t, filepath.Join(out, res.Image), dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Platform == nil || m.Manifests[0].Platform.Architecture != runtime.GOARCH {
		t.Fatalf("index manifests %+v, want one for %s", m.Manifests, platform)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if ep := cf.Config.Entrypoint; !slices.Equal(ep, []string{images.BinDir + "/ccm-conformance"}) {
		t.Errorf("entrypoint %v", ep)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var inImage []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(h.Name, images.BinDir[1:]+"/") && h.Typeflag == tar.TypeReg {
				inImage = append(inImage, filepath.Base(h.Name))
			}
		}
		rc.Close()
	}
	if !slices.Equal(inImage, []string{"ccm-conformance", "kubetest2-tester-ccm"}) {
		t.Errorf("the image's %s holds %v", images.BinDir, inImage)
	}
}

// untar unpacks a tar of regular files and directories into dir.
func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
