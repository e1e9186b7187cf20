package nodeimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/ccmbuild"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
)

// NodeEntrypoint is the image's entrypoint, run before kind's own
// (/usr/local/bin/entrypoint) and /sbin/init.
const NodeEntrypoint = "/usr/local/bin/ccm-conformance-node-entrypoint"

// nodeEntrypointScript makes a node that runs without --privileged (the
// kind backend's fallback, docs/kind.md) look to systemd and kind's
// entrypoint as a privileged one does: /sys and the cgroup mounts
// writable, /dev/kmsg present. In a privileged container each step finds
// nothing to do.
const nodeEntrypointScript = `#!/bin/sh
# ccm-conformance: the mounts a node run without --privileged lacks
# (docs/kind.md); a privileged node has them and is left as it is.
set -u
for m in $(awk '$2 == "/sys" || $2 ~ "^/sys/fs/cgroup" { if ($4 ~ /(^|,)ro(,|$)/) print $2 }' /proc/self/mounts); do
	mount -o remount,bind,rw "$m" || echo "ccm-conformance-node-entrypoint: could not make $m writable" >&2
done
[ -e /dev/kmsg ] || mknod /dev/kmsg c 1 11 || echo "ccm-conformance-node-entrypoint: could not create /dev/kmsg" >&2
` + NodeIPFixup + ` || echo "ccm-conformance-node-entrypoint: could not move the kubelet's node IP" >&2
exec "$@"
`

// NodeIPFixup is the script the entrypoint runs to move the kubelet's node
// IP to the container's addresses after a restart.
const NodeIPFixup = "/usr/local/bin/ccm-conformance-node-ip-fixup"

// nodeIPFixupScript moves the kubelet's --node-ip to the addresses the
// container has now. Docker may give a restarted node container other
// addresses than it had (a cloud driver's instance stop and start do
// that); kind's entrypoint means to follow, but it reads the addresses
// with hostname --ip-address, which on a dual-stack Docker network (kind's
// default) prints an IPv6 and an IPv4 address, and replaces that pair, so
// nothing matches and the kubelet keeps announcing an address the node no
// longer has. This script replaces each address of the flag with eth0's
// address of the same family; kind's step then finds nothing to do.
// $CCMC_NODE_ROOT prefixes the file's path (tests).
const nodeIPFixupScript = `#!/bin/sh
# ccm-conformance: after a restart on new addresses, the kubelet's node IP
# follows them, one IP family at a time (kind's own step cannot on a
# dual-stack Docker network).
set -u
flags="${CCMC_NODE_ROOT:-}/var/lib/kubelet/kubeadm-flags.env"
[ -f "$flags" ] || exit 0
old=$(sed -n 's/.*--node-ip=\([0-9a-fA-F.:,]*\).*/\1/p' "$flags")
[ -n "$old" ] || exit 0
cur4=$(ip -4 -o addr show dev eth0 scope global | awk '{split($4, a, "/"); print a[1]; exit}')
cur6=$(ip -6 -o addr show dev eth0 scope global | awk '{split($4, a, "/"); print a[1]; exit}')
new=
for ip in $(echo "$old" | tr ',' ' '); do
	case "$ip" in
	*:*) next=${cur6:-$ip} ;;
	*) next=${cur4:-$ip} ;;
	esac
	new="${new:+$new,}$next"
done
[ "$new" = "$old" ] && exit 0
echo "ccm-conformance-node-ip-fixup: the kubelet's node IP $old is now $new" >&2
sed -i "s#--node-ip=$old\([^0-9a-fA-F.:,]\|\$\)#--node-ip=$new\1#" "$flags"
`

// dockerImportChanges are the image configuration docker import sets.
// KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER keeps containerd on overlayfs
// where kind's entrypoint would pick fuse-overlayfs (a node root on FUSE,
// as on Docker's fuse-overlayfs storage driver), which Debian does not
// ship; overlayfs works there since /var is a Docker volume.
func dockerImportChanges() []string {
	return []string{
		"ENV container=docker",
		"ENV KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER=overlayfs",
		`ENTRYPOINT ["` + NodeEntrypoint + `", "/usr/local/bin/entrypoint", "/sbin/init"]`,
	}
}

