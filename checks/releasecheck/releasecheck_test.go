package releasecheck

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ccm-conformance/ccm-conformance/internal/images"
)

// The reference image of the tests: the reference CCM built by
// internal/images as `make images` builds it, with a KEP-1771 version, so
// that its version label is also its Kubernetes claim.
const (
	refVersion  = "v1.37.0"
	refRevision = "0123456789abcdef0123456789abcdef01234567"
)

var (
	refOnce sync.Once
	refDir  string
	refTar  string
	refErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if refDir != "" {
		os.RemoveAll(refDir)
	}
	os.Exit(code)
}

// referenceTarball builds the reference CCM image once per test binary
// (go build of ./providers/reference/cmd/reference-ccm; seconds with a warm
// build cache) and returns the path of its `docker save` tarball.
func referenceTarball(t *testing.T) string {
	t.Helper()
	refOnce.Do(func() {
		refDir, refErr = os.MkdirTemp("", "releasecheck-test-")
		if refErr != nil {
			return
		}
		var built []images.Built
		built, refErr = images.Build(context.Background(), images.Options{
			RepoDir:  filepath.Join("..", ".."),
			OutDir:   refDir,
			Version:  refVersion,
			Revision: refRevision,
			Created:  time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
			Targets:  images.ReferenceTargets()[:1],
		})
		if refErr == nil {
			refTar = built[0].Tarball
		}
	})
	if refErr != nil {
		t.Fatalf("building the reference CCM image: %v", refErr)
	}
	return refTar
}

func referenceImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := tarball.ImageFromPath(referenceTarball(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// withConfig returns img with its configuration changed by edit.
func withConfig(t *testing.T, img v1.Image, edit func(*v1.Config)) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := *cf.Config.DeepCopy()
	edit(&cfg)
	out, err := mutate.Config(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withFile returns img with a layer holding one executable file on top.
func withFile(t *testing.T, img v1.Image, path string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := []byte("#!/not/really\n")
	if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(data)
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	out, err := mutate.AppendLayers(img, layer)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeTarball writes img in `docker save` form and returns its path.
func writeTarball(t *testing.T, img v1.Image) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.tar")
	tag, err := name.NewTag("example.com/ccm:test")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(p, tag, img); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeLayout writes an OCI layout holding idx (when not nil) or img and
// returns "oci-layout:DIR".
func writeLayout(t *testing.T, img v1.Image, idx v1.ImageIndex) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if idx != nil {
		err = p.AppendIndex(idx)
	} else {
		err = p.AppendImage(img)
	}
	if err != nil {
		t.Fatal(err)
	}
	return OCILayoutPrefix + dir
}

// tarDir tars dir's files (an OCI layout) into a tarball.
func tarDir(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "layout.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func statuses(rep *Report) string {
	var b strings.Builder
	for _, it := range rep.Items {
		fmt.Fprintf(&b, "  %s %s: %s\n", it.ID, it.Status, it.Evidence)
	}
	return b.String()
}

// TestReleaseCheck runs the check on the reference image, read in each
// form Open takes, and on images made to break one rule each: the failed
// items must be exactly those named, and the checklist must name them.
func TestReleaseCheck(t *testing.T) {
	ref := referenceImage(t)
	arm64 := func() v1.Image {
		cf, err := ref.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.Architecture = "arm64"
		img, err := mutate.ConfigFile(ref, cf)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	index := func(imgs ...v1.Image) v1.ImageIndex {
		var adds []mutate.IndexAddendum
		for _, img := range imgs {
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: cf.Platform()}})
		}
		return mutate.AppendManifests(empty.Index, adds...)
	}

	tests := []struct {
		name string
		// ref returns the reference to check.
		ref  func(t *testing.T) string
		opts Options
		// wantFail are the IDs of the items that must fail, no others.
		wantFail []string
		// want are statuses that other items must have.
		want map[string]Status
	}{
		{
			name: "reference image, docker save tarball",
			ref:  func(t *testing.T) string { return referenceTarball(t) },
			want: map[string]Status{RuleNonRoot: Pass, RuleNoShell: Pass, RuleNoPackages: Pass, RuleEntrypoint: Pass, RuleLabels: Pass, RuleVersion: Pass, RuleFlags: Pass, RuleLibraries: Pass, RuleMultiArch: Warn},
		},
		{
			name: "reference image, OCI layout",
			ref:  func(t *testing.T) string { return writeLayout(t, ref, nil) },
			want: map[string]Status{RuleVersion: Pass, RuleLibraries: Pass, RuleMultiArch: Warn},
		},
		{
			name: "reference image, OCI layout in a tarball",
			ref: func(t *testing.T) string {
				return tarDir(t, strings.TrimPrefix(writeLayout(t, ref, nil), OCILayoutPrefix))
			},
			want: map[string]Status{RuleVersion: Pass, RuleMultiArch: Warn},
		},
		{
			name: "reference image in a multi-arch index",
			ref:  func(t *testing.T) string { return writeLayout(t, nil, index(ref, arm64())) },
			opts: Options{Platform: "linux/" + runtime.GOARCH},
			want: map[string]Status{RuleVersion: Pass, RuleMultiArch: Pass},
		},
		{
			// The index's other image is labelled arm64 (its binary is this
			// machine's): it is checked but not run.
			name: "the arm64 image of an index, on another machine",
			ref: func(t *testing.T) string {
				if runtime.GOARCH != "amd64" {
					t.Skip("needs an amd64 machine")
				}
				return writeLayout(t, nil, index(ref, arm64()))
			},
			opts: Options{Platform: "linux/arm64"},
			want: map[string]Status{RuleNonRoot: Pass, RuleEntrypoint: Pass, RuleVersion: Warn, RuleFlags: Warn, RuleLibraries: Pass, RuleMultiArch: Pass},
		},
		{
			name: "an index without arm64",
			ref:  func(t *testing.T) string { return writeLayout(t, nil, index(ref)) },
			want: map[string]Status{RuleMultiArch: Warn},
		},
		{
			name: "claimed Kubernetes version matches the libraries",
			ref:  func(t *testing.T) string { return referenceTarball(t) },
			opts: Options{KubernetesVersion: "v1.37"},
			want: map[string]Status{RuleLibraries: Pass},
		},
		{
			name: "root user (User unset)",
			ref: func(t *testing.T) string {
				return writeTarball(t, withConfig(t, ref, func(c *v1.Config) { c.User = "" }))
			},
			wantFail: []string{RuleNonRoot},
		},
		{
			name: "root user (0:0)",
			ref: func(t *testing.T) string {
				return writeTarball(t, withConfig(t, ref, func(c *v1.Config) { c.User = "0:0" }))
			},
			wantFail: []string{RuleNonRoot},
		},
		{
			name: "a user by name",
			ref: func(t *testing.T) string {
				return writeTarball(t, withConfig(t, ref, func(c *v1.Config) { c.User = "nonroot" }))
			},
			want:     map[string]Status{RuleNonRoot: Warn},
			wantFail: nil,
		},
		{
			name:     "a shell inside (/bin/sh)",
			ref:      func(t *testing.T) string { return writeTarball(t, withFile(t, ref, "bin/sh")) },
			wantFail: []string{RuleNoShell},
		},
		{
			name:     "a package manager inside",
			ref:      func(t *testing.T) string { return writeTarball(t, withFile(t, ref, "usr/bin/apt-get")) },
			wantFail: []string{RuleNoPackages},
		},
		{
			name: "a shell as entrypoint",
			ref: func(t *testing.T) string {
				return writeTarball(t, withFile(t, withConfig(t, ref, func(c *v1.Config) {
					c.Entrypoint = []string{"/bin/sh", "-c", "exec /usr/local/bin/reference-ccm \"$@\""}
				}), "bin/sh"))
			},
			// Without the CCM as entrypoint nothing can be run.
			wantFail: []string{RuleNoShell, RuleEntrypoint, RuleVersion, RuleFlags},
		},
		{
			name: "an entrypoint that is not in the image",
			ref: func(t *testing.T) string {
				return writeTarball(t, withConfig(t, ref, func(c *v1.Config) { c.Entrypoint = []string{"/usr/bin/ccm"} }))
			},
			wantFail: []string{RuleEntrypoint, RuleVersion, RuleFlags},
		},
		{
			name: "missing labels",
			ref: func(t *testing.T) string {
				return writeTarball(t, withConfig(t, ref, func(c *v1.Config) {
					delete(c.Labels, LabelVersion)
					delete(c.Labels, LabelSource)
					delete(c.Labels, LabelRevision)
				}))
			},
			// Without a version label there is nothing for --version to print.
			wantFail: []string{RuleLabels, RuleVersion},
			want:     map[string]Status{RuleLibraries: Warn},
		},
		{
			name: "wrong version label",
			ref: func(t *testing.T) string {
				return writeTarball(t, withConfig(t, ref, func(c *v1.Config) { c.Labels[LabelVersion] = "v1.37.9" }))
			},
			wantFail: []string{RuleVersion},
			// v1.37.9 claims Kubernetes v1.37.9: libraries of v1.37.2 are an older patch.
			want: map[string]Status{RuleLibraries: Warn},
		},
		{
			name:     "old libraries: claims a newer Kubernetes than it is built with",
			ref:      func(t *testing.T) string { return referenceTarball(t) },
			opts:     Options{KubernetesVersion: "v1.38.0"},
			wantFail: []string{RuleLibraries},
		},
		{
			name: "old libraries: the Kubernetes version label claims more",
			ref: func(t *testing.T) string {
				return writeTarball(t, withConfig(t, ref, func(c *v1.Config) { c.Labels[LabelK8sVersion] = "v1.39" }))
			},
			wantFail: []string{RuleLibraries},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := tt.ref(t)
			rep, err := Check(context.Background(), ref, tt.opts)
			if err != nil {
				t.Fatalf("Check(%s): %v", ref, err)
			}
			if got := rep.FailedIDs(); !slices.Equal(got, tt.wantFail) {
				t.Errorf("failed items %v, want %v:\n%s", got, tt.wantFail, statuses(rep))
			}
			for id, want := range tt.want {
				if it, _ := rep.Item(id); it.Status != want {
					t.Errorf("%s (%s) is %s, want %s: %s", id, ruleNames[id], it.Status, want, it.Evidence)
				}
			}
			if len(rep.Items) != len(ruleNames) {
				t.Errorf("%d items, want one per rule (%d)", len(rep.Items), len(ruleNames))
			}
			var text strings.Builder
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			for _, id := range tt.wantFail {
				if !slices.ContainsFunc(strings.Split(text.String(), "\n"), func(l string) bool {
					return strings.HasPrefix(l, "FAIL") && strings.Contains(l, " "+id+" ")
				}) {
					t.Errorf("the checklist has no FAIL line naming %s:\n%s", id, text.String())
				}
			}
			wantResult := "pass"
			if len(tt.wantFail) > 0 {
				wantResult = "fail"
			}
			if rep.Result != wantResult {
				t.Errorf("result %q, want %q", rep.Result, wantResult)
			}
		})
	}
}

