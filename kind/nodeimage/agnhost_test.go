package nodeimage

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestAgnhostSkip(t *testing.T) {
	for rel, want := range map[string]bool{
		"bin/sh":                       false,
		"usr/bin/nc.openbsd":           false,
		"dev/null":                     true,
		"proc/self":                    true,
		"var/cache/apt/archives/x.deb": true,
		"usr/share/doc/curl/copyright": true,
		completeMarker:                 true,
		"devices":                      false,
	} {
		if got := agnhostSkip(rel); got != want {
			t.Errorf("agnhostSkip(%q) = %v, want %v", rel, got, want)
		}
	}
}

// fakeRootfs makes a small root filesystem: a shell, a link, a device
// directory's contents and docs that the image leaves out.
func fakeRootfs(t *testing.T, root string) {
	t.Helper()
	for path, data := range map[string]string{
		"usr/bin/dash":                 "dash",
		"usr/bin/nc.openbsd":           "nc",
		"dev/null":                     "not a device here",
		"usr/share/doc/curl/copyright": "docs",
		completeMarker:                 "",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dash", filepath.Join(root, "usr/bin/sh")); err != nil {
		t.Fatal(err)
	}
}

// With the root filesystem cached, EnsureAgnhostImage writes an image of
// it and the binary and loads it with docker under the tag given; a second
// call finds it in Docker by its label and does nothing.
func TestEnsureAgnhostImage(t *testing.T) {
	cache := t.TempDir()
	opts := Options{CacheDir: cache, DebianMirror: "http://deb.example/debian", Getenv: func(string) string { return "" }}
	root := filepath.Join(cache, "kind", "agnhost-rootfs-"+agnhostRootfsHash(DefaultDebianSuite, opts.DebianMirror))
	fakeRootfs(t, root)
	bin := filepath.Join(t.TempDir(), "agnhost")
	if err := os.WriteFile(bin, []byte("\x7fELF agnhost"), 0o755); err != nil {
		t.Fatal(err)
	}

	// The fake docker keeps what it is asked to load, and answers an
	// inspect with the label of what it loaded.
	dockerDir := t.TempDir()
	loaded := filepath.Join(dockerDir, "loaded.tar")
	label := filepath.Join(dockerDir, "label")
	docker := filepath.Join(dockerDir, "docker")
	script := `#!/bin/sh
case "$1 $2" in
"image inspect") [ -f ` + label + ` ] && cat ` + label + ` && exit 0; echo "No such image" >&2; exit 1 ;;
"load -i") cp "$3" ` + loaded + `; echo loads >> ` + dockerDir + `/calls ;;
esac
`
	if err := os.WriteFile(docker, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts.Docker = docker
	ref := "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	var progress strings.Builder
	opts.Progress = &progress
	if err := EnsureAgnhostImage(context.Background(), AgnhostOptions{Ref: ref, Binary: bin, Options: opts}); err != nil {
		t.Fatalf("EnsureAgnhostImage: %v\n%s", err, progress.String())
	}
	tag, _ := name.NewTag(ref)
	img, err := tarball.ImageFromPath(loaded, &tag)
	if err != nil {
		t.Fatalf("docker was given no image tagged %s: %v", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/agnhost"}) || cf.Config.Labels[agnhostLabel] == "" {
		t.Errorf("config: entrypoint %v labels %v; want /agnhost and the key label", cf.Config.Entrypoint, cf.Config.Labels)
	}
	files := map[string]string{}
	layers, _ := img.Layers()
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
			data, _ := io.ReadAll(tr)
			files[h.Name] = string(data) + h.Linkname
		}
		rc.Close()
	}
	for path, want := range map[string]string{"agnhost": "\x7fELF agnhost", "usr/bin/dash": "dash", "usr/bin/sh": "dash", "bin": "usr/bin", "usr/bin/nc.openbsd": "nc"} {
		if files[path] != want {
			t.Errorf("image file %s = %q, want %q (files: %v)", path, files[path], want, files)
		}
	}
	for _, path := range []string{"dev/null", "usr/share/doc/curl/copyright", completeMarker} {
		if _, ok := files[path]; ok {
			t.Errorf("image has %s, which it leaves out", path)
		}
	}

	// Docker has it now, with the same label: nothing is loaded again.
	if err := os.WriteFile(label, []byte(cf.Config.Labels[agnhostLabel]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := EnsureAgnhostImage(context.Background(), AgnhostOptions{Ref: ref, Binary: bin, Options: opts}); err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(filepath.Join(dockerDir, "calls"))
	if n := strings.Count(string(calls), "loads"); n != 1 || !strings.Contains(progress.String(), "is cached in Docker") {
		t.Errorf("docker load ran %d times, want once; progress:\n%s", n, progress.String())
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "kind", ".agnhost-image-*")); len(left) > 0 {
		t.Errorf("work directories left behind: %v", left)
	}
}