// containerdConfig adapts kind's containerd configuration: the pause image
// kubeadm expects, and restrict_oom_score_adj, since a node's containerd
// may not lower oom_score_adj without every capability.
func containerdConfig(kindConfig string) (string, error) {
	out := kindConfig
	for old, repl := range map[string]string{
		"restrict_oom_score_adj = false": "restrict_oom_score_adj = true",
	} {
		if !strings.Contains(out, old) {
			return "", fmt.Errorf("kind's containerd config.toml has no %q", old)
		}
		out = strings.ReplaceAll(out, old, repl)
	}
	lines := strings.Split(out, "\n")
	found := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "sandbox_image = ") {
			indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			lines[i] = indent + `sandbox_image = "` + ImageRepository + "/pause:" + PauseVersion + `"`
			found = true
		}
	}
	if !found {
		return "", fmt.Errorf("kind's containerd config.toml has no sandbox_image")
	}
	return strings.Join(lines, "\n"), nil
}

// preloadScript imports every tarball in /tmp/preload into the node's
// containerd, run in a chroot of the root filesystem (with private mount
// and PID namespaces) with the CRI plugin off, as kind's own node-image
// build does with --no-unpack: the node unpacks what it runs.
const preloadScript = `set -eu
mount -t proc proc /proc
mount -t tmpfs tmpfs /run
printf 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n' > /tmp/preload.toml
containerd --config /tmp/preload.toml --address /run/preload.sock --log-level warn > /tmp/preload-containerd.log 2>&1 &
pid=$!
i=0
while [ ! -S /run/preload.sock ]; do
	i=$((i + 1))
	if [ $i -gt 300 ]; then cat /tmp/preload-containerd.log; exit 1; fi
	sleep 0.1
done
for f in /tmp/preload/*.tar; do
	echo "importing $f"
	ctr --address /run/preload.sock -n k8s.io images import --label=io.cri-containerd.pinned=pinned --no-unpack --digests "$f"
done
ctr --address /run/preload.sock -n k8s.io images ls -q
kill $pid
wait $pid || true
`

// build makes the node image img: binaries, root filesystem, images,
// then the assembly in a copy of the root filesystem, imported into Docker.
func (b *builder) build(ctx context.Context, img Image) error {
	// The root filesystem (debootstrap: mostly downloads and disk) is made
	// while the binaries (go build: CPU) are built, which saves its four
	// minutes on a cold machine. Either failing stops the other.
	b.opts.Progress = &syncWriter{w: b.opts.Progress}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		rootfs    string
		rootfsErr error
		made      = make(chan struct{})
	)
	go func() {
		defer close(made)
		if rootfs, rootfsErr = b.rootfs(ctx); rootfsErr != nil {
			cancel()
		}
	}()
	bins, err := b.binaries(ctx)
	if err != nil {
		cancel()
	}
	<-made
	if rootfsErr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		return rootfsErr
	}
	if err != nil {
		return err
	}
	tarballs, err := b.images(ctx, rootfs, bins)
	if err != nil {
		return err
	}
	return b.assemble(ctx, img, rootfs, bins, tarballs)
}

