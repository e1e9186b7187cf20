package nodeimage

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// completeMarker is the file a finished root filesystem holds.
const completeMarker = ".ccm-conformance-complete"

// builder builds one node image.
type builder struct {
	opts Options
	key  Key
	dir  string // <cache>/kind
}

func (b *builder) progressf(format string, args ...any) {
	fmt.Fprintf(b.opts.Progress, format+"\n", args...)
}

// rootfs returns the cached Debian root filesystem with kind's base files,
// making it first if needed. It is the same for every Kubernetes version.
func (b *builder) rootfs(ctx context.Context) (string, error) {
	final := filepath.Join(b.dir, "rootfs-"+b.key.rootfsHash())
	if _, err := os.Stat(filepath.Join(final, completeMarker)); err == nil {
		b.progressf("root filesystem: cached in %s", final)
		return final, nil
	}
	if err := ensureDebootstrap(ctx, b); err != nil {
		return "", err
	}
	tmp := final + ".tmp"
	if err := removeTree(tmp); err != nil {
		return "", err
	}
	start := time.Now()
	b.progressf("root filesystem: debootstrap --variant=minbase %s from %s with %d packages into %s (about 4 minutes)",
		b.key.DebianSuite, b.key.DebianMirror, len(b.key.Packages), tmp)
	err := buildCommand{
		args:     []string{"debootstrap", "--variant=minbase", "--components=main", "--include=" + strings.Join(b.key.Packages, ","), b.key.DebianSuite, tmp, b.key.DebianMirror},
		step:     "root filesystem: debootstrap",
		progress: b.opts.Progress,
		interval: b.opts.ProgressInterval,
	}.run(ctx)
	if err != nil {
		return "", fmt.Errorf("root filesystem: %w", err)
	}
	b.progressf("root filesystem: debootstrap done in %s", time.Since(start).Round(time.Second))
	kindDir, err := kindModuleDir(ctx, b.opts.Go, b.key.Kind)
	if err != nil {
		return "", err
	}
	if err := installBaseFiles(filepath.Join(kindDir, "images", "base", "files"), tmp); err != nil {
		return "", fmt.Errorf("root filesystem: kind's base files: %w", err)
	}
	if err := configureSystemd(tmp); err != nil {
		return "", fmt.Errorf("root filesystem: %w", err)
	}
	if err := writeCRIBaseSpec(ctx, tmp); err != nil {
		return "", fmt.Errorf("root filesystem: %w", err)
	}
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*"} {
		matches, _ := filepath.Glob(filepath.Join(tmp, glob))
		for _, m := range matches {
			os.RemoveAll(m)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, completeMarker), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	b.progressf("root filesystem: ready in %s (%s)", final, time.Since(start).Round(time.Second))
	return final, nil
}

// ensureDebootstrap installs debootstrap with apt-get when it is missing.
func ensureDebootstrap(ctx context.Context, b *builder) error {
	if _, err := exec.LookPath("debootstrap"); err == nil {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("debootstrap is not installed and this is not root: install it (apt-get install debootstrap) and run again as root")
	}
	b.progressf("root filesystem: debootstrap is not installed; installing it with apt-get update && apt-get install -y debootstrap")
	for _, args := range [][]string{{"apt-get", "update"}, {"apt-get", "install", "-y", "--no-install-recommends", "debootstrap"}} {
		err := buildCommand{args: args, env: []string{"DEBIAN_FRONTEND=noninteractive"}, step: "root filesystem: " + args[0] + " " + args[1],
			progress: b.opts.Progress, interval: b.opts.ProgressInterval}.run(ctx)
		if err != nil {
			return fmt.Errorf("installing debootstrap: %w", err)
		}
	}
	return nil
}

// removeTree removes a directory a failed debootstrap may have left,
// unmounting what it mounted inside first.
func removeTree(dir string) error {
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return nil
	}
	if data, err := os.ReadFile("/proc/self/mounts"); err == nil {
		lines := strings.Split(string(data), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			f := strings.Fields(lines[i])
			if len(f) > 1 && (f[1] == dir || strings.HasPrefix(f[1], dir+"/")) {
				_ = exec.Command("umount", "-l", f[1]).Run()
			}
		}
	}
	return os.RemoveAll(dir)
}

