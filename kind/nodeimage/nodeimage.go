// Package nodeimage builds the kind node image offline, on a machine that
// can reach the Go module proxy and a Debian mirror but no container
// registry: a Debian root filesystem made by debootstrap, kind's own base
// files taken from the sigs.k8s.io/kind module, kubelet, kubeadm and kubectl
// built from k8s.io/kubernetes (internal/k8sbin), and the control-plane
// images (kube-apiserver, kube-controller-manager, kube-scheduler,
// kube-proxy, etcd, pause) made here with go-containerregistry and
// preloaded into the node's containerd. The result is imported into the
// local Docker engine under a tag that names the versions it holds, so that
// a second Ensure finds it and builds nothing (docs/kind.md).
//
// Floor: part of the kind backend. It stands on the leaves only, so that
// `kind node-image` builds no cluster code.
package nodeimage

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"

	"github.com/ccm-conformance/ccm-conformance/internal/filelock"
	"github.com/ccm-conformance/ccm-conformance/kubeversion"
)

// Defaults of Options.
const (
	// DefaultKubernetesVersion is the release the node image holds: the
	// one this module is pinned to, as the local cluster's.
	DefaultKubernetesVersion = kubeversion.Pinned
	// DefaultEtcdVersion is the etcd the control plane runs: the one the
	// local cluster already built and cached. kubeadm is pointed at it
	// (EtcdImageTag), instead of the 3.7.0-0 it would pick.
	DefaultEtcdVersion = k8sbin.DefaultEtcdVersion
	// DefaultCoreDNSVersion is the CoreDNS the cluster's DNS runs: the
	// release kubeadm v1.37.2 deploys (cmd/kubeadm/app/constants.
	// CoreDNSVersion), built unmodified from github.com/coredns/coredns.
	// The kind backend names its tag to kubeadm (dns.imageTag), so another
	// Kubernetes version runs it too.
	DefaultCoreDNSVersion = "v1.14.6"
	// CoreDNSModule is CoreDNS's Go module; its root package is its main.
	CoreDNSModule = "github.com/coredns/coredns"
	// DefaultDebianSuite is the release debootstrap installs.
	DefaultDebianSuite = "bookworm"
	// DefaultDebianMirror is used when the machine's apt sources name no
	// mirror for the suite.
	DefaultDebianMirror = "http://deb.debian.org/debian"
	// DefaultRepository is the name of the node images in Docker:
	// REPOSITORY:KUBERNETES_VERSION-KEY.
	DefaultRepository = "ccm-conformance/kind-node"
	// KindVersion is the sigs.k8s.io/kind release whose base files the
	// image holds; it must be the one in go.mod (a unit test checks).
	KindVersion = "v0.33.0"
	// PauseVersion is the pause image tag kubeadm v1.37 expects
	// (cmd/kubeadm/app/constants.PauseVersion).
	PauseVersion = "3.10.2"
	// ImageRepository is where kubeadm looks for the control-plane
	// images (its default); they are tagged so, never pulled.
	ImageRepository = "registry.k8s.io"
	// DefaultProgressInterval is the least time between two progress lines
	// of one long step.
	DefaultProgressInterval = 15 * time.Second
)

// Environment variables read by Options.
const (
	// EnvDebianMirror overrides the Debian mirror.
	EnvDebianMirror = "CCM_CONFORMANCE_DEBIAN_MIRROR"
)

// recipeVersion changes whenever the way an image or its image tarballs
// are assembled changes, so that images of an older recipe are not taken
// for current ones. rootfsRecipeVersion changes only with the way the root
// filesystem is made, which then is made anew.
//
// Recipe 2: kube-proxy's image has the update-alternatives links
// (/usr/sbin/iptables -> /etc/alternatives/iptables); without them it
// found no iptables on PATH and crash-looped.
//
// Recipe 3: the entrypoint moves the kubelet's node IP to the container's
// new addresses after a restart (nodeIPFixupScript).
const (
	recipeVersion       = "3"
	rootfsRecipeVersion = "1"
)

