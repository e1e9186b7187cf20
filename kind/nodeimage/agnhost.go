package nodeimage

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/ccm-conformance/ccm-conformance/internal/filehash"
)

// AgnhostPackages are what upstream's e2e specs run inside agnhost besides
// agnhost itself: /bin/sh (Debian's minbase has it) and nc, through
// `kubectl exec` in their exec pods; curl, wget and ip for the ones that
// need them (the source ranges spec probes with `wget -T 5 -qO-`, and a
// missing wget would count as "not reachable" where it expects no
// answer). Upstream's image has the same tools from Alpine and busybox.
func AgnhostPackages() []string { return []string{"netcat-openbsd", "curl", "wget", "iproute2"} }

// agnhostRoots are the packages whose files, with their dependencies', the
// agnhost image holds: dash for /bin/sh and AgnhostPackages.
// agnhostAlternatives name the links the tools are known by (nc).
var (
	agnhostRoots        = append([]string{"dash"}, AgnhostPackages()...)
	agnhostAlternatives = []string{"nc"}
)

// agnhostRecipe changes when the image is made differently.
const agnhostRecipe = "3"

// agnhostWgetrc replaces Debian's /etc/wgetrc (all comments) in the
// agnhost image: GNU wget tries a timed-out connection 20 times, where
// the busybox wget of upstream's Alpine image gives up after one, so a
// probe that upstream's specs expect to go unanswered (`wget -T 5`, a
// dropped source range) would take minutes instead of 5 seconds.
const agnhostWgetrc = "# ccm-conformance: one try, as busybox's wget in upstream's agnhost image\ntries = 1\n"

// agnhostLabel is the image label that records what an agnhost image was
// made of, so that a cached one is reused only when nothing changed.
const agnhostLabel = "io.ccm-conformance.agnhost-key"

// AgnhostOptions configure EnsureAgnhostImage.
type AgnhostOptions struct {
	// Ref is the tag the e2e specs name (their --list-images): the image
	// is loaded into Docker under it. Required.
	Ref string
	// Binary is agnhost built for linux (k8sbin.Agnhost). Required.
	Binary string
	// Options give the cache root, the Debian suite and mirror, docker,
	// and where progress goes; the Kubernetes fields are not used.
	Options Options
}