// kindModuleDir returns the directory of the sigs.k8s.io/kind module at
// version in the module cache, downloading it first if needed.
func kindModuleDir(ctx context.Context, goCmd, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "ccm-conformance-kind-module-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module ccm-conformance.local/kind-module\n"), 0o644); err != nil {
		return "", err
	}
	out, err := buildCommand{args: []string{goCmd, "mod", "download", "-json", "sigs.k8s.io/kind@" + version}, dir: tmp,
		env: []string{"GOFLAGS=-mod=mod", "GOWORK=off"}}.output(ctx)
	if err != nil {
		return "", fmt.Errorf("downloading sigs.k8s.io/kind@%s: %w", version, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("downloading sigs.k8s.io/kind@%s: %s %v", version, info.Error, err)
	}
	return info.Dir, nil
}

// baseFileMode is the mode kind's base image gives a file of its
// images/base/files tree: executables under usr/local/bin and kind/bin.
func baseFileMode(rel string) fs.FileMode {
	if strings.HasPrefix(rel, "usr/local/bin/") || strings.HasPrefix(rel, "kind/bin/") {
		return 0o755
	}
	return 0o644
}

// installBaseFiles copies kind's base files (src, the module's
// images/base/files) into the root filesystem.
func installBaseFiles(src, root string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		os.Remove(dst)
		return os.WriteFile(dst, data, baseFileMode(rel))
	})
}

// configureSystemd trims and enables systemd units the way kind's base
// image does, without running systemctl: no units of the distribution
// started by default, kubelet, containerd and kind's mount cleanup enabled,
// binfmt masked, the journal not reading the host's kmsg.
func configureSystemd(root string) error {
	var remove []string
	for _, glob := range []string{
		"lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
		"lib/systemd/system/multi-user.target.wants/*",
		"etc/systemd/system/*.wants/*",
		"lib/systemd/system/local-fs.target.wants/*",
		"lib/systemd/system/sockets.target.wants/*udev*",
		"lib/systemd/system/sockets.target.wants/*initctl*",
		"lib/systemd/system/basic.target.wants/*",
	} {
		m, _ := filepath.Glob(filepath.Join(root, glob))
		remove = append(remove, m...)
	}
	for _, p := range remove {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	journald := filepath.Join(root, "etc/systemd/journald.conf")
	f, err := os.OpenFile(journald, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("ReadKMsg=no\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		return err
	}
	links := map[string]string{
		"etc/systemd/system/systemd-binfmt.service": "/dev/null",
		"usr/local/bin/containerd":                  "/usr/bin/containerd",
		"opt/cni/bin":                               "/usr/lib/cni",
	}
	for _, unit := range []string{"kubelet.service", "containerd.service", "undo-mount-hacks.service"} {
		links["etc/systemd/system/multi-user.target.wants/"+unit] = "/etc/systemd/system/" + unit
	}
	if _, err := os.Lstat(filepath.Join(root, "sbin/init")); err != nil {
		links["usr/sbin/init"] = "/lib/systemd/systemd"
	}
	for name, target := range links {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		os.RemoveAll(p)
		if err := os.Symlink(target, p); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(root, "etc/kubernetes/manifests"), 0o755)
}

// writeCRIBaseSpec writes /etc/containerd/cri-base.json, the base OCI spec
// kind's containerd configuration names: containerd's default spec with
// kind's createContainer hook and without rlimits, as kind's base image
// makes it.
func writeCRIBaseSpec(ctx context.Context, root string) error {
	out, err := buildCommand{args: []string{"chroot", root, "ctr", "oci", "spec"}}.output(ctx)
	if err != nil {
		return fmt.Errorf("containerd's default OCI spec: %w", err)
	}
	spec, err := criBaseSpec([]byte(out))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "etc/containerd/cri-base.json"), spec, 0o644)
}

// criBaseSpec turns `ctr oci spec` output into kind's cri-base.json.
func criBaseSpec(spec []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(spec, &m); err != nil {
		return nil, fmt.Errorf("parsing ctr oci spec: %w", err)
	}
	hooks, _ := m["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	create, _ := hooks["createContainer"].([]any)
	hooks["createContainer"] = append(create, map[string]any{"path": "/kind/bin/mount-product-files.sh"})
	m["hooks"] = hooks
	if p, ok := m["process"].(map[string]any); ok {
		delete(p, "rlimits")
	}
	return json.MarshalIndent(m, "", "  ")
}