// Packages are what debootstrap installs besides the minbase variant:
// what kind's base image installs that Debian has (systemd, containerd,
// runc, iptables, ...) and Debian's CNI plugins, since kind's are not
// built here.
func Packages() []string {
	return []string{
		"systemd", "systemd-sysv", "dbus",
		"containerd", "runc", "containernetworking-plugins",
		"iptables", "nftables", "ebtables", "conntrack", "iproute2", "ethtool", "socat",
		"kmod", "mount", "util-linux", "procps", "libseccomp2", "pigz", "ca-certificates",
		// kind's createContainer hook (mount-product-files.sh) reads the
		// container's state with jq.
		"bash", "jq",
	}
}

// Options configure Ensure. Every field has a default.
type Options struct {
	// KubernetesVersion of kubelet, kubeadm, kubectl and the control-plane
	// images. Default DefaultKubernetesVersion.
	KubernetesVersion string
	// EtcdVersion of the etcd image. Default DefaultEtcdVersion.
	EtcdVersion string
	// CoreDNSVersion of the CoreDNS image. Default DefaultCoreDNSVersion.
	CoreDNSVersion string
	// DebianSuite debootstrap installs. Default DefaultDebianSuite.
	DebianSuite string
	// DebianMirror debootstrap downloads from. Default $CCM_CONFORMANCE_DEBIAN_MIRROR,
	// else the first mirror the machine's apt sources name for the suite,
	// else DefaultDebianMirror.
	DebianMirror string
	// Repository names the image in Docker. Default DefaultRepository.
	Repository string
	// CacheDir is the cache root shared with internal/k8sbin (binaries
	// under bin/, the root filesystem and images under kind/). Default
	// $CCM_CONFORMANCE_CACHE, else os.UserCacheDir()/ccm-conformance.
	CacheDir string
	// Docker is the docker CLI. Default "docker".
	Docker string
	// Go is the go command (builds and the module download). Default "go".
	Go string
	// Progress receives a line per step and, during long steps, a line
	// every ProgressInterval. Default io.Discard.
	Progress io.Writer
	// ProgressInterval: default DefaultProgressInterval.
	ProgressInterval time.Duration
	// Published is the repository of published node images Resolve
	// tries first (REPOSITORY:KUBERNETES_VERSION). Default
	// $CCM_CONFORMANCE_KIND_PUBLISHED, else DefaultPublishedRepository;
	// PublishedOff always builds. An EtcdVersion of its own also builds:
	// a published image holds kubeadm's etcd.
	Published string
	// Getenv looks up environment overrides. Default os.Getenv.
	Getenv func(string) string
}

func (o Options) withDefaults() (Options, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = DefaultKubernetesVersion
	}
	if o.EtcdVersion == "" {
		o.EtcdVersion = DefaultEtcdVersion
	}
	if o.CoreDNSVersion == "" {
		o.CoreDNSVersion = DefaultCoreDNSVersion
	}
	if o.DebianSuite == "" {
		o.DebianSuite = DefaultDebianSuite
	}
	if o.DebianMirror == "" {
		o.DebianMirror = o.Getenv(EnvDebianMirror)
	}
	if o.DebianMirror == "" {
		o.DebianMirror = aptMirror(o.DebianSuite, "/etc/apt/sources.list", "/etc/apt/sources.list.d")
	}
	if o.DebianMirror == "" {
		o.DebianMirror = DefaultDebianMirror
	}
	if o.Repository == "" {
		o.Repository = DefaultRepository
	}
	if o.CacheDir == "" {
		root, err := k8sbin.CacheRoot(o.Getenv)
		if err != nil {
			return o, err
		}
		o.CacheDir = root
	}
	if o.Docker == "" {
		o.Docker = "docker"
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if _, err := k8sbin.BinaryPath(o.CacheDir, k8sbin.Kubelet, o.KubernetesVersion); err != nil {
		return o, err
	}
	if _, err := k8sbin.BinaryPath(o.CacheDir, k8sbin.Etcd, o.EtcdVersion); err != nil {
		return o, err
	}
	return o, nil
}

