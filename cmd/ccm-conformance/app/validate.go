package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/ccmbuild"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
)

func newValidateCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "validate-profile FILE",
		Short: "Check a provider profile without running anything",
		Long: `validate-profile checks a profile as 'run' checks it before anything starts:
its fields, the executables it names (the CCM, the services, the cloud
driver), the leader migration configuration, and the cloud driver's answer
to its 'info' handshake. A problem is one line naming the profile and the
field, with exit code 2.

A CCM built from its module (ccm.binary.module) is checked as fields only:
validate-profile never builds it, and says whether the binary cache has it
yet ('ccm build --provider FILE' builds it; so does the first 'run').`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			checked, err := runner.CheckProfile(context.Background(), runner.CheckOptions{ProfilePath: args[0]})
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			p := checked.Profile
			caps := make([]string, len(p.Capabilities))
			for i, c := range p.Capabilities {
				caps[i] = string(c)
			}
			fmt.Fprintf(stdout, "profile %s is valid: provider %q, capabilities %s\n", args[0], p.Name, strings.Join(caps, ", "))
			if line := moduleCCMNote(p, args[0]); line != "" {
				fmt.Fprintln(stdout, line)
			}
			if img := checked.Image; img != nil {
				fmt.Fprintf(stdout, "ccm image: %s, image ID %s, user %q\n", img.Reference, img.ID, img.User)
			}
			if d := checked.Driver; d != nil {
				fmt.Fprintf(stdout, "cloud driver: provider %q, protocol %s, %d verbs\n", d.Provider, d.ProtocolVersion, len(d.Verbs))
				drv := clouddriver.FromInfo(*d)
				if !drv.Supports(clouddriver.VerbInstanceCreate) || !drv.Supports(clouddriver.VerbInstanceDelete) {
					fmt.Fprintln(stdout, `note: the cloud driver does not implement "instance create" and "instance delete", so the profile runs only on an existing cluster (--kubeconfig)`)
				}
			} else if p.CCM.HarnessStarts() {
				fmt.Fprintln(stdout, "note: the profile has no cloud driver, so it runs only on an existing cluster (--kubeconfig), and specs that check the cloud skip")
			}
			return nil
		},
	}
}

// moduleCCMNote says where a profile's ccm.binary.module is in the binary
// cache, or that it is not built yet; "" for another CCM. It never builds.
func moduleCCMNote(p *profile.Profile, path string) string {
	req, err := runner.CCMModuleRequest(p)
	if err != nil {
		return ""
	}
	m := p.CCM.Module()
	root, err := k8sbin.CacheRoot(nil)
	if err != nil {
		return ""
	}
	binary, err := ccmbuild.BinaryPath(root, req)
	if err != nil {
		return ""
	}
	if info, err := os.Stat(binary); err == nil && info.Mode().IsRegular() {
		return fmt.Sprintf("ccm: %s@%s, built in the cache: %s", m.Path, m.Version, binary)
	}
	return fmt.Sprintf("ccm: %s@%s is not built yet (minutes, once): 'ccm-conformance ccm build --provider %s' builds it, and so does the first run", m.Path, m.Version, path)
}
