package images

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

func TestBinaryInfoFrom(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tt := range []struct {
		name string
		bi   buildinfo.BuildInfo
		want BinaryInfo
	}{
		{
			name: "a release built from the module proxy records no commit",
			bi: buildinfo.BuildInfo{
				Path:     "k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager",
				Main:     debug.Module{Path: "k8s.io/cloud-provider-vsphere", Version: "v1.36.0", Sum: "h1:BzLS2rZW8qh/Yabh9SvWwGpyUiiyraYjrDSHO76sDfY="},
				Settings: settings("-trimpath", "true", "CGO_ENABLED", "0", "GOARCH", "amd64", "GOOS", "linux"),
			},
			want: BinaryInfo{
				Package: "k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager",
				Module:  "k8s.io/cloud-provider-vsphere", Version: "v1.36.0",
				Source: "https://github.com/kubernetes/cloud-provider-vsphere", GOOS: "linux", GOARCH: "amd64",
			},
		},
		{
			name: "a pseudo-version names its commit",
			bi: buildinfo.BuildInfo{
				Path:     "github.com/example/ccm/v2/cmd/ccm",
				Main:     debug.Module{Path: "github.com/example/ccm/v2", Version: "v2.0.1-0.20251029150609-93918c59a719"},
				Settings: settings("GOARCH", "arm64", "GOOS", "linux"),
			},
			want: BinaryInfo{
				Package: "github.com/example/ccm/v2/cmd/ccm", Module: "github.com/example/ccm/v2",
				Version: "v2.0.1-0.20251029150609-93918c59a719", Revision: "93918c59a719",
				Source: "https://github.com/example/ccm", GOOS: "linux", GOARCH: "arm64",
			},
		},
		{
			name: "a build in its own checkout: vcs.revision, no version",
			bi: buildinfo.BuildInfo{
				Path:     "github.com/ccm-conformance/ccm-conformance/providers/reference/cmd/reference-ccm",
				Main:     debug.Module{Path: "github.com/ccm-conformance/ccm-conformance/providers", Version: "(devel)"},
				Settings: settings("GOARCH", "amd64", "GOOS", "linux", "vcs", "git", "vcs.revision", strings.Repeat("ab", 20), "vcs.modified", "false"),
			},
			want: BinaryInfo{
				Package: "github.com/ccm-conformance/ccm-conformance/providers/reference/cmd/reference-ccm",
				Module:  "github.com/ccm-conformance/ccm-conformance/providers", Revision: strings.Repeat("ab", 20),
				Source: "https://github.com/ccm-conformance/ccm-conformance", GOOS: "linux", GOARCH: "amd64",
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := BinaryInfoFrom(&tt.bi); got != tt.want {
				t.Errorf("BinaryInfoFrom =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

func TestSourceURL(t *testing.T) {
	for _, tt := range []struct{ module, want string }{
		{"k8s.io/cloud-provider-vsphere", "https://github.com/kubernetes/cloud-provider-vsphere"},
		{"k8s.io/cloud-provider-aws/v2", "https://github.com/kubernetes/cloud-provider-aws"},
		{"sigs.k8s.io/cloud-provider-azure", "https://github.com/kubernetes-sigs/cloud-provider-azure"},
		{"sigs.k8s.io/cloud-provider-azure/pkg/azclient", "https://github.com/kubernetes-sigs/cloud-provider-azure"},
		{"github.com/digitalocean/digitalocean-cloud-controller-manager", "https://github.com/digitalocean/digitalocean-cloud-controller-manager"},
		{"github.com/hetznercloud/hcloud-cloud-controller-manager/v2", "https://github.com/hetznercloud/hcloud-cloud-controller-manager"},
		{"bitbucket.org/o/r/sub", "https://bitbucket.org/o/r"},
		{"example.com/ccm/v3", "https://example.com/ccm"},
		{"example.com/ccm", "https://example.com/ccm"},
	} {
		if got := SourceURL(tt.module); got != tt.want {
			t.Errorf("SourceURL(%q) = %q, want %q", tt.module, got, tt.want)
		}
	}
}

func TestDefaultRef(t *testing.T) {
	for _, tt := range []struct{ name, version, want, err string }{
		{"vsphere-cloud-controller-manager", "v1.36.0", "ccm-conformance/vsphere-cloud-controller-manager:v1.36.0", ""},
		{"ccm", "v2.0.1-0.20251029150609-93918c59a719", "ccm-conformance/ccm:v2.0.1-0.20251029150609-93918c59a719", ""},
		{"ccm", "v1.0.0+incompatible", "ccm-conformance/ccm:v1.0.0-incompatible", ""},
		{"ccm", "", "", "makes no image tag"},
	} {
		got, err := DefaultRef(tt.name, tt.version)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("DefaultRef(%q, %q) = %q, %v; want an error containing %q", tt.name, tt.version, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("DefaultRef(%q, %q) = %q, %v; want %q", tt.name, tt.version, got, err, tt.want)
		}
	}
}

// staticBinary compiles a small program the way internal/ccmbuild builds
// a CCM (CGO_ENABLED=0, -trimpath) into dir/name. Built in its own module,
// its build info names no version: "(devel)".
func staticBinary(t *testing.T, dir, name string) string {
	t.Helper()
	mod := t.TempDir()
	for file, text := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=-buildvcs=false")
	if text, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, text)
	}
	return out
}

// BuildBinary makes the image Image makes of this module's targets, with
// the labels from the binary's build info and what the caller gives.
func TestBuildBinary(t *testing.T) {
	binary := staticBinary(t, t.TempDir(), "hello-ccm")
	created := time.Date(2026, 4, 23, 8, 56, 48, 0, time.UTC)
	revision := strings.Repeat("0123456789", 4)
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name       string
		opts       BinaryOptions
		wantRef    string
		wantLabels map[string]string
		wantErr    string
	}{
		{
			name:    "the version and revision given, the default reference",
			opts:    BinaryOptions{Version: "v1.36.0", Revision: revision, Created: created},
			wantRef: "ccm-conformance/hello-ccm:v1.36.0",
			wantLabels: map[string]string{
				LabelVersion:     "v1.36.0",
				LabelRevision:    revision,
				LabelSource:      "https://example.com/hello",
				LabelTitle:       "hello-ccm",
				LabelDescription: "example.com/hello, built from the Go module example.com/hello v1.36.0",
				LabelCreated:     "2026-04-23T08:56:48Z",
			},
		},
		{
			name:    "a reference without a tag, no revision, the epoch",
			opts:    BinaryOptions{Version: "v0.1.0", Ref: "example.com/ccm", Source: "https://example.com/src"},
			wantRef: "example.com/ccm:latest",
			wantLabels: map[string]string{
				LabelVersion: "v0.1.0",
				LabelSource:  "https://example.com/src",
				LabelCreated: "1970-01-01T00:00:00Z",
			},
		},
		{
			name:    "no version: a binary built in its own checkout",
			opts:    BinaryOptions{},
			wantErr: "names no version of its module example.com/hello ((devel): built in its own checkout",
		},
		{
			name:    "a reference that does not parse",
			opts:    BinaryOptions{Version: "v1.36.0", Ref: "Bad:Ref"},
			wantErr: `image reference "Bad:Ref"`,
		},
		{
			name:    "not an executable of Go",
			opts:    BinaryOptions{Binary: notELF, Version: "v1.36.0"},
			wantErr: "reading " + notELF,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts.Binary == "" {
				opts.Binary = binary
			}
			opts.OutDir = t.TempDir()
			var progress strings.Builder
			opts.Progress = &progress
			got, err := BuildBinary(context.Background(), opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("BuildBinary: %v, want an error containing %q", err, tt.wantErr)
				}
				if entries, _ := os.ReadDir(opts.OutDir); len(entries) != 0 {
					t.Errorf("a failed build left %d files in %s", len(entries), opts.OutDir)
				}
				return
			}
			if err != nil {
				t.Fatalf("BuildBinary: %v", err)
			}
			if got.Ref != tt.wantRef || strings.Join(got.Tags, ",") != tt.wantRef {
				t.Errorf("ref %q, tags %v; want %q", got.Ref, got.Tags, tt.wantRef)
			}
			if got.Tarball != filepath.Join(opts.OutDir, "hello-ccm.tar") || !strings.HasPrefix(got.ImageID, "sha256:") {
				t.Errorf("built %+v", got.Built)
			}
			if !strings.Contains(progress.String(), "images: wrote "+got.Tarball+" ("+tt.wantRef) {
				t.Errorf("progress does not say what it wrote:\n%s", progress.String())
			}
			cf, headers, contents := readBack(t, got.Tarball, tt.wantRef)
			if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/hello-ccm" ||
				len(cf.Config.Cmd) != 0 || cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
				t.Errorf("config: user %q, entrypoint %q, cmd %q, platform %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd, cf.OS, cf.Architecture)
			}
			for k, v := range tt.wantLabels {
				if cf.Config.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], v)
				}
			}
			if _, ok := tt.wantLabels[LabelRevision]; !ok {
				if r, ok := cf.Config.Labels[LabelRevision]; ok {
					t.Errorf("label %s = %q, want it left out: no revision is known", LabelRevision, r)
				}
			}
			if fmt.Sprint(got.Labels) != fmt.Sprint(cf.Config.Labels) {
				t.Errorf("BuildBinary says the labels are %v, the image has %v", got.Labels, cf.Config.Labels)
			}
			// The layout of the reference images, with this binary.
			var names, want []string
			for _, h := range headers {
				names = append(names, strings.TrimSuffix(h.Name, "/"))
			}
			for _, e := range layerEntries("hello-ccm", nil) {
				want = append(want, e.name)
			}
			if strings.Join(names, " ") != strings.Join(want, " ") {
				t.Errorf("layer holds %v, want %v", names, want)
			}
			data, _ := os.ReadFile(binary)
			if string(contents["usr/local/bin/hello-ccm"]) != string(data) {
				t.Errorf("the binary in the image differs from %s", binary)
			}
		})
	}
}

