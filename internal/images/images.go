// Package images builds executables of this module into OCI images FROM
// scratch with go-containerregistry, without Docker's builder and without
// pulling anything, and loads them into the local Docker engine. `make
// images` builds the reference provider's CCM and cloud with it (Build);
// `ccm-conformance ccm image` puts a provider's CCM, built elsewhere, into
// the same image, labelled from its Go build info (BuildBinary)
// (docs/images.md).
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package images

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ccm-conformance/ccm-conformance/internal/command"
)

// Bounds of the steps of a build.
const (
	// goBuildTimeout bounds `go build` of every target together; a cold
	// build of the reference CCM compiles k8s.io/cloud-provider and its
	// dependencies.
	goBuildTimeout = 20 * time.Minute
	// gitTimeout bounds each git command that reads the version.
	gitTimeout = 30 * time.Second
	// dockerLoadTimeout bounds one `docker load`.
	dockerLoadTimeout = 5 * time.Minute
	// outputTail is how many lines of a failed command's output an error
	// quotes.
	outputTail = 40
)

// Defaults of Options.
const (
	// DefaultRepository prefixes the images' names.
	DefaultRepository = "ccm-conformance"
	// DefaultSource is org.opencontainers.image.source.
	DefaultSource = "https://github.com/ccm-conformance/ccm-conformance"
	// DefaultOutDir is where the tarballs go, relative to RepoDir.
	DefaultOutDir = "_output/images"
	// LatestTag is the second tag of every image, so that a profile can
	// name the last build without knowing its version.
	LatestTag = "latest"
)

// Target is one executable to build into an image.
type Target struct {
	// Name is the binary's name and the last element of the image's name.
	Name string
	// Package is the main package, relative to the module root (./cmd/x).
	Package string
	// Description is org.opencontainers.image.description.
	Description string
}

// ReferenceTargets are the reference provider's CCM, its simulated cloud
// and its node manager.
func ReferenceTargets() []Target {
	return []Target{
		{Name: "reference-ccm", Package: "./providers/reference/cmd/reference-ccm", Description: "The reference provider's cloud-controller-manager (k8s.io/cloud-provider)"},
		{Name: "reference-cloud", Package: "./providers/reference/cmd/reference-cloud", Description: "The reference provider's simulated cloud API"},
		{Name: "reference-node-manager", Package: "./providers/reference/cmd/reference-node-manager", Description: "The reference provider's node manager: k8s.io/cloud-provider's cloud node controller for one node"},
	}
}

// EchoServerTargets are the echo server, the backend pod of the data path
// specs on real clusters (docs/images.md, "The echo server"). They are
// not among ReferenceTargets: `make images` does not build them.
func EchoServerTargets() []Target {
	return []Target{
		{Name: "echo-server", Package: "./cmd/echo-server", Description: "A backend for load balancer data path tests: answers every TCP connection, UDP datagram and HTTP GET / with one line, echo pod=<pod> node=<node> client=<ip>"},
	}
}

// The names of the sets of targets TargetSet knows.
const (
	SetReference  = "reference"
	SetEchoServer = "echo-server"
	SetAll        = "all"
)

// TargetSetNames are the names TargetSet takes, in the order to list them.
func TargetSetNames() []string {
	return []string{SetReference, SetEchoServer, SetAll}
}

// TargetSet returns the targets of a set: SetReference (ReferenceTargets,
// the default of build-images), SetEchoServer (EchoServerTargets) or
// SetAll (both).
func TargetSet(name string) ([]Target, error) {
	switch name {
	case SetReference:
		return ReferenceTargets(), nil
	case SetEchoServer:
		return EchoServerTargets(), nil
	case SetAll:
		return append(ReferenceTargets(), EchoServerTargets()...), nil
	}
	return nil, fmt.Errorf("unknown set of targets %q: expected one of %s", name, strings.Join(TargetSetNames(), ", "))
}