// Key is everything a node image is made of; two images with equal keys
// are the same image.
type Key struct {
	Recipe       string   `json:"recipe"`
	Kind         string   `json:"kind"`
	Kubernetes   string   `json:"kubernetes"`
	Etcd         string   `json:"etcd"`
	CoreDNS      string   `json:"coredns"`
	Pause        string   `json:"pause"`
	DebianSuite  string   `json:"debianSuite"`
	DebianMirror string   `json:"debianMirror"`
	Packages     []string `json:"packages"`
	Arch         string   `json:"arch"`
}

func (o Options) key() Key {
	return Key{
		Recipe:       recipeVersion,
		Kind:         KindVersion,
		Kubernetes:   o.KubernetesVersion,
		Etcd:         o.EtcdVersion,
		CoreDNS:      o.CoreDNSVersion,
		Pause:        PauseVersion,
		DebianSuite:  o.DebianSuite,
		DebianMirror: o.DebianMirror,
		Packages:     Packages(),
		Arch:         runtime.GOARCH,
	}
}

// Hash is a short digest of the key.
func (k Key) Hash() string {
	data, _ := json.Marshal(k)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// rootfsKey is the part of the key the root filesystem depends on.
func (k Key) rootfsHash() string {
	data, _ := json.Marshal(struct {
		Recipe, Kind, Suite, Mirror, Arch string
		Packages                          []string
	}{rootfsRecipeVersion, k.Kind, k.DebianSuite, k.DebianMirror, k.Arch, k.Packages})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// Tag is the image's name in Docker: REPOSITORY:KUBERNETES-HASH.
func Tag(repository string, k Key) string {
	return repository + ":" + k.Kubernetes + "-" + k.Hash()
}

// Image is a node image in the local Docker engine.
type Image struct {
	// Tag names it (Tag).
	Tag string
	// Key is what it holds.
	Key Key
	// ID is Docker's image ID.
	ID string
	// Built says whether this call built it (false: it was cached).
	Built bool
	// EtcdImageTag is the etcd image tag it holds, for kubeadm's
	// etcd.local.imageTag; "" for a published image, which holds
	// kubeadm's own.
	EtcdImageTag string
	// CoreDNSImageTag is the CoreDNS image tag it holds, for kubeadm's
	// dns.imageTag; "" for a published image, which holds kubeadm's own.
	CoreDNSImageTag string
	// Published says it is a published kindest/node image (Resolve), not
	// one built here.
	Published bool
	// Source says where it came from (Resolve).
	Source Source
}

// EtcdImageTag is the tag of the etcd image made from etcd version v
// (v3.6.16 -> 3.6.16-0), the form kubeadm uses.
func EtcdImageTag(v string) string { return strings.TrimPrefix(v, "v") + "-0" }

// Ensure returns the node image for opts, building it first if Docker does
// not have it yet. Every step that is already cached (binaries, the root
// filesystem, the control-plane image tarballs) is reused.
func Ensure(ctx context.Context, opts Options) (Image, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Image{}, err
	}
	key := opts.key()
	img := Image{Tag: Tag(opts.Repository, key), Key: key, EtcdImageTag: EtcdImageTag(opts.EtcdVersion), CoreDNSImageTag: opts.CoreDNSVersion}
	if id, err := imageID(ctx, opts.Docker, img.Tag); err == nil {
		fmt.Fprintf(opts.Progress, "kind node image %s is cached in Docker (%s)\n", img.Tag, shortID(id))
		img.ID = id
		return img, nil
	}
	dir := filepath.Join(opts.CacheDir, "kind")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return img, fmt.Errorf("kind node image: %w", err)
	}
	lockPath := filepath.Join(dir, "node-image.lock")
	unlock, err := filelock.Lock(ctx, lockPath, opts.ProgressInterval, func(waited time.Duration) {
		fmt.Fprintf(opts.Progress, "waiting for another build of the kind node image to finish (lock %s), %s elapsed\n", lockPath, waited.Round(time.Second))
	})
	if err != nil {
		return img, err
	}
	defer unlock()
	if id, err := imageID(ctx, opts.Docker, img.Tag); err == nil {
		img.ID = id
		return img, nil
	}
	start := time.Now()
	fmt.Fprintf(opts.Progress, "building kind node image %s (Kubernetes %s, etcd %s, Debian %s, kind %s base files); a cold build takes 20-40 CPU-minutes, later runs reuse the cache in %s\n",
		img.Tag, key.Kubernetes, key.Etcd, key.DebianSuite, key.Kind, opts.CacheDir)
	b := &builder{opts: opts, key: key, dir: dir}
	if err := b.build(ctx, img); err != nil {
		return img, fmt.Errorf("kind node image %s: %w", img.Tag, err)
	}
	id, err := imageID(ctx, opts.Docker, img.Tag)
	if err != nil {
		return img, fmt.Errorf("kind node image %s: imported but not found: %w", img.Tag, err)
	}
	img.ID, img.Built = id, true
	fmt.Fprintf(opts.Progress, "built kind node image %s (%s) in %s\n", img.Tag, shortID(id), time.Since(start).Round(time.Second))
	return img, nil
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// imageID returns Docker's ID of the image ref, or an error if Docker does
// not have it.
func imageID(ctx context.Context, docker, ref string) (string, error) {
	out, err := exec.CommandContext(ctx, docker, "image", "inspect", "--format", "{{.Id}}", ref).Output()
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if id == "" {
		return "", errors.New("no image ID")
	}
	return id, nil
}

// aptMirror returns the first http(s) mirror that the apt sources in file
// and dir name for suite (one-line "deb URL SUITE ..." and deb822 stanzas
// with URIs: and Suites:), or "".
func aptMirror(suite, file, dir string) string {
	files := []string{file}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".list") || strings.HasSuffix(e.Name(), ".sources") {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if m := mirrorIn(string(data), suite); m != "" {
			return m
		}
	}
	return ""
}