// One binary gives one image: the same image ID every time.
func TestBuildBinaryIsReproducible(t *testing.T) {
	binary := staticBinary(t, t.TempDir(), "ccm")
	var ids []string
	for range 2 {
		b, err := BuildBinary(context.Background(), BinaryOptions{Binary: binary, Version: "v1.0.0", OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ImageID)
	}
	if ids[0] != ids[1] {
		t.Errorf("two images of one binary: %s and %s", ids[0], ids[1])
	}
}

// A dynamically linked executable is refused: an image FROM scratch has
// no loader.
func TestBuildBinaryRefusesDynamicExecutables(t *testing.T) {
	dynamic := ""
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if err := checkStatic(p); err != nil && strings.Contains(err.Error(), "dynamically linked") {
			dynamic = p
			break
		}
	}
	if dynamic == "" {
		t.Skip("no dynamically linked executable found on this machine")
	}
	_, err := BuildBinary(context.Background(), BinaryOptions{Binary: dynamic, Version: "v1.0.0", OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), dynamic+" is dynamically linked") {
		t.Fatalf("BuildBinary(%s): %v, want it refused as dynamically linked", dynamic, err)
	}
}

// ModuleTime reads a version's time from the module cache (GOPROXY=off:
// nothing is downloaded); golang.org/x/mod is a dependency of this module,
// so the go command has it.
func TestModuleTime(t *testing.T) {
	t.Setenv("GOPROXY", "off")
	version := moduleVersionOf(t, "golang.org/x/mod")
	got, err := ModuleTime(context.Background(), "", "golang.org/x/mod", version)
	if err != nil {
		t.Fatalf("ModuleTime: %v", err)
	}
	if got.Before(time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("ModuleTime(golang.org/x/mod %s) = %s", version, got)
	}
	_, err = ModuleTime(context.Background(), "", "golang.org/x/mod", "v0.0.99")
	if err == nil || !strings.Contains(err.Error(), "list -m -json golang.org/x/mod@v0.0.99") {
		t.Errorf("ModuleTime of a version that is not there: %v, want an error quoting the command", err)
	}
}

