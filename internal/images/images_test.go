package images

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ccm-conformance/ccm-conformance/internal/command"
)

// readBack opens an image tarball with go-containerregistry, as another
// tool would, and returns its configuration and the headers and contents
// of its layers' files.
func readBack(t *testing.T, path, tag string) (*v1.ConfigFile, []*tar.Header, map[string][]byte) {
	t.Helper()
	var ref *name.Tag
	if tag != "" {
		ref = mustTag(t, tag)
	}
	img, err := tarball.ImageFromPath(path, ref)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var headers []*tar.Header
	contents := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		headers = append(headers, h)
		contents[strings.TrimSuffix(h.Name, "/")] = data
	}
	return cf, headers, contents
}

func TestImageContents(t *testing.T) {
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	meta := Metadata{Version: "v0.1.0-3-gabcdef0", Revision: strings.Repeat("ab", 20), Source: DefaultSource, Created: created, Arch: "amd64"}
	target := Target{Name: "reference-ccm", Package: "./x", Description: "a CCM"}
	img, err := Image(target, []byte("\x7fELF not really"), meta)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "img.tar")
	if err := tarball.WriteToFile(path, *mustTag(t, "ccm-conformance/reference-ccm:test"), img); err != nil {
		t.Fatal(err)
	}
	cf, headers, contents := readBack(t, path, "")

	t.Run("config", func(t *testing.T) {
		checks := []struct{ what, got, want string }{
			{"user", cf.Config.User, "65532:65532"},
			{"entrypoint", strings.Join(cf.Config.Entrypoint, " "), "/usr/local/bin/reference-ccm"},
			{"cmd", strings.Join(cf.Config.Cmd, " "), ""},
			{"os", cf.OS, "linux"},
			{"architecture", cf.Architecture, "amd64"},
			{"created", cf.Created.UTC().Format(time.RFC3339), "2026-12-01T12:00:00Z"},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
			}
		}
	})
	t.Run("labels", func(t *testing.T) {
		want := map[string]string{
			LabelVersion:     "v0.1.0-3-gabcdef0",
			LabelRevision:    strings.Repeat("ab", 20),
			LabelSource:      DefaultSource,
			LabelTitle:       "reference-ccm",
			LabelDescription: "a CCM",
			LabelCreated:     "2026-12-01T12:00:00Z",
		}
		for k, v := range want {
			if got := cf.Config.Labels[k]; got != v {
				t.Errorf("label %s = %q, want %q", k, got, v)
			}
		}
	})
	t.Run("files", func(t *testing.T) {
		type file struct {
			mode     os.FileMode
			uid, gid int
		}
		want := map[string]file{
			"etc":                         {os.ModeDir | 0o755, 0, 0},
			"etc/passwd":                  {0o644, 0, 0},
			"etc/group":                   {0o644, 0, 0},
			"home":                        {os.ModeDir | 0o755, 0, 0},
			"home/nonroot":                {os.ModeDir | 0o700, UID, GID},
			"tmp":                         {os.ModeDir | os.ModeSticky | 0o777, 0, 0},
			"usr":                         {os.ModeDir | 0o755, 0, 0},
			"usr/local":                   {os.ModeDir | 0o755, 0, 0},
			"usr/local/bin":               {os.ModeDir | 0o755, 0, 0},
			"usr/local/bin/reference-ccm": {0o755, 0, 0},
		}
		seen := map[string]bool{}
		for _, h := range headers {
			name := strings.TrimSuffix(h.Name, "/")
			seen[name] = true
			w, ok := want[name]
			if !ok {
				t.Errorf("unexpected file %s in the layer", h.Name)
				continue
			}
			if got := h.FileInfo().Mode(); got != w.mode {
				t.Errorf("%s: mode %s, want %s", name, got, w.mode)
			}
			if h.Uid != w.uid || h.Gid != w.gid {
				t.Errorf("%s: owner %d:%d, want %d:%d", name, h.Uid, h.Gid, w.uid, w.gid)
			}
			if !h.ModTime.Equal(created) {
				t.Errorf("%s: mtime %s, want %s", name, h.ModTime, created)
			}
		}
		for name := range want {
			if !seen[name] {
				t.Errorf("%s missing from the layer", name)
			}
		}
		if got := string(contents["usr/local/bin/reference-ccm"]); got != "\x7fELF not really" {
			t.Errorf("binary content = %q", got)
		}
	})
	t.Run("user entries", func(t *testing.T) {
		if p := string(contents["etc/passwd"]); !strings.Contains(p, "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n") {
			t.Errorf("/etc/passwd lacks the user:\n%s", p)
		}
		if g := string(contents["etc/group"]); !strings.Contains(g, "nonroot:x:65532:\n") {
			t.Errorf("/etc/group lacks the group:\n%s", g)
		}
	})
	t.Run("no shell", func(t *testing.T) {
		for _, h := range headers {
			base := filepath.Base(strings.TrimSuffix(h.Name, "/"))
			if base == "sh" || base == "bash" || base == "busybox" || h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
				t.Errorf("the layer holds %s (type %c); an image FROM scratch has no shell and no links", h.Name, h.Typeflag)
			}
		}
	})
}

