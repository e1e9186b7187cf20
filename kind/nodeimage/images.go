package nodeimage

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imagePath is the PATH of the control-plane images: kubeadm's static
// pods name their command without a directory (command: [etcd, ...]).
const imagePath = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"

// imageCreated stamps the files and configuration of every image made
// here, so that the same binaries give the same image.
var imageCreated = time.Unix(0, 0).UTC()

// ControlPlaneImage is one image the node's containerd holds.
type ControlPlaneImage struct {
	// Name is the file name of its tarball and the image's short name.
	Name string
	// Ref is the tag kubeadm looks for.
	Ref string
	// Binary is the executable's path in the image.
	Binary string
	// User it runs as ("0:0": kubeadm's static pods read root-only keys
	// and write root-owned data directories).
	User string
	// Debian says it also gets the iptables layer (kube-proxy).
	Debian bool
}

// ControlPlaneImages are the images kubeadm init and join run for
// Kubernetes version k8s with etcd version etcd, tagged as kubeadm
// expects (etcd as EtcdImageTag and CoreDNS as coredns, both given to
// kubeadm by the kind backend). CoreDNS serves the cluster's DNS, which
// upstream's e2e specs use (they reach Services by name).
func ControlPlaneImages(k8s, etcd, coredns string) []ControlPlaneImage {
	var imgs []ControlPlaneImage
	for _, n := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		imgs = append(imgs, ControlPlaneImage{Name: n, Ref: ImageRepository + "/" + n + ":" + k8s, Binary: "/usr/local/bin/" + n, User: "0:0"})
	}
	imgs = append(imgs,
		ControlPlaneImage{Name: "kube-proxy", Ref: ImageRepository + "/kube-proxy:" + k8s, Binary: "/usr/local/bin/kube-proxy", User: "0:0", Debian: true},
		ControlPlaneImage{Name: "etcd", Ref: ImageRepository + "/etcd:" + EtcdImageTag(etcd), Binary: "/usr/local/bin/etcd", User: "0:0"},
		// kubeadm's CoreDNS Deployment runs the image's entrypoint with
		// -conf only; root, where the upstream image runs as nonroot with
		// a file capability to bind port 53 (kubeadm's securityContext
		// drops every capability but NET_BIND_SERVICE either way).
		ControlPlaneImage{Name: "coredns", Ref: ImageRepository + "/coredns/coredns:" + coredns, Binary: "/coredns", User: "0:0"},
		ControlPlaneImage{Name: "pause", Ref: ImageRepository + "/pause:" + PauseVersion, Binary: "/pause", User: "65535:65535"},
	)
	return imgs
}

// layerFile is one entry of a layer tar.
type layerFile struct {
	name string // without a leading slash
	hdr  *tar.Header
	src  string // host file to copy for a regular file
}

// writeLayer writes entries as an uncompressed tar file at dst.
func writeLayer(dst string, entries []layerFile) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := bufio.NewWriterSize(f, 1<<20)
	bw := tar.NewWriter(buf)
	for _, e := range entries {
		h := *e.hdr
		h.Name = e.name
		h.ModTime = imageCreated
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if h.Typeflag == tar.TypeDir && !strings.HasSuffix(h.Name, "/") {
			h.Name += "/"
		}
		if err := bw.WriteHeader(&h); err != nil {
			return fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if h.Typeflag == tar.TypeReg && e.src != "" {
			src, err := os.Open(e.src)
			if err != nil {
				return err
			}
			_, err = io.Copy(bw, src)
			src.Close()
			if err != nil {
				return fmt.Errorf("layer entry %s: %w", e.name, err)
			}
		}
	}
	if err := bw.Close(); err != nil {
		return err
	}
	if err := buf.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// binaryEntries are the files of an image that holds one static
// executable: its directories, a world-writable /tmp, and the binary.
func binaryEntries(binaryPath, src string) ([]layerFile, error) {
	info, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	entries := []layerFile{{name: "tmp", hdr: &tar.Header{Typeflag: tar.TypeDir, Mode: 0o1777}}}
	dir := strings.TrimPrefix(path.Dir(binaryPath), "/")
	var dirs []string
	for d := dir; d != "." && d != ""; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		entries = append(entries, layerFile{name: d, hdr: &tar.Header{Typeflag: tar.TypeDir, Mode: 0o755}})
	}
	entries = append(entries, layerFile{
		name: strings.TrimPrefix(binaryPath, "/"),
		hdr:  &tar.Header{Typeflag: tar.TypeReg, Mode: 0o755, Size: info.Size()},
		src:  src,
	})
	return entries, nil
}

