package nodeimage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
)

// Published node images: the kindest/node images kind's project releases
// for each Kubernetes version. Where a registry can be reached, a cluster
// runs one of those instead of waiting for the offline build; the build is
// the fallback.
const (
	// DefaultPublishedRepository is where kind publishes its node images.
	DefaultPublishedRepository = "kindest/node"
	// EnvPublished overrides Options.Published: a repository, or
	// PublishedOff to always use the offline build.
	EnvPublished = "CCM_CONFORMANCE_KIND_PUBLISHED"
	// PublishedOff turns published images off.
	PublishedOff = "off"
	// PullTimeout bounds the pull of a published image (about 400 MB).
	PullTimeout = 10 * time.Minute
)

// Source says where a cluster's node image came from.
type Source string

// The sources Resolve reports.
const (
	// SourcePublishedInDocker: a published image Docker already had.
	SourcePublishedInDocker Source = "published image, already in Docker"
	// SourcePublishedPulled: a published image pulled for this run.
	SourcePublishedPulled Source = "published image, pulled"
	// SourceBuilt: built here by this run.
	SourceBuilt Source = "built here (offline)"
	// SourceBuiltCached: built here by an earlier run.
	SourceBuiltCached Source = "built here (offline) by an earlier run"
	// SourceNamed: named by the user (kind.Options.NodeImage).
	SourceNamed Source = "named by the user"
)

// PublishedRef is the published image of a Kubernetes version in repo:
// kindest/node:v1.37.2.
func PublishedRef(repo, kubernetesVersion string) string {
	return repo + ":" + kubernetesVersion
}

// publishedRepository is opts.Published, else $CCM_CONFORMANCE_KIND_PUBLISHED,
// else DefaultPublishedRepository; "" when published images are off, or
// when the options ask for something no published image holds (an etcd
// other than kubeadm's).
func publishedRepository(opts Options) string {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	repo := opts.Published
	if repo == "" {
		repo = getenv(EnvPublished)
	}
	if repo == "" {
		repo = DefaultPublishedRepository
	}
	if repo == PublishedOff || opts.EtcdVersion != "" {
		return ""
	}
	return repo
}

// Resolve returns the node image a cluster runs: the published image of
// the Kubernetes version (kindest/node:vX.Y.Z) when Docker has it or can
// pull it, else the offline build (Ensure, from its cache when it can).
// Image.Source says which; a failed pull is one progress line, then the
// build.
func Resolve(ctx context.Context, opts Options) (Image, error) {
	return resolve(ctx, opts, Ensure)
}

func resolve(ctx context.Context, opts Options, build func(context.Context, Options) (Image, error)) (Image, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	docker := opts.Docker
	if docker == "" {
		docker = "docker"
	}
	version := opts.KubernetesVersion
	if version == "" {
		version = DefaultKubernetesVersion
	}
	if repo := publishedRepository(opts); repo != "" {
		ref := PublishedRef(repo, version)
		img, err := published(ctx, docker, ref, version, progress)
		if err == nil {
			return img, nil
		}
		fmt.Fprintf(progress, "kind node image: no published %s (%v); using the offline build (%s=%s skips this step)\n", ref, err, EnvPublished, PublishedOff)
	}
	img, err := build(ctx, opts)
	if err != nil {
		return img, err
	}
	img.Source = SourceBuiltCached
	if img.Built {
		img.Source = SourceBuilt
	}
	return img, nil
}

// published returns the image ref of Kubernetes version from Docker,
// pulling it first when Docker does not have it.
func published(ctx context.Context, docker, ref, version string, progress io.Writer) (Image, error) {
	img := Image{Tag: ref, Key: Key{Kubernetes: version}, Published: true}
	if id, err := imageID(ctx, docker, ref); err == nil {
		img.ID, img.Source = id, SourcePublishedInDocker
		fmt.Fprintf(progress, "kind node image %s: the published image, already in Docker (%s)\n", ref, shortID(id))
		return img, nil
	}
	fmt.Fprintf(progress, "kind node image: pulling the published %s\n", ref)
	pullCtx, cancel := context.WithTimeout(ctx, PullTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(pullCtx, docker, "pull", ref)
	cmd.Stdout, cmd.Stderr = progress, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		if msg := firstline.Of(stderr.String()); msg != "" {
			return img, fmt.Errorf("docker pull: %s", msg)
		}
		return img, fmt.Errorf("docker pull: %w", err)
	}
	id, err := imageID(ctx, docker, ref)
	if err != nil {
		return img, fmt.Errorf("pulled but not found: %w", err)
	}
	img.ID, img.Source = id, SourcePublishedPulled
	fmt.Fprintf(progress, "kind node image %s: pulled (%s) in %s\n", ref, shortID(id), time.Since(start).Round(time.Second))
	return img, nil
}