// Options configure Build. Every field has a default.
type Options struct {
	// RepoDir is the module root the targets are built in. Default: the
	// current directory.
	RepoDir string
	// OutDir receives one tarball per target, NAME.tar. Default
	// RepoDir/DefaultOutDir.
	OutDir string
	// Repository prefixes the images' names: REPOSITORY/NAME:VERSION.
	// Default DefaultRepository.
	Repository string
	// Version tags each image (besides LatestTag) and is
	// org.opencontainers.image.version. Default `git describe --tags
	// --always --dirty` in RepoDir, made a semantic version when no tag
	// is reachable (DescribeVersion), else "v0.0.0-devel".
	Version string
	// Revision is org.opencontainers.image.revision. Default `git
	// rev-parse HEAD`; left out when unknown.
	Revision string
	// Source is org.opencontainers.image.source. Default DefaultSource.
	Source string
	// Created stamps the image's files and configuration, so that a build
	// of one commit gives the same image. Default the commit time of HEAD,
	// else the Unix epoch.
	Created time.Time
	// Arch is the GOARCH of the binaries and the image's architecture.
	// Default runtime.GOARCH.
	Arch string
	// Tags are the tags of each image. Default the version (TagFor) and
	// LatestTag.
	Tags []string
	// Load runs `docker load -i` on every tarball written.
	Load bool
	// Docker is the docker CLI. Default "docker".
	Docker string
	// Progress receives a line per step. Default io.Discard.
	Progress io.Writer
	// Targets to build. Default ReferenceTargets().
	Targets []Target
}

