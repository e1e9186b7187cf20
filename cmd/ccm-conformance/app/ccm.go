package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

func newCCMCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ccm",
		Short: "Work with the CCM under test: build a profile's CCM from its Go module",
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
			if p.CCM.Binary == nil || p.CCM.Binary.Module == nil {
				fmt.Fprintf(stdout, "profile %s: the CCM is not built from a module (%s), so there is nothing to build\n", provider, ccmKind(p))
				return nil
			}
			m := p.CCM.Binary.Module
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
	cmd.AddCommand(build)
	return cmd
}

// ccmKind names the field that says how a profile's CCM runs.
func ccmKind(p *profile.Profile) string {
	switch {
	case p.CCM.Binary != nil:
		return "ccm.binary.path"
	case p.CCM.Image != nil:
		return "ccm.image"
	case p.CCM.Deployed != nil:
		return "ccm.deployed"
	}
	return "no CCM"
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
