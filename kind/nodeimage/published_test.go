package nodeimage

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDocker writes a docker CLI that has the images listed in have, can
// pull those in pullable (after which it has them), and logs each call.
func fakeDocker(t *testing.T, have, pullable []string) (docker, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	store := filepath.Join(dir, "images")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	file := func(ref string) string {
		return filepath.Join(store, strings.NewReplacer("/", "_", ":", "_").Replace(ref))
	}
	for _, ref := range have {
		if err := os.WriteFile(file(ref), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pulls := ""
	for _, ref := range pullable {
		pulls += "  " + ref + ") : > " + file(ref) + "; echo pulled; exit 0;;\n"
	}
	script := `#!/bin/sh
echo "$*" >> ` + log + `
case "$1" in
image)
  f=` + store + `/$(echo "$5" | tr '/:' '__')
  [ -e "$f" ] || { echo "Error: No such image: $5" >&2; exit 1; }
  echo sha256:0123456789abcdef0123; exit 0;;
pull)
  case "$2" in
` + pulls + `  esac
  echo 'Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: no such host' >&2; exit 1;;
esac
exit 2
`
	docker = filepath.Join(dir, "docker")
	if err := os.WriteFile(docker, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return docker, log
}

func TestResolveChoosesPublishedThenBuild(t *testing.T) {
	const ref = "kindest/node:" + DefaultKubernetesVersion
	built := Image{Tag: "ccm-conformance/kind-node:built", EtcdImageTag: "3.6.16-0", Built: true}
	for _, tt := range []struct {
		name           string
		opts           Options
		env            map[string]string
		have, pullable []string
		buildErr       error
		wantTag        string
		wantSource     Source
		wantBuild      bool
		wantDocker     []string // the docker calls, in order
		wantProgress   string
		wantErr        string
	}{
		{
			name: "published image already in Docker", have: []string{ref},
			wantTag: ref, wantSource: SourcePublishedInDocker,
			wantDocker: []string{"image inspect --format {{.Id}} " + ref},
		},
		{
			name: "pulled", pullable: []string{ref},
			wantTag: ref, wantSource: SourcePublishedPulled,
			wantDocker: []string{"image inspect --format {{.Id}} " + ref, "pull " + ref, "image inspect --format {{.Id}} " + ref},
		},
		{
			name:    "no registry: the offline build",
			wantTag: built.Tag, wantSource: SourceBuilt, wantBuild: true,
			wantDocker:   []string{"image inspect --format {{.Id}} " + ref, "pull " + ref},
			wantProgress: "no published " + ref + " (docker pull: Error response from daemon",
		},
		{
			name: "off by the environment", env: map[string]string{EnvPublished: PublishedOff}, have: []string{ref},
			wantTag: built.Tag, wantSource: SourceBuilt, wantBuild: true,
		},
		{
			name: "off by the options", opts: Options{Published: PublishedOff}, have: []string{ref},
			wantTag: built.Tag, wantSource: SourceBuilt, wantBuild: true,
		},
		{
			name: "an etcd of its own is never published", opts: Options{EtcdVersion: "v3.6.15"}, have: []string{ref},
			wantTag: built.Tag, wantSource: SourceBuilt, wantBuild: true,
		},
		{
			name: "another repository and version", opts: Options{Published: "mirror.example/kind/node", KubernetesVersion: "v1.36.1"},
			have: []string{"mirror.example/kind/node:v1.36.1"}, wantTag: "mirror.example/kind/node:v1.36.1", wantSource: SourcePublishedInDocker,
			wantDocker: []string{"image inspect --format {{.Id}} mirror.example/kind/node:v1.36.1"},
		},
		{
			name: "the build fails too", buildErr: errors.New("debootstrap: no mirror"),
			wantBuild: true, wantErr: "debootstrap: no mirror",
			wantDocker: []string{"image inspect --format {{.Id}} " + ref, "pull " + ref},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			docker, log := fakeDocker(t, tt.have, tt.pullable)
			var progress bytes.Buffer
			opts := tt.opts
			opts.Docker, opts.Progress = docker, &progress
			opts.Getenv = func(k string) string { return tt.env[k] }
			buildCalled := false
			img, err := resolve(context.Background(), opts, func(context.Context, Options) (Image, error) {
				buildCalled = true
				return built, tt.buildErr
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if buildCalled != tt.wantBuild {
				t.Errorf("build called: %v, want %v", buildCalled, tt.wantBuild)
			}
			if tt.wantErr == "" {
				if img.Tag != tt.wantTag || img.Source != tt.wantSource {
					t.Errorf("image %s (%s), want %s (%s)", img.Tag, img.Source, tt.wantTag, tt.wantSource)
				}
				if img.Published != !tt.wantBuild {
					t.Errorf("Published %v", img.Published)
				}
				if img.Published && (img.EtcdImageTag != "" || img.ID == "") {
					t.Errorf("published image %+v: want kubeadm's etcd and Docker's ID", img)
				}
			}
			calls, _ := os.ReadFile(log)
			if got := strings.Split(strings.TrimSpace(string(calls)), "\n"); strings.Join(got, "|") != strings.Join(tt.wantDocker, "|") {
				t.Errorf("docker calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.wantDocker, "\n"))
			}
			if !strings.Contains(progress.String(), tt.wantProgress) {
				t.Errorf("progress:\n%s\nwant %q", progress.String(), tt.wantProgress)
			}
		})
	}
}

func TestResolveSaysWhenTheBuildWasCached(t *testing.T) {
	docker, _ := fakeDocker(t, nil, nil)
	img, err := resolve(context.Background(), Options{Docker: docker, Published: PublishedOff}, func(context.Context, Options) (Image, error) {
		return Image{Tag: "cached"}, nil
	})
	if err != nil || img.Source != SourceBuiltCached {
		t.Fatalf("%+v %v, want source %q", img, err, SourceBuiltCached)
	}
}

// Against the real Docker engine: an image under a published repository's
// name is chosen without a build, and a repository no registry serves
// falls back to the build after one failed pull.
func TestIntegrationResolvePublished(t *testing.T) {
	if testing.Short() {
		t.Skip("uses the Docker engine")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("docker: %v", err)
	}
	const repo = "ccm-conformance-test/published-node"
	ref := PublishedRef(repo, DefaultKubernetesVersion)
	// An empty image stands for a published one: only its name matters
	// to the choice.
	imp := exec.Command("docker", "import", "-", ref)
	imp.Stdin = bytes.NewReader(make([]byte, 1024)) // an empty tar archive
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "image", "rm", "-f", ref).Run() })

	noBuild := func(context.Context, Options) (Image, error) {
		t.Error("built although the published image is in Docker")
		return Image{}, errors.New("no build")
	}
	img, err := resolve(context.Background(), Options{Published: repo}, noBuild)
	if err != nil || img.Tag != ref || img.Source != SourcePublishedInDocker || !strings.HasPrefix(img.ID, "sha256:") {
		t.Fatalf("resolve: %+v, %v", img, err)
	}

	var progress bytes.Buffer
	built := false
	img, err = resolve(context.Background(), Options{Published: "ccm-conformance-test.invalid/kindest-node", Progress: &progress}, func(context.Context, Options) (Image, error) {
		built = true
		return Image{Tag: "built", Built: true}, nil
	})
	if err != nil || !built || img.Source != SourceBuilt {
		t.Fatalf("resolve without a registry: %+v, %v, built %v", img, err, built)
	}
	if !strings.Contains(progress.String(), "no published ccm-conformance-test.invalid/kindest-node:"+DefaultKubernetesVersion+" (docker pull: ") {
		t.Errorf("progress does not say why it built:\n%s", progress.String())
	}
}