// WithDefaults fills every empty field; the version, revision and time
// come from git in RepoDir (make release stamps its binaries with them
// too).
func (o Options) WithDefaults(ctx context.Context) (Options, error) {
	if o.RepoDir == "" {
		o.RepoDir = "."
	}
	abs, err := filepath.Abs(o.RepoDir)
	if err != nil {
		return o, err
	}
	o.RepoDir = abs
	if o.OutDir == "" {
		o.OutDir = filepath.Join(o.RepoDir, DefaultOutDir)
	}
	if o.Repository == "" {
		o.Repository = DefaultRepository
	}
	if o.Source == "" {
		o.Source = DefaultSource
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.Docker == "" {
		o.Docker = "docker"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Targets == nil {
		o.Targets = ReferenceTargets()
	}
	if o.Version == "" {
		o.Version = "v0.0.0-devel"
		if v, err := git(ctx, o.RepoDir, "describe", "--tags", "--always", "--dirty"); err == nil && v != "" {
			o.Version = DescribeVersion(v)
		}
	}
	if o.Revision == "" {
		if r, err := git(ctx, o.RepoDir, "rev-parse", "HEAD"); err == nil {
			o.Revision = r
		}
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0).UTC()
		if s, err := git(ctx, o.RepoDir, "log", "-1", "--format=%ct"); err == nil {
			var sec int64
			if _, err := fmt.Sscan(s, &sec); err == nil {
				o.Created = time.Unix(sec, 0).UTC()
			}
		}
	}
	return o, nil
}

// Built is one image Build wrote.
type Built struct {
	Target Target
	// Tags are REPOSITORY/NAME:TAG for each of Options.Tags, by default
	// REPOSITORY/NAME:VERSION and REPOSITORY/NAME:latest.
	Tags []string
	// Tarball is the image in `docker save` form.
	Tarball string
	// ImageID is the digest of the image's configuration, which Docker
	// shows as the image's ID.
	ImageID string
}

// Build compiles the targets (CGO_ENABLED=0, -trimpath, static), puts each
// into an image FROM scratch, writes the images as tarballs into OutDir
// and, with Load, loads them into the local Docker engine.
func Build(ctx context.Context, opts Options) ([]Built, error) {
	start := time.Now()
	opts, err := opts.WithDefaults(ctx)
	if err != nil {
		return nil, err
	}
	if len(opts.Targets) == 0 {
		return nil, errors.New("no targets to build")
	}
	meta := Metadata{Version: opts.Version, Revision: opts.Revision, Source: opts.Source, Created: opts.Created, Arch: opts.Arch}
	tags := opts.Tags
	if len(tags) == 0 {
		tag, err := TagFor(opts.Version)
		if err != nil {
			return nil, err
		}
		tags = []string{tag, LatestTag}
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	binDir, err := os.MkdirTemp(opts.OutDir, ".bin-")
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	defer os.RemoveAll(binDir)
	if err := goBuild(ctx, opts, binDir); err != nil {
		return nil, err
	}

	var built []Built
	for _, t := range opts.Targets {
		b, err := buildImage(opts, t, tags, meta, filepath.Join(binDir, t.Name))
		if err != nil {
			return built, err
		}
		built = append(built, b)
		if opts.Load {
			if err := load(ctx, opts, b); err != nil {
				return built, err
			}
		}
	}
	fmt.Fprintf(opts.Progress, "images: done in %s\n", time.Since(start).Round(100*time.Millisecond))
	return built, nil
}

// goBuild compiles every target into dir in one `go build`, so that their
// shared packages compile once.
func goBuild(ctx context.Context, opts Options, dir string) error {
	names := make([]string, len(opts.Targets))
	for i, t := range opts.Targets {
		names[i] = t.Name
	}
	fmt.Fprintf(opts.Progress, "images: building %s (go build, CGO_ENABLED=0 -trimpath, linux/%s)\n", strings.Join(names, ", "), opts.Arch)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, goBuildTimeout)
	defer cancel()
	command := []string{"go", "build", "-trimpath"}
	if ldflags := versionLDFlags(opts); ldflags != "" {
		command = append(command, "-ldflags="+ldflags)
	}
	command = append(command, "-o", dir+string(filepath.Separator))
	for _, t := range opts.Targets {
		command = append(command, t.Package)
	}
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+opts.Arch)
	// The reference provider's packages are in a module of their own
	// (providers/go.mod) that the checkout's go.work joins to the harness.
	if work, err := filepath.Abs(filepath.Join(opts.RepoDir, "go.work")); err == nil {
		if info, err := os.Stat(work); err == nil && info.Mode().IsRegular() {
			env = append(env, "GOWORK="+work)
		}
	}
	if _, err := run(ctx, opts.RepoDir, env, command); err != nil {
		return err
	}
	for _, t := range opts.Targets {
		// go build names each binary after its package's directory.
		if base := filepath.Base(t.Package); base != t.Name {
			if err := os.Rename(filepath.Join(dir, base), filepath.Join(dir, t.Name)); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
		}
		if err := checkStatic(filepath.Join(dir, t.Name)); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	fmt.Fprintf(opts.Progress, "images: built the binaries in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// componentBaseVersion is the package whose variables a binary made with
// k8s.io/component-base prints for --version ("Kubernetes v1.2.3").
const componentBaseVersion = "k8s.io/component-base/version"

// semverVersion is a version k8s.io/component-base can parse: vMAJOR.MINOR.PATCH,
// with an optional pre-release and build.
var semverVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// versionLDFlags stamps the image's version into k8s.io/component-base's
// version variables, the way Kubernetes' own builds do, so that a CCM's
// --version prints the version its image is labelled with (a binary that
// does not link the package ignores them). Only a semantic version is
// stamped: component-base parses it at start-up and cannot take a bare
// commit ("87f71ad"), so an untagged build keeps component-base's default.
func versionLDFlags(opts Options) string {
	if !semverVersion.MatchString(opts.Version) {
		return ""
	}
	flags := []string{
		"-X " + componentBaseVersion + ".gitVersion=" + opts.Version,
		"-X " + componentBaseVersion + ".buildDate=" + opts.Created.UTC().Format("2006-01-02T15:04:05Z"),
	}
	if opts.Revision != "" {
		flags = append(flags, "-X "+componentBaseVersion+".gitCommit="+opts.Revision)
	}
	return strings.Join(flags, " ")
}

// checkStatic makes sure an executable needs no dynamic loader, since the
// image has none.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; an image FROM scratch has no loader", path)
		}
	}
	return nil
}

