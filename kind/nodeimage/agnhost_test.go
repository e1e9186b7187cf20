package nodeimage

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// fakeRootfs makes a small Debian root filesystem: the agnhost image's
// packages in dpkg's status with their file lists, nc's alternatives
// link, a merged /bin, and files of no package that stay out.
func fakeRootfs(t *testing.T, root string) {
	t.Helper()
	files := map[string]string{
		"usr/bin/dash":                 "dash",
		"usr/bin/nc.openbsd":           "nc",
		"usr/bin/curl":                 "curl",
		"usr/bin/wget":                 "wget",
		"usr/bin/ip":                   "ip",
		"usr/bin/perl":                 "not wanted",
		"usr/share/doc/perl/copyright": "docs",
		completeMarker:                 "",
	}
	lists := map[string][]string{
		"dash":           {"/usr", "/usr/bin", "/usr/bin/dash", "/bin/sh"},
		"netcat-openbsd": {"/usr/bin/nc.openbsd"},
		"curl":           {"/usr/bin/curl"},
		"wget":           {"/usr/bin/wget"},
		"iproute2":       {"/usr/bin/ip"},
		"perl-base":      {"/usr/bin/perl"},
	}
	var status strings.Builder
	for pkg, l := range lists {
		fmt.Fprintf(&status, "Package: %s\nStatus: install ok installed\n\n", pkg)
		files["var/lib/dpkg/info/"+pkg+".list"] = strings.Join(l, "\n") + "\n"
	}
	files["var/lib/dpkg/status"] = status.String()
	for path, data := range files {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/alternatives"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"bin":                 "usr/bin",
		"usr/bin/sh":          "dash",
		"etc/alternatives/nc": "/bin/nc.openbsd",
		"usr/bin/nc":          "/etc/alternatives/nc",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
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
	for path, want := range map[string]string{"agnhost": "\x7fELF agnhost", "usr/bin/dash": "dash", "usr/bin/sh": "dash", "bin": "usr/bin",
		"usr/bin/nc.openbsd": "nc", "usr/bin/nc": "/etc/alternatives/nc", "etc/alternatives/nc": "/bin/nc.openbsd", "usr/bin/curl": "curl", "usr/bin/ip": "ip"} {
		if files[path] != want {
			t.Errorf("image file %s = %q, want %q (files: %v)", path, files[path], want, files)
		}
	}
	for _, path := range []string{"usr/bin/perl", "usr/share/doc/perl/copyright", completeMarker} {
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
