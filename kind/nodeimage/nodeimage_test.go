package nodeimage

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/mod/modfile"
)

func TestMirrorIn(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"one-line", "deb http://ftp.example.org/debian/ bookworm main\n", "http://ftp.example.org/debian"},
		{"one-line with options", "deb [arch=amd64 signed-by=/k.gpg] https://m.example/debian bookworm main contrib\n", "https://m.example/debian"},
		{"other suite only", "deb http://ftp.example.org/debian trixie main\n", ""},
		{"deb-src is not a mirror", "deb-src http://ftp.example.org/debian bookworm main\n", ""},
		{"deb822", "Types: deb\n# comment\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n", "http://deb.debian.org/debian"},
		{"deb822 security only", "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n", ""},
		{"deb822 without trailing blank line", "Types: deb\nURIs: http://m.example/debian/\nSuites: bookworm", "http://m.example/debian"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mirrorIn(tt.text, "bookworm"); got != tt.want {
				t.Errorf("mirrorIn(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	env := map[string]string{EnvDebianMirror: "http://mirror.example/debian", "CCM_CONFORMANCE_CACHE": t.TempDir()}
	o, err := Options{Getenv: func(k string) string { return env[k] }}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.KubernetesVersion != DefaultKubernetesVersion || o.EtcdVersion != DefaultEtcdVersion || o.DebianSuite != DefaultDebianSuite {
		t.Errorf("versions: got %s %s %s", o.KubernetesVersion, o.EtcdVersion, o.DebianSuite)
	}
	if o.DebianMirror != env[EnvDebianMirror] {
		t.Errorf("DebianMirror = %q, want the environment's %q", o.DebianMirror, env[EnvDebianMirror])
	}
	if o.CacheDir != env["CCM_CONFORMANCE_CACHE"] {
		t.Errorf("CacheDir = %q, want %q", o.CacheDir, env["CCM_CONFORMANCE_CACHE"])
	}
	if _, err := (Options{KubernetesVersion: "1.37", Getenv: func(k string) string { return env[k] }}).withDefaults(); err == nil {
		t.Error("a Kubernetes version without v and patch was accepted")
	}
	if _, err := (Options{EtcdVersion: "3.6.16", Getenv: func(k string) string { return env[k] }}).withDefaults(); err == nil {
		t.Error("an etcd version without v was accepted")
	}
}

func TestTagChangesWithEveryInput(t *testing.T) {
	base := Options{KubernetesVersion: "v1.37.2", EtcdVersion: "v3.6.16", DebianSuite: "bookworm", DebianMirror: "http://m/debian"}.key()
	tag := Tag(DefaultRepository, base)
	if !strings.HasPrefix(tag, "ccm-conformance/kind-node:v1.37.2-") || len(tag) != len("ccm-conformance/kind-node:v1.37.2-")+12 {
		t.Errorf("tag %q: want ccm-conformance/kind-node:v1.37.2-<12 hex digits>", tag)
	}
	if _, err := name.NewTag(tag); err != nil {
		t.Errorf("tag %q is not a valid reference: %v", tag, err)
	}
	if again := Tag(DefaultRepository, base); again != tag {
		t.Errorf("the same inputs gave %q and %q", tag, again)
	}
	changes := map[string]func(k *Key){
		"kubernetes": func(k *Key) { k.Kubernetes = "v1.37.3" },
		"etcd":       func(k *Key) { k.Etcd = "v3.6.17" },
		"kind":       func(k *Key) { k.Kind = "v0.34.0" },
		"recipe":     func(k *Key) { k.Recipe = "recipe-under-test" },
		"mirror":     func(k *Key) { k.DebianMirror = "http://other/debian" },
		"packages":   func(k *Key) { k.Packages = append(append([]string(nil), k.Packages...), "vim") },
	}
	for what, change := range changes {
		k := base
		change(&k)
		if Tag(DefaultRepository, k) == tag {
			t.Errorf("changing %s left the tag %q unchanged", what, tag)
		}
	}
	// The root filesystem does not depend on the Kubernetes or etcd version.
	k := base
	k.Kubernetes, k.Etcd = "v1.38.0", "v3.7.0"
	if k.rootfsHash() != base.rootfsHash() {
		t.Error("the root filesystem's key changed with the Kubernetes version")
	}
	// Nor on the image's recipe: it has one of its own.
	k = base
	k.Recipe = "recipe-under-test"
	if k.rootfsHash() != base.rootfsHash() {
		t.Error("the root filesystem's key changed with the image's recipe")
	}
	k = base
	k.DebianMirror = "http://other/debian"
	if k.rootfsHash() == base.rootfsHash() {
		t.Error("the root filesystem's key did not change with the mirror")
	}
}

func TestControlPlaneImages(t *testing.T) {
	got := map[string]string{}
	for _, ci := range ControlPlaneImages("v1.37.2", "v3.6.16", "v1.14.6") {
		got[ci.Name] = ci.Ref
		if _, err := name.NewTag(ci.Ref); err != nil {
			t.Errorf("%s: %v", ci.Ref, err)
		}
		if ci.Name != "pause" && ci.User != "0:0" {
			t.Errorf("%s runs as %s: kubeadm's static pods need root", ci.Name, ci.User)
		}
	}
	want := map[string]string{
		"kube-apiserver":          "registry.k8s.io/kube-apiserver:v1.37.2",
		"kube-controller-manager": "registry.k8s.io/kube-controller-manager:v1.37.2",
		"kube-scheduler":          "registry.k8s.io/kube-scheduler:v1.37.2",
		"kube-proxy":              "registry.k8s.io/kube-proxy:v1.37.2",
		"etcd":                    "registry.k8s.io/etcd:3.6.16-0",
		"pause":                   "registry.k8s.io/pause:3.10.2",
		// kubeadm's DNS image: its repository's default gains /coredns.
		"coredns": "registry.k8s.io/coredns/coredns:v1.14.6",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("images:\n got %v\nwant %v", got, want)
	}
}

func TestKindVersionMatchesGoMod(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == "sigs.k8s.io/kind" {
			if r.Mod.Version != KindVersion {
				t.Errorf("go.mod requires sigs.k8s.io/kind %s, KindVersion is %s", r.Mod.Version, KindVersion)
			}
			return
		}
	}
	t.Errorf("go.mod does not require sigs.k8s.io/kind")
}

// kindContainerdConfig has the lines of kind's containerd configuration
// that containerdConfig changes.
const kindContainerdConfig = `version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  tolerate_missing_hugepages_controller = true
  restrict_oom_score_adj = false
`

func TestContainerdConfig(t *testing.T) {
	got, err := containerdConfig(kindContainerdConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`  sandbox_image = "registry.k8s.io/pause:3.10.2"`, "restrict_oom_score_adj = true", "tolerate_missing_hugepages_controller = true"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "restrict_oom_score_adj = false") {
		t.Errorf("config still has restrict_oom_score_adj = false:\n%s", got)
	}
	if _, err := containerdConfig("version = 2\n"); err == nil {
		t.Error("a configuration without the lines to change was accepted")
	}
}

func TestCRIBaseSpec(t *testing.T) {
	in := `{"ociVersion":"1.1.0","process":{"args":["sh"],"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}]},"hooks":{"createContainer":[{"path":"/other"}]}}`
	out, err := criBaseSpec([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Process map[string]any
		Hooks   struct{ CreateContainer []struct{ Path string } }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Process["rlimits"]; ok {
		t.Error("rlimits kept")
	}
	if n := len(m.Hooks.CreateContainer); n != 2 || m.Hooks.CreateContainer[1].Path != "/kind/bin/mount-product-files.sh" {
		t.Errorf("createContainer hooks = %+v, want /other then kind's mount-product-files.sh", m.Hooks.CreateContainer)
	}
	if _, err := criBaseSpec([]byte("not json")); err == nil {
		t.Error("bad spec accepted")
	}
}

const dpkgStatus = `Package: iptables
Status: install ok installed
Depends: libip4tc2 (= 1.8.9-2), libc6 (>= 2.34),
 libxtables12 (>= 1.8.8) | libxtables-dummy
Pre-Depends: init-system-helpers

Package: libip4tc2
Status: install ok installed
Depends: libc6 (>= 2.28)

Package: libxtables12
Status: install ok installed
Depends: libc6:any

Package: libc6
Status: install ok installed
Depends: libgcc-s1

Package: libgcc-s1
Status: install ok installed
Provides: libgcc1 (= 1:12)

Package: init-system-helpers
Status: install ok installed
Depends: perl-base | perl-virtual

Package: perlx
Status: install ok installed
Provides: perl-virtual

Package: conntrack
Status: install ok installed
Depends: libgcc1

Package: removed
Status: deinstall ok config-files
`

func TestDependencyClosure(t *testing.T) {
	pkgs, provides, err := parseDpkgStatus(strings.NewReader(dpkgStatus))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pkgs["removed"]; ok {
		t.Error("a package that is not installed was parsed as installed")
	}
	got, err := dependencyClosure(pkgs, provides, []string{"iptables", "conntrack"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"conntrack", "init-system-helpers", "iptables", "libc6", "libgcc-s1", "libip4tc2", "libxtables12", "perlx"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("closure:\n got %v\nwant %v", got, want)
	}
	if _, err := dependencyClosure(pkgs, provides, []string{"removed"}); err == nil {
		t.Error("a root that is not installed was accepted")
	}
}

func TestDebianLayerEntries(t *testing.T) {
	root := t.TempDir()
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("var/lib/dpkg/status", "Package: iptables\nStatus: install ok installed\nDepends: libc6\n\nPackage: conntrack\nStatus: install ok installed\n\nPackage: libc6\nStatus: install ok installed\n")
	write("var/lib/dpkg/info/iptables.list", "/.\n/usr\n/usr/sbin\n/usr/sbin/xtables-nft-multi\n/usr/share/doc/iptables/gone\n")
	write("var/lib/dpkg/info/conntrack.list", "/usr/sbin/conntrack\n")
	write("var/lib/dpkg/info/libc6:"+archName()+".list", "/lib/x86_64-linux-gnu/libc.so.6\n")
	write("usr/sbin/xtables-nft-multi", "x")
	write("usr/sbin/conntrack", "c")
	write("usr/lib/x86_64-linux-gnu/libc.so.6", "libc")
	write("usr/sbin/unrelated", "u")
	if err := os.Symlink("usr/lib", filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "etc/alternatives"), 0o755)
	if err := os.Symlink("/usr/sbin/xtables-nft-multi", filepath.Join(root, "etc/alternatives/iptables")); err != nil {
		t.Fatal(err)
	}
	// update-alternatives' link on PATH, in no package's file list.
	if err := os.Symlink("/etc/alternatives/iptables", filepath.Join(root, "usr/sbin/iptables")); err != nil {
		t.Fatal(err)
	}
	entries, err := debianLayerEntries(root, kubeProxyPackages, kubeProxyAlternatives)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.name)
	}
	want := []string{"etc", "etc/alternatives", "etc/alternatives/iptables", "lib", "usr", "usr/lib", "usr/lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu/libc.so.6", "usr/sbin", "usr/sbin/conntrack", "usr/sbin/iptables", "usr/sbin/xtables-nft-multi"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("entries:\n got %v\nwant %v", names, want)
	}
}

func TestWriteImageReadsBack(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kube-scheduler")
	if err := os.WriteFile(bin, []byte("\x7fELF fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	ci := ControlPlaneImages("v1.37.2", "v3.6.16", "v1.14.6")[2]
	entries, err := binaryEntries(ci.Binary, bin)
	if err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(dir, "layer.tar")
	if err := writeLayer(layer, entries); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	if err := writeImage(out, ci.Ref, []string{layer}, imageConfig(ci, "v1.37.2", "amd64"), "amd64"); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(ci.Ref)
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "0:0" || !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/usr/local/bin/kube-scheduler"}) || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config: user %q entrypoint %v platform %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	if !strings.Contains(strings.Join(cf.Config.Env, " "), "PATH=/usr/local/bin:") {
		t.Errorf("env %v: kubeadm's static pods need the binary on PATH", cf.Config.Env)
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = string(data)
		if !h.ModTime.Equal(imageCreated) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, imageCreated)
		}
	}
	if files["usr/local/bin/kube-scheduler"] != "\x7fELF fake" {
		t.Errorf("layer files: %v", files)
	}
	if _, ok := files["tmp/"]; !ok {
		t.Errorf("layer has no /tmp: %v", files)
	}
}