func TestImageIsReproducible(t *testing.T) {
	meta := Metadata{Version: "v1", Source: DefaultSource, Created: time.Unix(1700000000, 0), Arch: "arm64"}
	var ids []string
	for range 2 {
		img, err := Image(Target{Name: "x"}, []byte("binary"), meta)
		if err != nil {
			t.Fatal(err)
		}
		id, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id.String()+" "+d.String())
	}
	if ids[0] != ids[1] {
		t.Errorf("two builds of the same inputs differ: %s and %s", ids[0], ids[1])
	}
	img, _ := Image(Target{Name: "x"}, []byte("binary"), meta)
	cf, _ := img.ConfigFile()
	if _, ok := cf.Config.Labels[LabelRevision]; ok {
		t.Errorf("an unknown revision is labelled %q; want the label left out", cf.Config.Labels[LabelRevision])
	}
}

func TestTagFor(t *testing.T) {
	tests := []struct {
		version, want, err string
	}{
		{version: "v0.3.0", want: "v0.3.0"},
		{version: "1918f8b-dirty", want: "1918f8b-dirty"},
		{version: "v1.0.0+build.5", want: "v1.0.0-build.5"},
		{version: "feature/x", want: "feature-x"},
		{version: strings.Repeat("a", 200), want: strings.Repeat("a", 128)},
		{version: "-x", err: "makes no image tag"},
		{version: "", err: "makes no image tag"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			got, err := TagFor(tt.version)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("TagFor(%q) = %q, %v; want an error containing %q", tt.version, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("TagFor(%q) = %q, %v; want %q", tt.version, got, err, tt.want)
			}
		})
	}
}

// Build compiles a real program into a static binary, wraps it, and writes
// a tarball with both tags; loading is left to the integration tests.
func TestBuildWritesTarballs(t *testing.T) {
	mod := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/hello\n\ngo 1.26\n")
	write("cmd/hello/main.go", "package main\n\nfunc main() { println(\"hello\") }\n")
	var progress strings.Builder
	out := filepath.Join(t.TempDir(), "images")
	built, err := Build(context.Background(), Options{
		RepoDir:  mod,
		OutDir:   out,
		Version:  "v9.9.9",
		Revision: strings.Repeat("0", 40),
		Created:  time.Unix(1700000000, 0),
		Progress: &progress,
		Targets:  []Target{{Name: "greeter", Package: "./cmd/hello"}},
	})
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, progress.String())
	}
	if len(built) != 1 {
		t.Fatalf("built %d images, want 1", len(built))
	}
	b := built[0]
	if want := []string{"ccm-conformance/greeter:v9.9.9", "ccm-conformance/greeter:latest"}; strings.Join(b.Tags, ",") != strings.Join(want, ",") {
		t.Errorf("tags = %v, want %v", b.Tags, want)
	}
	if b.Tarball != filepath.Join(out, "greeter.tar") || !strings.HasPrefix(b.ImageID, "sha256:") {
		t.Errorf("built = %+v", b)
	}
	for _, tag := range b.Tags {
		cf, _, contents := readBack(t, b.Tarball, tag)
		if cf.Config.Labels[LabelVersion] != "v9.9.9" || cf.Config.Entrypoint[0] != "/usr/local/bin/greeter" {
			t.Errorf("%s: config %+v", tag, cf.Config)
		}
		if bin := contents["usr/local/bin/greeter"]; len(bin) < 4 || string(bin[:4]) != "\x7fELF" {
			t.Errorf("%s: the binary is not an ELF executable", tag)
		}
	}
	for _, line := range []string{"images: building greeter", "images: wrote " + b.Tarball, "images: done in"} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress lacks %q:\n%s", line, progress.String())
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("%s holds %d entries, want only the tarball", out, len(entries))
	}
}

