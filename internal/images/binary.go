package images

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/mod/module"

	"github.com/ccm-conformance/ccm-conformance/internal/command"
	"github.com/ccm-conformance/ccm-conformance/internal/gocmd"
)

// An image of one executable built elsewhere, such as a provider's CCM that
// internal/ccmbuild built from its Go module: the image Image makes of a
// target of this module (one layer, user 65532:65532, the binary in BinDir
// as the entrypoint), with the labels taken from the executable's Go build
// info instead of from git (`ccm-conformance ccm image`, docs/images.md).

// moduleTimeout bounds `go list -m -json`, which reads the module cache or
// asks the module proxy for one version's time.
const moduleTimeout = time.Minute

// BinaryInfo is what an executable's Go build info says about the image
// to make of it (BinaryInfoFrom).
type BinaryInfo struct {
	// Package is the main package (k8s.io/cloud-provider-vsphere/cmd/...).
	Package string
	// Module is the main package's module.
	Module string
	// Version is the module's version, "" when the build info has none: a
	// binary built in its own checkout records "(devel)".
	Version string
	// Revision is the commit: the build info's vcs.revision, else the one
	// a pseudo-version names (12 hex digits); "" when neither says, as for
	// a release version built from the module proxy, which records none.
	Revision string
	// Source is SourceURL of Module.
	Source string
	// GOOS and GOARCH are the platform the binary was built for.
	GOOS, GOARCH string
}

// BinaryInfoFrom reads what an image needs from a binary's build info.
func BinaryInfoFrom(bi *buildinfo.BuildInfo) BinaryInfo {
	info := BinaryInfo{Package: bi.Path, Module: bi.Main.Path, Source: SourceURL(bi.Main.Path)}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		info.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			info.GOOS = s.Value
		case "GOARCH":
			info.GOARCH = s.Value
		case "vcs.revision":
			info.Revision = s.Value
		}
	}
	if info.Revision == "" && module.IsPseudoVersion(info.Version) {
		info.Revision, _ = module.PseudoVersionRev(info.Version)
	}
	return info
}

// majorSuffix is a module path's major version element (/v2).
var majorSuffix = regexp.MustCompile(`/v[2-9][0-9]*$`)

// SourceURL is LabelSource for a Go module path: its repository on a code
// host whose paths are owner/repository (github.com/o/r/sub:
// https://github.com/o/r); for the vanity paths of Kubernetes' modules,
// the repository their go-import metadata names (k8s.io/x:
// https://github.com/kubernetes/x, sigs.k8s.io/x:
// https://github.com/kubernetes-sigs/x); else https:// and the path
// without its major version suffix, where a vanity path's host serves the
// go-import metadata that names the repository.
func SourceURL(modulePath string) string {
	elems := strings.Split(modulePath, "/")
	switch {
	case (elems[0] == "github.com" || elems[0] == "bitbucket.org") && len(elems) >= 3:
		return "https://" + strings.Join(elems[:3], "/")
	case elems[0] == "k8s.io" && len(elems) >= 2:
		return "https://github.com/kubernetes/" + elems[1]
	case elems[0] == "sigs.k8s.io" && len(elems) >= 2:
		return "https://github.com/kubernetes-sigs/" + elems[1]
	}
	return "https://" + majorSuffix.ReplaceAllString(modulePath, "")
}

// DefaultRef is the reference of the image of a binary: DefaultRepository,
// the binary's name and its version as a tag (TagFor).
func DefaultRef(binaryName, version string) (string, error) {
	tag, err := TagFor(version)
	if err != nil {
		return "", err
	}
	return DefaultRepository + "/" + binaryName + ":" + tag, nil
}

// BinaryOptions configure BuildBinary.
type BinaryOptions struct {
	// Binary is the executable: a static Go program for linux. Required.
	Binary string
	// Ref is the image's reference, NAME[:TAG] (":latest" when no tag).
	// Default DefaultRef of the binary's file name and Version.
	Ref string
	// Version is LabelVersion. Default the build info's module version
	// (v1.36.0 for a CCM built from its module); required when the build
	// info has none.
	Version string
	// Revision is LabelRevision. Default BinaryInfo.Revision; the label is
	// left out when that is "" too.
	Revision string
	// Source is LabelSource. Default BinaryInfo.Source.
	Source string
	// Created stamps the files, the history, the configuration and
	// LabelCreated. Default the Unix epoch, so that one binary always gives
	// the same image; ModuleTime gives the time of a module version.
	Created time.Time
	// OutDir receives the image as a `docker save` tarball, NAME.tar.
	// Required.
	OutDir string
	// Load runs `docker load -i` on the tarball.
	Load bool
	// Docker is the docker CLI. Default "docker".
	Docker string
	// Progress receives a line per step. Default io.Discard.
	Progress io.Writer
}

// BinaryImage is an image BuildBinary made.
type BinaryImage struct {
	Built
	// Ref is the reference the image was tagged and loaded with,
	// NAME:TAG.
	Ref string
	// Info is what the binary's build info said.
	Info BinaryInfo
	// Labels are the image's labels.
	Labels map[string]string
}