// assemble copies the root filesystem, adds the node's binaries, kind's
// version file, the entrypoint and the containerd configuration, preloads
// the image tarballs and imports the result into Docker as img.Tag.
func (b *builder) assemble(ctx context.Context, img Image, rootfs string, bins map[string]string, tarballs []string) error {
	start := time.Now()
	work := filepath.Join(b.dir, ".work-"+b.key.Hash())
	if err := removeTree(work); err != nil {
		return err
	}
	defer removeTree(work)
	b.progressf("assembling: copying the root filesystem to %s", work)
	if err := (buildCommand{args: []string{"cp", "-a", rootfs, work}}).run(ctx); err != nil {
		return err
	}
	os.Remove(filepath.Join(work, completeMarker))
	for _, n := range []string{k8sbin.Kubelet, k8sbin.Kubeadm, k8sbin.Kubectl} {
		if err := copyFile(bins[n], filepath.Join(work, "usr/bin", n), 0o755); err != nil {
			return fmt.Errorf("installing %s: %w", n, err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "kind/version"), []byte(b.key.Kubernetes), 0o644); err != nil {
		return err
	}
	for path, script := range map[string]string{NodeEntrypoint: nodeEntrypointScript, NodeIPFixup: nodeIPFixupScript} {
		if err := os.WriteFile(filepath.Join(work, strings.TrimPrefix(path, "/")), []byte(script), 0o755); err != nil {
			return err
		}
	}
	cfgPath := filepath.Join(work, "etc/containerd/config.toml")
	kindCfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	cfg, err := containerdConfig(string(kindCfg))
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	preload := filepath.Join(work, "tmp/preload")
	if err := os.MkdirAll(preload, 0o755); err != nil {
		return err
	}
	for _, t := range tarballs {
		if err := linkOrCopy(t, filepath.Join(preload, filepath.Base(t))); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(work, "tmp/preload.sh"), []byte(preloadScript), 0o755); err != nil {
		return err
	}
	b.progressf("assembling: preloading %d images into the node's containerd", len(tarballs))
	err = buildCommand{args: []string{"unshare", "--mount", "--pid", "--fork", "chroot", work, "/bin/sh", "/tmp/preload.sh"},
		step: "assembling: preload", progress: b.opts.Progress, interval: b.opts.ProgressInterval}.run(ctx)
	if err != nil {
		return fmt.Errorf("preloading the images: %w", err)
	}
	for _, p := range []string{"tmp/preload", "tmp/preload.sh", "tmp/preload.toml", "tmp/preload-containerd.log"} {
		os.RemoveAll(filepath.Join(work, p))
	}
	b.progressf("assembling: docker import as %s (about a minute)", img.Tag)
	pipeline := "set -o pipefail; tar --numeric-owner --xattrs --xattrs-include='*' -C " + shellQuote(work) + " -cf - . | " + shellQuote(b.opts.Docker) + " import"
	for _, c := range dockerImportChanges() {
		pipeline += " -c " + shellQuote(c)
	}
	pipeline += " --message " + shellQuote("ccm-conformance kind node-image "+b.key.Hash()) + " - " + shellQuote(img.Tag)
	err = buildCommand{args: []string{"bash", "-c", pipeline}, step: "assembling: docker import", progress: b.opts.Progress, interval: b.opts.ProgressInterval}.run(ctx)
	if err != nil {
		return fmt.Errorf("importing the node image: %w", err)
	}
	b.progressf("assembling: done in %s", time.Since(start).Round(time.Second))
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// binaries returns the node's and the images' executables, built into the
// binary cache by internal/k8sbin: the Kubernetes ones by one go command,
// then etcd. The cache shares kube-apiserver, kube-controller-manager and
// etcd with the local cluster, and a build of one binary by another
// process (the local cluster's prebuild) is waited for, never repeated.
func (b *builder) binaries(ctx context.Context) (map[string]string, error) {
	req := k8sbin.Request{Version: b.key.Kubernetes, CacheDir: b.opts.CacheDir, Progress: b.opts.Progress,
		ProgressInterval: b.opts.ProgressInterval, Getenv: b.opts.Getenv, Go: b.opts.Go}
	// One go command for the Kubernetes binaries: it compiles what they
	// share once and links them side by side.
	bins, err := k8sbin.EnsureAll(ctx, req, k8sbin.KubeAPIServer, k8sbin.KubeControllerManager, k8sbin.KubeScheduler,
		k8sbin.KubeProxy, k8sbin.Kubelet, k8sbin.Kubeadm, k8sbin.Kubectl)
	if err != nil {
		return nil, err
	}
	req.Version = b.key.Etcd
	etcd, err := k8sbin.EnsureAll(ctx, req, k8sbin.Etcd)
	if err != nil {
		return nil, err
	}
	maps.Copy(bins, etcd)
	// CoreDNS, from its own module and unmodified, as a provider's CCM is
	// built (internal/ccmbuild: the same cache, locks and progress).
	dns, err := ccmbuild.Ensure(ctx, ccmbuild.Request{Module: CoreDNSModule, Version: b.key.CoreDNS, Package: CoreDNSModule,
		CacheDir: b.opts.CacheDir, Progress: b.opts.Progress, ProgressInterval: b.opts.ProgressInterval, Getenv: b.opts.Getenv, Go: b.opts.Go,
		ColdBuild: "about 4 minutes on two cores"})
	if err != nil {
		return nil, fmt.Errorf("building CoreDNS %s: %w", b.key.CoreDNS, err)
	}
	bins["coredns"] = dns.Path
	b.progressf("binaries: ready (%s)", strings.Join(slices.Sorted(maps.Keys(bins)), ", "))
	return bins, nil
}

// images returns the control-plane image tarballs, writing the missing
// ones into the cache.
func (b *builder) images(ctx context.Context, rootfs string, bins map[string]string) ([]string, error) {
	dir := filepath.Join(b.dir, "images-"+b.key.Hash())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	var debianLayer string
	for _, ci := range ControlPlaneImages(b.key.Kubernetes, b.key.Etcd, b.key.CoreDNS) {
		dst := filepath.Join(dir, ci.Name+".tar")
		out = append(out, dst)
		if _, err := os.Stat(dst); err == nil {
			b.progressf("images: %s cached", ci.Ref)
			continue
		}
		start := time.Now()
		src := bins[ci.Name]
		if ci.Name == "pause" {
			p, err := buildPause(ctx, b.opts.Go, dir)
			if err != nil {
				return nil, err
			}
			src = p
		}
		var layers []string
		if ci.Debian {
			if debianLayer == "" {
				debianLayer = filepath.Join(dir, "debian-iptables.layer.tar")
				entries, err := debianLayerEntries(rootfs, kubeProxyPackages, kubeProxyAlternatives)
				if err != nil {
					return nil, fmt.Errorf("images: the iptables layer: %w", err)
				}
				if err := writeLayer(debianLayer, entries); err != nil {
					return nil, fmt.Errorf("images: the iptables layer: %w", err)
				}
				defer os.Remove(debianLayer)
			}
			layers = append(layers, debianLayer)
		}
		entries, err := binaryEntries(ci.Binary, src)
		if err != nil {
			return nil, err
		}
		layer := filepath.Join(dir, ci.Name+".layer.tar")
		if err := writeLayer(layer, entries); err != nil {
			return nil, err
		}
		layers = append(layers, layer)
		err = writeImage(dst, ci.Ref, layers, imageConfig(ci, b.key.Kubernetes, b.key.Arch), b.key.Arch)
		os.Remove(layer)
		if err != nil {
			return nil, fmt.Errorf("images: %s: %w", ci.Ref, err)
		}
		b.progressf("images: wrote %s in %s", ci.Ref, time.Since(start).Round(100*time.Millisecond))
	}
	return out, nil
}

// pauseSource is the pause program: it holds a pod's namespaces, reaps
// zombies, and exits on SIGINT or SIGTERM.
const pauseSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
`

// buildPause builds the pause program (static) into dir.
func buildPause(ctx context.Context, goCmd, dir string) (string, error) {
	src, err := os.MkdirTemp(dir, ".pause-src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module ccm-conformance.local/pause\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(pauseSource), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "pause.bin")
	err = buildCommand{args: []string{goCmd, "build", "-trimpath", "-ldflags=-s -w", "-o", out, "."}, dir: src,
		env: []string{"CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod"}}.run(ctx)
	if err != nil {
		return "", fmt.Errorf("building pause: %w", err)
	}
	return out, nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst, 0o644)
}

// syncWriter lets the steps that run side by side share one progress
// writer, a line at a time.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