func TestBuildFailureQuotesTheCommand(t *testing.T) {
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/broken\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), Options{RepoDir: mod, OutDir: t.TempDir(), Version: "v1", Targets: []Target{{Name: "nope", Package: "./cmd/nope"}}})
	var ce *command.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *command.Error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "go build -trimpath") || !strings.Contains(msg, "./cmd/nope") {
		t.Errorf("error does not quote the command line and its output:\n%s", msg)
	}
}

func mustTag(t *testing.T, s string) *name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return &tag
}

func TestVersionLDFlags(t *testing.T) {
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		version, revision, want string
	}{
		{"v1.37.0", "abc", "-X k8s.io/component-base/version.gitVersion=v1.37.0 -X k8s.io/component-base/version.buildDate=2026-12-01T12:00:00Z -X k8s.io/component-base/version.gitCommit=abc"},
		{"v0.1.0-3-gabcdef0-dirty", "", "-X k8s.io/component-base/version.gitVersion=v0.1.0-3-gabcdef0-dirty -X k8s.io/component-base/version.buildDate=2026-12-01T12:00:00Z"},
		// component-base parses the version at start-up: a bare commit or
		// "devel" is not stamped.
		{"e420145", "abc", ""},
		{"e420145-dirty", "abc", ""},
		{"devel", "", ""},
		{"1.2.3", "", ""},
	} {
		if got := versionLDFlags(Options{Version: tt.version, Revision: tt.revision, Created: created}); got != tt.want {
			t.Errorf("versionLDFlags(%q) = %q, want %q", tt.version, got, tt.want)
		}
	}
}

func TestDescribeVersion(t *testing.T) {
	for _, tt := range []struct{ describe, want string }{
		{"v1.2.3", "v1.2.3"},
		{"v1.2.3-4-gabcdef0", "v1.2.3-4-gabcdef0"},
		{"v1.2.3-4-gabcdef0-dirty", "v1.2.3-4-gabcdef0-dirty"},
		{"e420145", "v0.0.0-e420145"},
		{"e420145-dirty", "v0.0.0-e420145-dirty"},
	} {
		got := DescribeVersion(tt.describe)
		if got != tt.want {
			t.Errorf("DescribeVersion(%q) = %q, want %q", tt.describe, got, tt.want)
		}
		if !semverVersion.MatchString(got) {
			t.Errorf("DescribeVersion(%q) = %q, not a semantic version", tt.describe, got)
		}
	}
}

// The sets of build-images --targets: the default is exactly what `make
// images` built before there were sets, and every target's package is a
// main package of this module.
func TestTargetSet(t *testing.T) {
	names := func(ts []Target) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.Name)
		}
		return strings.Join(s, ",")
	}
	for _, tt := range []struct {
		set, want string
	}{
		{set: SetReference, want: "reference-ccm,reference-cloud,reference-node-manager"},
		{set: SetEchoServer, want: "echo-server"},
		{set: SetAll, want: "reference-ccm,reference-cloud,reference-node-manager,echo-server"},
	} {
		t.Run(tt.set, func(t *testing.T) {
			ts, err := TargetSet(tt.set)
			if err != nil {
				t.Fatalf("TargetSet(%q): %v", tt.set, err)
			}
			if got := names(ts); got != tt.want {
				t.Fatalf("TargetSet(%q) = %s, want %s", tt.set, got, tt.want)
			}
			for _, target := range ts {
				if target.Description == "" {
					t.Errorf("%s has no description", target.Name)
				}
				main, err := os.ReadFile(filepath.Join("..", "..", target.Package, "main.go"))
				if err != nil || !strings.Contains(string(main), "package main") {
					t.Errorf("%s: package %s has no main.go of package main (%v)", target.Name, target.Package, err)
				}
			}
		})
	}
	if got, want := names(ReferenceTargets()), "reference-ccm,reference-cloud,reference-node-manager"; got != want {
		t.Errorf("ReferenceTargets() = %s, want %s (make images builds them)", got, want)
	}
	if _, err := TargetSet("echo"); err == nil || !strings.Contains(err.Error(), "expected one of reference, echo-server, all") {
		t.Errorf("TargetSet(\"echo\"): %v, want an error listing the sets", err)
	}
}