// moduleVersionOf is the version of a dependency this module requires.
func moduleVersionOf(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == path {
			return r.Mod.Version
		}
	}
	t.Fatalf("go.mod does not require %s", path)
	return ""
}

// TestIntegrationBuildBinaryLoads loads the image of a binary into the
// local Docker engine under a tag of its own, reads it back with docker
// image inspect, and removes it.
func TestIntegrationBuildBinaryLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
	docker := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), dockerLoadTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := docker("version"); err != nil {
		t.Skipf("the Docker engine does not answer: %v", err)
	}
	binary := staticBinary(t, t.TempDir(), "hello-ccm")
	ref := fmt.Sprintf("ccm-conformance/images-binary-test:t%d", time.Now().UnixNano())
	var progress strings.Builder
	b, err := BuildBinary(context.Background(), BinaryOptions{
		Binary: binary, Ref: ref, Version: "v1.36.0", Revision: strings.Repeat("ab", 20),
		OutDir: t.TempDir(), Load: true, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("BuildBinary: %v\n%s", err, progress.String())
	}
	t.Cleanup(func() {
		if _, err := docker("rmi", ref); err != nil {
			t.Errorf("removing %s: %v", ref, err)
		}
	})
	if !strings.Contains(progress.String(), "images: docker load: Loaded image: "+ref) {
		t.Errorf("progress does not say docker loaded %s:\n%s", ref, progress.String())
	}
	got, err := docker("image", "inspect", ref, "--format",
		`{{.Id}} {{.Config.User}} {{json .Config.Entrypoint}} {{index .Config.Labels "org.opencontainers.image.version"}} {{index .Config.Labels "org.opencontainers.image.source"}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := b.ImageID + ` 65532:65532 ["/usr/local/bin/hello-ccm"] v1.36.0 https://example.com/hello`
	if got != want {
		t.Errorf("docker image inspect %s:\n  %s\nwant\n  %s", ref, got, want)
	}
}