// EnsureAgnhostImage makes upstream's agnhost e2e test image, which cannot
// be pulled here, and loads it into Docker as o.Ref: a Debian minbase root
// filesystem with AgnhostPackages (debootstrap, cached under
// <cache>/kind/agnhost-rootfs-<hash>) and the binary as /agnhost, its
// entrypoint. If Docker already has o.Ref made of the same root filesystem
// and binary, nothing is done.
func EnsureAgnhostImage(ctx context.Context, o AgnhostOptions) error {
	opts, err := o.Options.withDefaults()
	if err != nil {
		return err
	}
	if o.Ref == "" || o.Binary == "" {
		return fmt.Errorf("agnhost image: the tag and the binary are required")
	}
	b := &builder{opts: opts, dir: filepath.Join(opts.CacheDir, "kind")}
	rootfsKey := agnhostRootfsHash(opts.DebianSuite, opts.DebianMirror)
	binSum, err := filehash.SHA256(o.Binary)
	if err != nil {
		return fmt.Errorf("agnhost image: %w", err)
	}
	key := agnhostRecipe + "-" + rootfsKey + "-" + binSum[:12]
	have, _ := buildCommand{args: []string{opts.Docker, "image", "inspect", "--format", "{{index .Config.Labels \"" + agnhostLabel + "\"}}", o.Ref}}.output(ctx)
	if strings.TrimSpace(have) == key {
		b.progressf("agnhost image %s is cached in Docker", o.Ref)
		return nil
	}
	start := time.Now()
	root, err := b.agnhostRootfs(ctx, rootfsKey)
	if err != nil {
		return fmt.Errorf("agnhost image: %w", err)
	}
	work, err := os.MkdirTemp(b.dir, ".agnhost-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	base := filepath.Join(work, "debian.tar")
	entries, err := debianLayerEntries(root, agnhostRoots, agnhostAlternatives)
	if err != nil {
		return fmt.Errorf("agnhost image: reading %s: %w", root, err)
	}
	if err := writeLayer(base, entries); err != nil {
		return fmt.Errorf("agnhost image: %w", err)
	}
	bin := filepath.Join(work, "agnhost.tar")
	binEntries, err := binaryEntries("/agnhost", o.Binary)
	if err != nil {
		return fmt.Errorf("agnhost image: %w", err)
	}
	if err := writeLayer(bin, binEntries); err != nil {
		return fmt.Errorf("agnhost image: %w", err)
	}
	wgetrc := filepath.Join(work, "wgetrc")
	if err := os.WriteFile(wgetrc, []byte(agnhostWgetrc), 0o644); err != nil {
		return err
	}
	conf := filepath.Join(work, "wgetrc.tar")
	if err := writeLayer(conf, []layerFile{{name: "etc/wgetrc", hdr: &tar.Header{Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(agnhostWgetrc))}, src: wgetrc}}); err != nil {
		return fmt.Errorf("agnhost image: %w", err)
	}
	cfg := v1.Config{
		Entrypoint: []string{"/agnhost"},
		Env:        []string{"PATH=" + imagePath},
		Labels:     map[string]string{agnhostLabel: key},
	}
	tarball := filepath.Join(work, "agnhost-image.tar")
	if err := writeImage(tarball, o.Ref, []string{base, bin, conf}, cfg, runtime.GOARCH); err != nil {
		return fmt.Errorf("agnhost image: %w", err)
	}
	if err := (buildCommand{args: []string{opts.Docker, "load", "-i", tarball}, step: "agnhost image: docker load"}).run(ctx); err != nil {
		return fmt.Errorf("agnhost image: %w", err)
	}
	b.progressf("agnhost image %s: made from %s and %s, loaded into Docker in %s", o.Ref, root, o.Binary, time.Since(start).Round(time.Second))
	return nil
}

// agnhostRootfsHash keys the agnhost root filesystem.
func agnhostRootfsHash(suite, mirror string) string {
	data, _ := json.Marshal(struct {
		Suite, Mirror, Arch string
		Packages            []string
	}{suite, mirror, runtime.GOARCH, AgnhostPackages()})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// agnhostRootfs returns the cached Debian root filesystem of the agnhost
// image, making it first with debootstrap if needed.
func (b *builder) agnhostRootfs(ctx context.Context, key string) (string, error) {
	final := filepath.Join(b.dir, "agnhost-rootfs-"+key)
	if _, err := os.Stat(filepath.Join(final, completeMarker)); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return "", err
	}
	if err := ensureDebootstrap(ctx, b); err != nil {
		return "", err
	}
	tmp := final + ".tmp"
	if err := removeTree(tmp); err != nil {
		return "", err
	}
	start := time.Now()
	b.progressf("agnhost root filesystem: debootstrap --variant=minbase %s from %s with %s into %s (a minute or two)",
		b.opts.DebianSuite, b.opts.DebianMirror, strings.Join(AgnhostPackages(), ", "), tmp)
	err := buildCommand{
		args:     []string{"debootstrap", "--variant=minbase", "--components=main", "--include=" + strings.Join(AgnhostPackages(), ","), b.opts.DebianSuite, tmp, b.opts.DebianMirror},
		step:     "agnhost root filesystem: debootstrap",
		progress: b.opts.Progress,
		interval: b.opts.ProgressInterval,
	}.run(ctx)
	if err != nil {
		removeTree(tmp)
		return "", fmt.Errorf("root filesystem: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, completeMarker), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	b.progressf("agnhost root filesystem: ready in %s (%s)", final, time.Since(start).Round(time.Second))
	return final, nil
}
