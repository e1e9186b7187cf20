package runner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// checkInput validates everything that needs no cluster, so that bad input
// fails in a second, not after a cluster came up.
func checkInput(opts Options) (*profile.Profile, error) {
	if opts.ProfilePath == "" {
		return nil, &InputError{errors.New("no profile: pass --provider FILE")}
	}
	if opts.Backend == nil {
		return nil, &InputError{errNoBackend}
	}
	p, err := profile.Load(opts.ProfilePath)
	if err != nil {
		return nil, &InputError{err}
	}
	if opts.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(opts.LabelFilter); err != nil {
			return nil, &InputError{fmt.Errorf("--label-filter %q: %s", opts.LabelFilter, labelFilterError(err))}
		}
	}
	if opts.Lanes > 0 && opts.LaneCommand == nil {
		return nil, &InputError{errors.New("lanes need a LaneCommand")}
	}
	if b := p.CCM.Binary; b != nil {
		if err := checkExecutable(p.ResolvePath(b.Path)); err != nil {
			return nil, &InputError{fmt.Errorf("profile %s: ccm.binary.path: %w", p.Path, err)}
		}
	}
	if p.CCM.Deployed != nil && opts.Backend.SimulatesNodes() {
		return nil, &InputError{fmt.Errorf("profile %s: ccm.deployed names a CCM running in a cluster, and the %s backend's new cluster has none; pass that cluster with --kubeconfig", p.Path, opts.Backend.Name())}
	}
	for i, s := range p.Services {
		if err := checkExecutable(p.ResolvePath(s.Command[0])); err != nil {
			return nil, &InputError{fmt.Errorf("profile %s: services[%d].command: %w", p.Path, i, err)}
		}
	}
	if d := p.CloudDriver; d != nil {
		if err := checkExecutable(p.ResolvePath(d.Command[0])); err != nil {
			return nil, &InputError{fmt.Errorf("profile %s: cloudDriver.command: %w", p.Path, err)}
		}
	}
	if path := p.LeaderMigrationConfig(); path != "" {
		if info, err := os.Stat(path); err != nil {
			return nil, &InputError{fmt.Errorf("profile %s: leaderMigration.config: %w", p.Path, err)}
		} else if !info.Mode().IsRegular() {
			return nil, &InputError{fmt.Errorf("profile %s: leaderMigration.config: %s is not a file", p.Path, path)}
		}
	}
	return p, nil
}

func checkExecutable(path string) error {
	if !strings.Contains(path, "/") {
		if _, err := exec.LookPath(path); err != nil {
			return fmt.Errorf("%s: not found on PATH", path)
		}
		return nil
	}
	info, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%s: no such file", path)
		}
		return err
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", path)
	}
	return nil
}