// mirrorIn finds a mirror for suite in the text of one apt sources file.
func mirrorIn(text, suite string) string {
	var uris, suites []string
	isDeb := false
	flush := func() string {
		defer func() { uris, suites, isDeb = nil, nil, false }()
		if !isDeb {
			return ""
		}
		for _, s := range suites {
			if s == suite {
				for _, u := range uris {
					if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
						return strings.TrimRight(u, "/")
					}
				}
			}
		}
		return ""
	}
	sc := bufio.NewScanner(strings.NewReader(text + "\n\n"))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			if m := flush(); m != "" {
				return m
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		switch {
		case fields[0] == "deb":
			// deb [options] URL SUITE COMPONENTS...
			rest := fields[1:]
			if len(rest) > 0 && strings.HasPrefix(rest[0], "[") {
				for len(rest) > 0 && !strings.HasSuffix(rest[0], "]") {
					rest = rest[1:]
				}
				if len(rest) > 0 {
					rest = rest[1:]
				}
			}
			if len(rest) >= 2 && rest[1] == suite && (strings.HasPrefix(rest[0], "http://") || strings.HasPrefix(rest[0], "https://")) {
				return strings.TrimRight(rest[0], "/")
			}
		case strings.EqualFold(fields[0], "Types:"):
			for _, t := range fields[1:] {
				if t == "deb" {
					isDeb = true
				}
			}
		case strings.EqualFold(fields[0], "URIs:"):
			uris = append(uris, fields[1:]...)
		case strings.EqualFold(fields[0], "Suites:"):
			suites = append(suites, fields[1:]...)
		}
	}
	return flush()
}