// buildImage makes the target's image and writes it as a tarball.
func buildImage(opts Options, t Target, tags []string, meta Metadata, binary string) (Built, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return Built{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	img, err := Image(t, data, meta)
	if err != nil {
		return Built{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	repo := opts.Repository + "/" + t.Name
	var refs []string
	for _, tag := range tags {
		refs = append(refs, repo+":"+tag)
	}
	b, err := writeImage(img, t, refs, filepath.Join(opts.OutDir, t.Name+".tar"), opts.Progress)
	if err != nil {
		return Built{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	return b, nil
}

// writeImage writes img as a `docker save` tarball at path, tagged with
// each of refs (REPOSITORY:TAG), whole or not at all.
func writeImage(img v1.Image, t Target, refs []string, path string, progress io.Writer) (Built, error) {
	b := Built{Target: t, Tags: refs, Tarball: path}
	tagged := map[name.Reference]v1.Image{}
	for _, s := range b.Tags {
		ref, err := name.NewTag(s)
		if err != nil {
			return Built{}, fmt.Errorf("image name %q: %w", s, err)
		}
		tagged[ref] = img
	}
	id, err := img.ConfigName()
	if err != nil {
		return Built{}, err
	}
	b.ImageID = id.String()
	tmp := b.Tarball + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, tagged); err != nil {
		os.Remove(tmp)
		return Built{}, fmt.Errorf("writing %s: %w", b.Tarball, err)
	}
	if err := os.Rename(tmp, b.Tarball); err != nil {
		os.Remove(tmp)
		return Built{}, err
	}
	size := ""
	if info, err := os.Stat(b.Tarball); err == nil {
		size = fmt.Sprintf(", %.1f MB", float64(info.Size())/1e6)
	}
	fmt.Fprintf(progress, "images: wrote %s (%s%s; image ID %s)\n", b.Tarball, strings.Join(b.Tags, ", "), size, b.ImageID)
	return b, nil
}

// load hands a tarball to the local Docker engine.
func load(ctx context.Context, opts Options, b Built) error {
	return dockerLoad(ctx, opts.Docker, b.Tarball, opts.Progress)
}

// dockerLoad runs `docker load -i tarball` and passes its lines on to
// progress.
func dockerLoad(ctx context.Context, docker, tarball string, progress io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, dockerLoadTimeout)
	defer cancel()
	out, err := run(ctx, "", nil, []string{docker, "load", "-i", tarball})
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" {
			fmt.Fprintf(progress, "images: docker load: %s\n", line)
		}
	}
	return nil
}

// DescribeVersion makes git describe's output a semantic version, which a
// CCM's --version can print (k8s.io/component-base parses its version at
// start-up, and the release check compares it with the image's label): a
// tag ("v1.2.3", "v1.2.3-4-gabcdef0") stays as it is; a bare commit, from a
// checkout without tags, becomes the pre-release "v0.0.0-abcdef0"
// ("-dirty" kept).
func DescribeVersion(describe string) string {
	if strings.HasPrefix(describe, "v") && semverVersion.MatchString(describe) {
		return describe
	}
	return "v0.0.0-" + describe
}

// TagFor turns a version (git describe's output) into a Docker tag:
// characters a tag cannot have become "-", and it is cut to 128.
func TagFor(version string) (string, error) {
	var b strings.Builder
	for i, r := range version {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || (i > 0 && (r == '.' || r == '-'))
		if ok {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	tag := b.String()
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if tag == "" || tag[0] == '-' {
		return "", fmt.Errorf("version %q makes no image tag: it must start with a letter, digit or _", version)
	}
	return tag, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	out, err := run(ctx, dir, nil, append([]string{"git", "-C", dir}, args...))
	return strings.TrimSpace(out), err
}

// run runs args in dir (empty: the current one) with env (nil: the
// harness's) and returns its combined output.
func run(ctx context.Context, dir string, env []string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return out.String(), &command.Error{Command: command.Line(args[0], nil, args[1:]), Dir: dir, Output: command.Tail(out.String(), outputTail), Err: err}
	}
	return out.String(), nil
}