// BuildBinary puts a static Go executable into an image FROM scratch, as
// Build does with the targets it compiles, writes it into OutDir and, with
// Load, loads it into the local Docker engine. Its labels come from the
// executable's build info: LabelVersion the module version, LabelSource
// the module's repository, LabelRevision the commit when the build info
// names one, LabelTitle the file name and LabelDescription the main
// package and its module. A file that is no static Go executable for
// linux, or a version that makes no tag, is an error naming the file.
func BuildBinary(ctx context.Context, opts BinaryOptions) (BinaryImage, error) {
	if opts.Binary == "" || opts.OutDir == "" {
		return BinaryImage{}, errors.New("images: BuildBinary needs a binary and an output directory")
	}
	if opts.Docker == "" {
		opts.Docker = "docker"
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	file := opts.Binary
	data, err := os.ReadFile(file)
	if err != nil {
		return BinaryImage{}, err
	}
	if err := checkStatic(file); err != nil {
		return BinaryImage{}, err
	}
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		return BinaryImage{}, fmt.Errorf("%s: no Go build info (%w): the image's labels come from it", file, err)
	}
	info := BinaryInfoFrom(bi)
	if info.GOOS != "linux" {
		return BinaryImage{}, fmt.Errorf("%s: built for GOOS=%s, not linux", file, info.GOOS)
	}
	if info.GOARCH == "" {
		return BinaryImage{}, fmt.Errorf("%s: its build info names no GOARCH", file)
	}
	version, revision, source := opts.Version, opts.Revision, opts.Source
	if version == "" {
		version = info.Version
	}
	if version == "" {
		return BinaryImage{}, fmt.Errorf("%s: its build info names no version of its module %s (%s: built in its own checkout, not from a module version), so there is no version to label the image with", file, info.Module, bi.Main.Version)
	}
	if revision == "" {
		revision = info.Revision
	}
	if source == "" {
		source = info.Source
	}
	t := Target{Name: filepath.Base(file), Package: info.Package, Description: description(info, version)}
	ref := opts.Ref
	if ref == "" {
		if ref, err = DefaultRef(t.Name, version); err != nil {
			return BinaryImage{}, fmt.Errorf("%s: %w", file, err)
		}
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return BinaryImage{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if ref = tag.String(); !strings.HasSuffix(ref, ":"+tag.TagStr()) {
		ref += ":" + tag.TagStr()
	}
	meta := Metadata{Version: version, Revision: revision, Source: source, Created: opts.Created, Arch: info.GOARCH}
	if meta.Created.IsZero() {
		meta.Created = time.Unix(0, 0)
	}
	img, err := Image(t, data, meta)
	if err != nil {
		return BinaryImage{}, fmt.Errorf("%s: %w", file, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return BinaryImage{}, fmt.Errorf("%s: %w", file, err)
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return BinaryImage{}, fmt.Errorf("output directory: %w", err)
	}
	b, err := writeImage(img, t, []string{ref}, filepath.Join(opts.OutDir, t.Name+".tar"), opts.Progress)
	if err != nil {
		return BinaryImage{}, fmt.Errorf("%s: %w", file, err)
	}
	out := BinaryImage{Built: b, Ref: ref, Info: info, Labels: cf.Config.Labels}
	if opts.Load {
		if err := dockerLoad(ctx, opts.Docker, b.Tarball, opts.Progress); err != nil {
			return out, err
		}
	}
	return out, nil
}

// description is LabelDescription of a binary's image.
func description(info BinaryInfo, version string) string {
	return fmt.Sprintf("%s, built from the Go module %s %s", info.Package, info.Module, version)
}

// ModuleTime returns the time of a module version as the go command
// reports it (`go list -m -json path@version`, from the module cache or
// the module proxy): for a version the proxy took from a tag, the time it
// was tagged. It is the Created of an image of a binary built from that
// version, as the commit's time is for Build.
func ModuleTime(ctx context.Context, goCmd, path, version string) (time.Time, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	ctx, cancel := context.WithTimeout(ctx, moduleTimeout)
	defer cancel()
	// Outside any module: the version is looked up on its own.
	args := []string{"list", "-m", "-json", path + "@" + version}
	out, err := gocmd.Output(ctx, goCmd, os.TempDir(), []string{"GOWORK=off"}, args...)
	if err != nil {
		return time.Time{}, err
	}
	var m struct{ Time *time.Time }
	if err := json.Unmarshal(out, &m); err != nil || m.Time == nil {
		return time.Time{}, fmt.Errorf("go %s: no time in %q (%v)", strings.Join(args, " "), out, err)
	}
	return m.Time.UTC(), nil
}

// dockerVersionTimeout bounds `docker version`.
const dockerVersionTimeout = 30 * time.Second

// CheckDocker says whether the local Docker engine answers (`docker
// version`), or why not, in one line, so that a caller that will load an
// image finds out before it builds one.
func CheckDocker(ctx context.Context, docker string) error {
	if docker == "" {
		docker = "docker"
	}
	ctx, cancel := context.WithTimeout(ctx, dockerVersionTimeout)
	defer cancel()
	out, err := run(ctx, "", nil, []string{docker, "version", "--format", "{{.Server.Version}}"})
	if err != nil {
		var ce *command.Error
		if errors.As(err, &ce) {
			err = ce.Err
		}
		last := strings.TrimSpace(out)
		if i := strings.LastIndex(last, "\n"); i >= 0 {
			last = strings.TrimSpace(last[i+1:])
		}
		if last != "" {
			return fmt.Errorf("the local Docker engine does not answer: %s version: %v: %s", docker, err, last)
		}
		return fmt.Errorf("the local Docker engine does not answer: %s version: %v", docker, err)
	}
	return nil
}