// TestBadInput: a reference that names no readable image is an
// *InputError whose one-line message names the reference.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.tar")
	if data, err := os.ReadFile(referenceTarball(t)); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(corrupt, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	notTar := filepath.Join(dir, "not.tar")
	os.WriteFile(notTar, []byte("hello, not a tarball at all, just some text that is longer than a block? no"), 0o644)
	otherTar := filepath.Join(dir, "other.tar")
	{
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
		tw.Write([]byte("hi"))
		tw.Close()
		os.WriteFile(otherTar, buf.Bytes(), 0o644)
	}
	emptyLayout := filepath.Join(dir, "empty-layout")
	if _, err := layout.Write(emptyLayout, empty.Index); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{
		filepath.Join(dir, "missing.tar"),
		corrupt,
		notTar,
		otherTar,
		OCILayoutPrefix + filepath.Join(dir, "no-such-dir"),
		OCILayoutPrefix + emptyLayout,
		"ccm-conformance/no-such-image:never-built-" + fmt.Sprint(time.Now().UnixNano()),
		"Not A Valid::Name",
	} {
		t.Run(filepath.Base(ref), func(t *testing.T) {
			_, err := Check(context.Background(), ref, Options{})
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("Check(%s) = %v, want an *InputError", ref, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, ref) || strings.Contains(msg, "\n") {
				t.Errorf("message %q is not one line naming %s", msg, ref)
			}
		})
	}
}

func TestKubernetesFor(t *testing.T) {
	for in, want := range map[string]string{
		"v0.37.2":                            "v1.37.2",
		"v0.38.0-alpha.1":                    "v1.38.0-alpha.1",
		"v0.0.0-20260101000000-abcdefabcdef": "",
		"v1.2.3":                             "",
		"(replaced by ../cloud-provider)":    "",
	} {
		got, ok := kubernetesFor(in)
		if got != want || ok != (want != "") {
			t.Errorf("kubernetesFor(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestHasFlag(t *testing.T) {
	help := "      --cloud-provider string   The provider\n      --secure-port int  port (default 10258)\n  -v, --v Level\n      --cloud-provider-gce-lb-src-cidrs cidrs\n"
	for flag, want := range map[string]bool{"--cloud-provider": true, "--secure-port": true, "--v": true, "--cloud-config": false, "--cloud": false} {
		if got := hasFlag(help, flag); got != want {
			t.Errorf("hasFlag(%s) = %v, want %v", flag, got, want)
		}
	}
}