func TestDockerImportChanges(t *testing.T) {
	got := strings.Join(dockerImportChanges(), "\n")
	for _, want := range []string{"ENV container=docker", `ENTRYPOINT ["` + NodeEntrypoint + `", "/usr/local/bin/entrypoint", "/sbin/init"]`} {
		if !strings.Contains(got, want) {
			t.Errorf("changes lack %q:\n%s", want, got)
		}
	}
}

// TestNodeIPFixup runs the node image's node-IP fix-up with a fake ip
// command: after a restart on new addresses the kubelet's --node-ip takes
// eth0's address of each of its families, and nothing else in the flags
// file changes; an unchanged address, a file without the flag, and no file
// at all are left alone.
func TestNodeIPFixup(t *testing.T) {
	const flags = `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=%s --node-labels=x=172.24.0.3 --pod-infra-container-image=registry.k8s.io/pause:3.10"`
	tests := []struct {
		name           string
		flags          string // "" for no file
		eth0v4, eth0v6 string
		want           string
	}{
		{"IPv4 moved", fmt.Sprintf(flags, "172.24.0.3"), "172.24.0.5", "fc00:7c5c::5", fmt.Sprintf(flags, "172.24.0.5")},
		{"dual-stack, both moved", fmt.Sprintf(flags, "172.24.0.3,fc00:7c5c::3"), "172.24.0.2", "fc00:7c5c::2", fmt.Sprintf(flags, "172.24.0.2,fc00:7c5c::2")},
		{"a longer address that starts alike", fmt.Sprintf(flags, "172.24.0.3"), "172.24.0.30", "", fmt.Sprintf(flags, "172.24.0.30")},
		{"unchanged", fmt.Sprintf(flags, "172.24.0.3"), "172.24.0.3", "fc00:7c5c::3", fmt.Sprintf(flags, "172.24.0.3")},
		{"no IPv4 address on eth0: kept", fmt.Sprintf(flags, "172.24.0.3"), "", "fc00:7c5c::3", fmt.Sprintf(flags, "172.24.0.3")},
		{"no --node-ip", `KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.10"`, "172.24.0.9", "", `KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.10"`},
		{"no flags file", "", "172.24.0.9", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, bin := t.TempDir(), t.TempDir()
			script := filepath.Join(bin, "fixup")
			if err := os.WriteFile(script, []byte(nodeIPFixupScript), 0o755); err != nil {
				t.Fatal(err)
			}
			// ip -4|-6 -o addr show dev eth0 scope global, as iproute2 prints it.
			fakeIP := fmt.Sprintf(`#!/bin/sh
case "$1" in
-4) [ -n "%[1]s" ] && echo "5: eth0    inet %[1]s/16 brd 172.24.255.255 scope global eth0\       valid_lft forever preferred_lft forever" ;;
-6) [ -n "%[2]s" ] && echo "5: eth0    inet6 %[2]s/64 scope global nodad \       valid_lft forever preferred_lft forever" ;;
esac
exit 0
`, tt.eth0v4, tt.eth0v6)
			if err := os.WriteFile(filepath.Join(bin, "ip"), []byte(fakeIP), 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(root, "var/lib/kubelet/kubeadm-flags.env")
			if tt.flags != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.flags+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("/bin/sh", script)
			cmd.Env = append(os.Environ(), "CCMC_NODE_ROOT="+root, "PATH="+bin+":"+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("fix-up: %v: %s", err, out)
			}
			got, err := os.ReadFile(path)
			if tt.flags == "" {
				if !os.IsNotExist(err) {
					t.Errorf("a flags file appeared: %q, %v", got, err)
				}
				return
			}
			if strings.TrimSpace(string(got)) != tt.want {
				t.Errorf("flags:\n got %s\nwant %s", strings.TrimSpace(string(got)), tt.want)
			}
		})
	}
	if !strings.Contains(nodeEntrypointScript, NodeIPFixup) {
		t.Errorf("the entrypoint does not run %s", NodeIPFixup)
	}
}
