package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
	"github.com/ccm-conformance/ccm-conformance/internal/images"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

func newCCMCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ccm",
		Short: "Work with the CCM under test: build a profile's CCM from its Go module, make an image of it",
	}
	var provider string
	build := &cobra.Command{
		Use:   "build --provider FILE",
		Short: "Build the profile's ccm.binary.module into the binary cache and show its build info",
		Long: `Build builds the CCM a profile names with ccm.binary.module from the Go module
proxy, unmodified, into the binary cache (docs/profile.md, "A CCM built from
its module"), as 'run' would before its cluster starts, with progress on
stderr: a cold build takes minutes (vSphere's took 8 on two cores). A CCM
already in the cache is not built again. It prints the binary's path, the
lines of 'go version -m' that say what it was built from, the requires and
replaces of the go.mod that built it (a replace shows in the build info only
when the replaced module provides a package of the binary), and the metadata
keys a run of it records.

A profile whose CCM is not built from a module has nothing to build: build
says so and exits 0. A bad profile is exit code 2, with one line naming it;
so is a build that fails, with the go command line and the last lines of its
output.`,
		Example: `  ccm-conformance ccm build --provider providers/profiles/vsphere.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if provider == "" {
				return &exitError{code: runner.ExitHarnessError, err: errors.New("--provider: the provider profile is required")}
			}
			p, err := profile.Load(provider)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			m := p.CCM.Module()
			if m == nil {
				fmt.Fprintf(stdout, "profile %s: the CCM is not built from a module (%s), so there is nothing to build\n", provider, p.CCM.Field())
				return nil
			}
			b, err := runner.BuildCCMModule(ctx, p, stderr)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("profile %s: %w", provider, err)}
			}
			how := "from the cache"
			if b.Built {
				how = "built in " + b.Duration.Round(time.Second).String()
			}
			fmt.Fprintf(stdout, "%s@%s %s (%s):\n%s\n", m.Path, m.Version, m.Package, how, b.Path)
			if text, err := os.ReadFile(b.GoVersionM); err != nil {
				fmt.Fprintf(stdout, "go version -m: %v\n", err)
			} else {
				fmt.Fprintf(stdout, "go version -m (%s), the lines that say what it was built from:\n", b.GoVersionM)
				for _, l := range goVersionMLinesOfInterest(string(text)) {
					fmt.Fprintln(stdout, l)
				}
			}
			if data, err := os.ReadFile(b.GoMod); err != nil {
				fmt.Fprintf(stdout, "the go.mod that built it: %v\n", err)
			} else {
				fmt.Fprintf(stdout, "the go.mod that built it (%s), requires and replaces:\n", b.GoMod)
				for _, l := range strings.Split(string(data), "\n") {
					if t := strings.TrimSpace(l); strings.HasPrefix(t, "require ") || strings.Contains(t, " => ") {
						fmt.Fprintln(stdout, "\t"+t)
					}
				}
			}
			bi, err := ccm.ReadBinaryInfo(b.Path)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			fmt.Fprintln(stdout, "a run of it records:")
			for _, kv := range [][2]string{
				{prow.MetaCCMModule, bi.Module},
				{prow.MetaCCMModuleSum, bi.ModuleSum},
				{prow.MetaCCMCloudProvider, bi.CloudProvider},
				{prow.MetaCCMGoVersion, bi.GoVersion},
			} {
				fmt.Fprintf(stdout, "  %s: %s\n", kv[0], kv[1])
			}
			return nil
		},
	}
	build.Flags().StringVar(&provider, "provider", "", "provider profile (YAML, see docs/profile.md) whose ccm.binary.module to build")
	cmd.AddCommand(build, newCCMImageCommand(stdout, stderr))
	return cmd
}

// revisionPattern is a commit given to ccm image --revision: hex, at least
// as long as git's short form.
var revisionPattern = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

func newCCMImageCommand(stdout, stderr io.Writer) *cobra.Command {
	var provider, tag, revision string
	cmd := &cobra.Command{
		Use:   "image --provider FILE [--tag REF] [--revision COMMIT]",
		Short: "Make an image of the profile's CCM binary, as the reference CCM's image is made, and load it into Docker",
		Long: `Image puts the profile's CCM executable into an image FROM scratch the way
'make images' makes the reference CCM's (docs/images.md, "An image of a
profile's CCM"): one layer with /etc/passwd, /etc/group, /home/nonroot, /tmp
and the binary in /usr/local/bin as the entrypoint, user 65532:65532, and the
OCI labels taken from the binary's Go build info: version the module's
version, source its repository, revision the commit when the build info names
one (a release built from the module proxy names none: --revision gives it),
title and description. It loads the image into the local Docker engine and
prints its reference on stdout, progress on stderr; the tarball is not kept.

The executable is ccm.binary.module's build in the binary cache, built first
when it is not there (minutes, as 'ccm build'), or ccm.binary.path; the binary
is never rebuilt or stamped, so its --version says what the build that made it
says. The default reference is ccm-conformance/<binary>:<module version>.
The image's created time is the module version's time from the go command,
so one binary always gives one image ID.

Exit codes: 0 the image is loaded; 2 bad input (a bad profile, a profile whose
CCM is not a binary, a bad --tag or --revision, a binary that is not a static
Go executable with a module version), a build that fails, or a Docker engine
that does not answer, in one line naming the input.`,
		Example: `  ccm-conformance ccm image --provider providers/profiles/vsphere.yaml
  ccm-conformance release-check --image "$(ccm-conformance ccm image --provider providers/profiles/vsphere.yaml)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if provider == "" {
				return badInput(errors.New("--provider: the provider profile is required"))
			}
			if tag != "" {
				if _, err := name.NewTag(tag); err != nil {
					return badInput(fmt.Errorf("--tag %q: %w", tag, err))
				}
			}
			if revision != "" && !revisionPattern.MatchString(revision) {
				return badInput(fmt.Errorf("--revision %q: want a commit, 7 to 64 lower-case hex digits", revision))
			}
			p, err := profile.Load(provider)
			if err != nil {
				return badInput(err)
			}
			if p.CCM.Binary == nil {
				return badInput(fmt.Errorf("profile %s: the CCM is %s, not a binary: ccm image makes an image of ccm.binary.module or ccm.binary.path", provider, p.CCM.Field()))
			}
			if err := images.CheckDocker(ctx, ""); err != nil {
				return badInput(fmt.Errorf("ccm image loads the image into Docker: %w", err))
			}
			exe, err := runner.CCMExecutable(ctx, p, stderr)
			if err != nil {
				return badInput(fmt.Errorf("profile %s: %w", provider, err))
			}
			opts := images.BinaryOptions{Binary: exe, Ref: tag, Revision: revision, Load: true, Progress: stderr}
			if m := p.CCM.Module(); m != nil {
				if opts.Created, err = images.ModuleTime(ctx, "", m.Path, m.Version); err != nil {
					fmt.Fprintf(stderr, "ccm image: the time of %s@%s is not known, the image is stamped with the Unix epoch: %s\n", m.Path, m.Version, firstline.Of(err.Error()))
				}
			}
			dir, err := os.MkdirTemp("", "ccm-conformance-image-")
			if err != nil {
				return badInput(err)
			}
			defer os.RemoveAll(dir)
			opts.OutDir = dir
			fmt.Fprintf(stderr, "ccm image: making an image of %s\n", exe)
			img, err := images.BuildBinary(ctx, opts)
			if err != nil {
				return badInput(fmt.Errorf("profile %s: ccm image: %w", provider, err))
			}
			keys := make([]string, 0, len(img.Labels))
			for k := range img.Labels {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			fmt.Fprintf(stderr, "ccm image: %s is image %s, user %d:%d, entrypoint %s/%s, labels:\n", img.Ref, img.ImageID, images.UID, images.GID, images.BinDir, img.Target.Name)
			for _, k := range keys {
				fmt.Fprintf(stderr, "  %s=%s\n", k, img.Labels[k])
			}
			if _, ok := img.Labels[images.LabelRevision]; !ok {
				fmt.Fprintf(stderr, "ccm image: no %s label: the build info of %s names no commit (a release built from the module proxy records none); --revision COMMIT gives it\n", images.LabelRevision, exe)
			}
			fmt.Fprintln(stdout, img.Ref)
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "provider profile (YAML, see docs/profile.md) whose CCM binary to make an image of")
	cmd.Flags().StringVar(&tag, "tag", "", "the image's reference NAME[:TAG] (default ccm-conformance/<binary>:<module version>)")
	cmd.Flags().StringVar(&revision, "revision", "", "the commit for the label "+images.LabelRevision+" (default: the one the build info names, else none)")
	return cmd
}

// goVersionMLinesOfInterest keeps the lines of `go version -m` output that
// say what a binary was built from: the Go release, the main package and
// its module, k8s.io/cloud-provider, every replaced dependency with its
// replacement, and the build flags that differ between builds of one
// source (-trimpath, CGO_ENABLED, GOOS, GOARCH, -ldflags, -tags).
func goVersionMLinesOfInterest(text string) []string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var out []string
	for i, l := range lines {
		f := strings.Fields(l)
		keep := false
		switch {
		case i == 0:
			keep = true
		case len(f) < 2:
		case f[0] == "path" || f[0] == "mod" || f[0] == "=>":
			keep = true
		case f[0] == "dep":
			keep = f[1] == ccm.CloudProviderModule || (i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "=>"))
		case f[0] == "build":
			key, _, _ := strings.Cut(f[1], "=")
			switch key {
			case "-trimpath", "CGO_ENABLED", "GOOS", "GOARCH", "-ldflags", "-tags":
				keep = true
			}
		}
		if keep {
			out = append(out, strings.TrimRight(l, " \t"))
		}
	}
	return out
}