// imageConfig is the configuration of a control-plane image.
func imageConfig(ci ControlPlaneImage, version, arch string) v1.Config {
	return v1.Config{
		User:       ci.User,
		Entrypoint: []string{ci.Binary},
		Env:        []string{"PATH=" + imagePath},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":       ci.Name,
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.description": "built offline by ccm-conformance for its kind node image, not the upstream image",
		},
	}
}

// writeImage makes an image of the layer tar files (in order) with cfg
// and writes it as a `docker save` tarball tagged ref at dst.
func writeImage(dst, ref string, layers []string, cfg v1.Config, arch string) error {
	img := empty.Image
	for _, l := range layers {
		layer, err := tarball.LayerFromFile(l)
		if err != nil {
			return fmt.Errorf("layer %s: %w", l, err)
		}
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
			Created:   v1.Time{Time: imageCreated},
			CreatedBy: "ccm-conformance kind node-image: " + filepath.Base(l),
		}})
		if err != nil {
			return err
		}
	}
	img, err := mutate.Config(img, cfg)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: imageCreated}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

// dpkgPackage is one installed package of a dpkg status file.
type dpkgPackage struct {
	name    string
	depends []string // alternatives "a | b" kept as one item
}

// parseDpkgStatus returns the installed packages of a dpkg status file
// and what each virtual package name is provided by.
func parseDpkgStatus(r io.Reader) (map[string]dpkgPackage, map[string]string, error) {
	pkgs := map[string]dpkgPackage{}
	provides := map[string]string{}
	var cur dpkgPackage
	var installed bool
	var provided []string
	var field string
	fields := map[string]string{}
	flush := func() {
		if cur.name != "" && installed {
			for _, f := range []string{"Pre-Depends", "Depends"} {
				for _, d := range strings.Split(fields[f], ",") {
					if d = strings.TrimSpace(d); d != "" {
						cur.depends = append(cur.depends, d)
					}
				}
			}
			pkgs[cur.name] = cur
			for _, p := range provided {
				if _, ok := provides[p]; !ok {
					provides[p] = cur.name
				}
			}
		}
		cur, installed, provided, field = dpkgPackage{}, false, nil, ""
		fields = map[string]string{}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if field != "" {
				fields[field] += " " + strings.TrimSpace(line)
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		field, v = k, strings.TrimSpace(v)
		fields[k] = v
		switch k {
		case "Package":
			cur.name = v
		case "Status":
			installed = strings.HasSuffix(v, " installed")
		case "Provides":
			for _, p := range strings.Split(v, ",") {
				provided = append(provided, depName(p))
			}
		}
	}
	flush()
	return pkgs, provides, sc.Err()
}

// depName strips version constraints and architecture qualifiers.
func depName(d string) string {
	d = strings.TrimSpace(d)
	if i := strings.IndexAny(d, " ("); i >= 0 {
		d = d[:i]
	}
	d, _, _ = strings.Cut(d, ":")
	return d
}

// dependencyClosure returns roots and every installed package they depend
// on, sorted. Of alternatives ("a | b") the first installed one counts.
func dependencyClosure(pkgs map[string]dpkgPackage, provides map[string]string, roots []string) ([]string, error) {
	seen := map[string]bool{}
	var visit func(string) error
	visit = func(n string) error {
		if seen[n] {
			return nil
		}
		p, ok := pkgs[n]
		if !ok {
			return fmt.Errorf("package %s is not installed", n)
		}
		seen[n] = true
		for _, d := range p.depends {
			chosen := ""
			for _, alt := range strings.Split(d, "|") {
				a := depName(alt)
				if _, ok := pkgs[a]; ok {
					chosen = a
					break
				}
				if prov, ok := provides[a]; ok {
					chosen = prov
					break
				}
			}
			if chosen == "" {
				return fmt.Errorf("package %s depends on %q, which is not installed", n, d)
			}
			if err := visit(chosen); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := visit(r); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// kubeProxyPackages are what kube-proxy runs besides itself: iptables
// (its default mode) and conntrack; kubeProxyAlternatives name iptables'
// variants.
var (
	kubeProxyPackages     = []string{"iptables", "conntrack"}
	kubeProxyAlternatives = []string{"ip"}
)

// debianLayerEntries returns the files of packages (and their
// dependencies) from the root filesystem, plus the alternatives whose
// names start with one of alternatives (iptables' variants for kube-proxy:
// "ip") with the links on PATH that name them, and the merged-/usr links
// at the top.
func debianLayerEntries(root string, packages, alternatives []string) ([]layerFile, error) {
	status, err := os.Open(filepath.Join(root, "var/lib/dpkg/status"))
	if err != nil {
		return nil, err
	}
	pkgs, provides, err := parseDpkgStatus(status)
	status.Close()
	if err != nil {
		return nil, err
	}
	closure, err := dependencyClosure(pkgs, provides, packages)
	if err != nil {
		return nil, err
	}
	paths := map[string]bool{}
	for _, p := range closure {
		list := filepath.Join(root, "var/lib/dpkg/info", p+".list")
		if _, err := os.Stat(list); err != nil {
			list = filepath.Join(root, "var/lib/dpkg/info", p+":"+archName()+".list")
		}
		data, err := os.ReadFile(list)
		if err != nil {
			return nil, fmt.Errorf("files of package %s: %w", p, err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimPrefix(strings.TrimSpace(l), "/"); l != "" && l != "." {
				paths[l] = true
			}
		}
	}
	for _, prefix := range alternatives {
		alts, _ := filepath.Glob(filepath.Join(root, "etc/alternatives", prefix+"*"))
		for _, a := range alts {
			rel, _ := filepath.Rel(root, a)
			paths[filepath.ToSlash(rel)] = true
		}
		// The names on PATH (/usr/sbin/iptables) are links to those
		// alternatives that update-alternatives made, not files of a
		// package.
		for _, dir := range []string{"usr/sbin", "usr/bin"} {
			links, _ := filepath.Glob(filepath.Join(root, dir, "*"))
			for _, l := range links {
				target, err := os.Readlink(l)
				if err == nil && strings.HasPrefix(target, "/etc/alternatives/"+prefix) {
					rel, _ := filepath.Rel(root, l)
					paths[filepath.ToSlash(rel)] = true
				}
			}
		}
	}
	paths["etc"], paths["etc/alternatives"] = true, true
	// Canonicalize through the merged-/usr links (lib -> usr/lib), keeping
	// the links themselves.
	canonical := map[string]bool{}
	for p := range paths {
		first, rest, _ := strings.Cut(p, "/")
		if target, err := os.Readlink(filepath.Join(root, first)); err == nil && !strings.HasPrefix(target, "/") {
			canonical[first] = true
			if rest == "" {
				continue
			}
			p = path.Join(target, rest)
		}
		canonical[p] = true
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			canonical[d] = true
		}
	}
	names := make([]string, 0, len(canonical))
	for p := range canonical {
		names = append(names, p)
	}
	sort.Strings(names)
	var entries []layerFile
	for _, n := range names {
		src := filepath.Join(root, n)
		info, err := os.Lstat(src)
		if err != nil {
			continue // listed by dpkg but removed (docs, diverted files)
		}
		link := ""
		if info.Mode()&os.ModeSymlink != 0 {
			link, _ = os.Readlink(src)
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return nil, err
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
		e := layerFile{name: n, hdr: hdr}
		if hdr.Typeflag == tar.TypeReg {
			e.src = src
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// archName is the Debian architecture of the build (GOARCH names match
// Debian's for amd64 and arm64, the architectures kind supports).
func archName() string { return runtime.GOARCH }
