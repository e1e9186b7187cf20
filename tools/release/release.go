// Package release makes a release of ccm-conformance (`make release`,
// docs/releasing.md): the CLI and the kubetest2 tester for each platform,
// static and stamped with the version; a module list (an SPDX document)
// per binary, read from the binary's own Go build information; one OCI
// image index holding both binaries for every platform, built FROM scratch
// with go-containerregistry as the project's other images are; and a
// SHA256SUMS file over all of it.
//
// Floor: a feature commands call; it stands on internal/images and the
// standard library, never on the framework.
package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/ccm-conformance/ccm-conformance/internal/filehash"
	"github.com/ccm-conformance/ccm-conformance/internal/images"
)

// Binaries are the programs a release ships, by main package.
var Binaries = []images.Target{
	{Name: "ccm-conformance", Package: "./cmd/ccm-conformance", Description: "Conformance tests for Kubernetes cloud-controller-managers"},
	{Name: "kubetest2-tester-ccm", Package: "./cmd/kubetest2-tester-ccm", Description: "The ccm-conformance suites as a kubetest2 tester"},
}

// DefaultPlatforms are the GOOS/GOARCH pairs of a release.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64"}

// StampVariable is the variable -X sets to the release's version.
const StampVariable = "github.com/ccm-conformance/ccm-conformance/internal/harnessversion.Stamped"

// Options configure Make.
type Options struct {
	// RepoDir is the checkout to build. Default ".".
	RepoDir string
	// OutDir receives the release; it must not exist or be empty.
	// Default RepoDir/_output/release.
	OutDir string
	// Version is stamped into the binaries and labels the image. Default
	// git describe of RepoDir (images.Options.WithDefaults).
	Version string
	// Platforms are GOOS/GOARCH pairs. Default DefaultPlatforms.
	Platforms []string
	// Progress receives a line per step. Default io.Discard.
	Progress io.Writer
}

// Result lists what Make wrote, relative to OutDir.
type Result struct {
	Version string
	// Binaries are NAME-GOOS-GOARCH, one per binary and platform.
	Binaries []string
	// SBOMs are NAME-GOOS-GOARCH.spdx.json, one per binary.
	SBOMs []string
	// Image is the OCI image index as an OCI layout tarball.
	Image string
	// DockerImages are each platform's image as a `docker save` tarball,
	// for `docker load` of Docker engines older than 25, which read no
	// OCI layout.
	DockerImages []string
	// Checksums is SHA256SUMS, over every file above.
	Checksums string
}

// Make builds a release into opts.OutDir.
func Make(ctx context.Context, opts Options) (*Result, error) {
	start := time.Now()
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if len(opts.Platforms) == 0 {
		opts.Platforms = DefaultPlatforms
	}
	meta, err := images.Options{RepoDir: opts.RepoDir, Version: opts.Version}.WithDefaults(ctx)
	if err != nil {
		return nil, err
	}
	if opts.OutDir == "" {
		opts.OutDir = filepath.Join(meta.RepoDir, "_output", "release")
	}
	if entries, err := os.ReadDir(opts.OutDir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("release directory %s is not empty: a release is written whole into a fresh directory", opts.OutDir)
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("release directory: %w", err)
	}
	res := &Result{Version: meta.Version}
	fmt.Fprintf(opts.Progress, "release %s of %s into %s (%s)\n", meta.Version, meta.RepoDir, opts.OutDir, strings.Join(opts.Platforms, ", "))

	var index []platformImage
	for _, platform := range opts.Platforms {
		goos, goarch, ok := strings.Cut(platform, "/")
		if !ok || goos != "linux" || goarch == "" {
			return nil, fmt.Errorf("platform %q: want linux/GOARCH, e.g. linux/arm64 (the image is FROM scratch, for Linux)", platform)
		}
		built, err := buildBinaries(ctx, meta.RepoDir, opts.OutDir, meta.Version, goos, goarch, opts.Progress)
		if err != nil {
			return nil, err
		}
		for _, b := range built {
			res.Binaries = append(res.Binaries, filepath.Base(b))
			sbom, err := WriteSBOM(b, meta.Version, meta.Created)
			if err != nil {
				return nil, err
			}
			res.SBOMs = append(res.SBOMs, filepath.Base(sbom))
		}
		img, err := platformImageOf(built, images.Metadata{Version: meta.Version, Revision: meta.Revision, Source: meta.Source, Created: meta.Created, Arch: goarch})
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", platform, err)
		}
		index = append(index, platformImage{platform: v1.Platform{OS: goos, Architecture: goarch}, image: img})
		dockerTar := "ccm-conformance-" + meta.Version + "-image-" + goos + "-" + goarch + ".docker.tar"
		if err := writeDockerTarball(img, filepath.Join(opts.OutDir, dockerTar), meta.Version); err != nil {
			return nil, err
		}
		res.DockerImages = append(res.DockerImages, dockerTar)
	}
	res.Image = "ccm-conformance-" + meta.Version + "-image.oci.tar"
	if err := writeIndex(index, filepath.Join(opts.OutDir, res.Image), meta.Version); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "release: image index %s (%d platforms)\n", res.Image, len(index))
	res.Checksums = "SHA256SUMS"
	files := slices.Concat(res.Binaries, res.SBOMs, []string{res.Image}, res.DockerImages)
	slices.Sort(files)
	if err := writeChecksums(opts.OutDir, files, res.Checksums); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "release: %d files and %s in %s\n", len(files), res.Checksums, time.Since(start).Round(time.Second))
	return res, nil
}

// buildBinaries builds every release binary for one platform in one go
// build and names each NAME-GOOS-GOARCH in outDir.
func buildBinaries(ctx context.Context, repo, outDir, version, goos, goarch string, progress io.Writer) ([]string, error) {
	fmt.Fprintf(progress, "release: go build %s/%s (CGO_ENABLED=0 -trimpath, version %s)\n", goos, goarch, version)
	start := time.Now()
	tmp, err := os.MkdirTemp(outDir, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-trimpath", "-ldflags", "-s -w -X " + StampVariable + "=" + version, "-o", tmp + string(filepath.Separator)}
	for _, b := range Binaries {
		args = append(args, b.Package)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build for %s/%s: %v: %s", goos, goarch, err, lastLines(string(out), 20))
	}
	var built []string
	for _, b := range Binaries {
		dst := filepath.Join(outDir, b.Name+"-"+goos+"-"+goarch)
		if err := os.Rename(filepath.Join(tmp, filepath.Base(b.Package)), dst); err != nil {
			return nil, err
		}
		built = append(built, dst)
	}
	fmt.Fprintf(progress, "release: built %s/%s in %s\n", goos, goarch, time.Since(start).Round(time.Second))
	return built, nil
}

// writeChecksums writes name in dir: "HEX  FILE" per file, as sha256sum
// prints and `sha256sum -c` reads.
func writeChecksums(dir string, files []string, name string) error {
	var b strings.Builder
	for _, f := range files {
		sum, err := filehash.SHA256(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	return os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
