package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/cloudside"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// CheckOptions say what CheckProfile checks.
type CheckOptions struct {
	// ProfilePath is the provider profile. Required.
	ProfilePath string
	// Backend is the backend a run would use, if known. A backend that
	// simulates its nodes needs a cloud driver that creates and deletes
	// instances, and cannot test a CCM already deployed in a cluster.
	// Nil checks neither.
	Backend cluster.Backend
}

// Checked is a profile that passed CheckProfile.
type Checked struct {
	Profile *profile.Profile
	// Driver is the cloud driver's handshake answer; nil when the profile
	// has no driver.
	Driver *clouddriver.Info
	// Image is what the local Docker engine knows of ccm.image; nil when
	// the profile names none.
	Image *ccm.ImageInfo
	// NodeManagerImage is what the local Docker engine knows of
	// ccm.nodeManager.image; nil when the profile names none.
	NodeManagerImage *ccm.ImageInfo
	// CCMBinary is the CCM executable (CCMExecutable), which Run sets
	// once it has built a ccm.binary.module, before any cluster starts;
	// CheckProfile leaves it "", since it never builds.
	CCMBinary string
}

// CheckProfile checks a profile and everything it names that can be checked
// before anything starts: the profile's fields (of a ccm.binary.module only
// the fields: it is not built here, see CCMExecutable), the executables it runs,
// the CCM's image (in the local Docker engine, which must be reachable),
// the leader migration configuration, and the cloud driver's handshake
// (`info`). Every problem is an *InputError whose message is one line that
// names the profile and the field.
func CheckProfile(ctx context.Context, opts CheckOptions) (*Checked, error) {
	if opts.ProfilePath == "" {
		return nil, &InputError{errors.New("no profile: pass --provider FILE")}
	}
	p, err := profile.Load(opts.ProfilePath)
	if err != nil {
		return nil, &InputError{err}
	}
	if err := checkCCMInput(p, opts.Backend); err != nil {
		return nil, err
	}
	for i, s := range p.Services {
		if err := checkExecutable(p.ResolvePath(s.Command[0])); err != nil {
			return nil, &InputError{fmt.Errorf("profile %s: services[%d].command: %w", p.Path, i, err)}
		}
	}
	if path := p.LeaderMigrationConfig(); path != "" {
		if info, err := os.Stat(path); err != nil {
			return nil, &InputError{fmt.Errorf("profile %s: leaderMigration.config: %w", p.Path, err)}
		} else if !info.Mode().IsRegular() {
			return nil, &InputError{fmt.Errorf("profile %s: leaderMigration.config: %s is not a file", p.Path, path)}
		}
	}
	checked := &Checked{Profile: p}
	if checked.Image, err = inspectCCMImage(ctx, p); err != nil {
		return nil, err
	}
	if checked.NodeManagerImage, err = inspectNodeManagerImage(ctx, p); err != nil {
		return nil, err
	}
	if checked.Driver, err = checkDriver(ctx, p); err != nil {
		return nil, err
	}
	if opts.Backend != nil && opts.Backend.SimulatesNodes() {
		if missing := missingVerbs(checked.Driver, machineVerbs); len(missing) > 0 {
			return nil, &InputError{fmt.Errorf("profile %s: cloudDriver: the %s backend simulates its nodes and needs a cloud driver that implements %s; %s",
				p.Path, opts.Backend.Name(), quoteVerbs(machineVerbs), driverLacks(checked.Driver, missing))}
		}
	}
	return checked, nil
}

// machineVerbs are what a backend that simulates its nodes needs of the
// driver: it makes one instance per simulated machine.
var machineVerbs = []clouddriver.Verb{clouddriver.VerbInstanceCreate, clouddriver.VerbInstanceDelete}

func missingVerbs(info *clouddriver.Info, verbs []clouddriver.Verb) []clouddriver.Verb {
	if info == nil {
		return verbs
	}
	d := clouddriver.FromInfo(*info)
	var missing []clouddriver.Verb
	for _, v := range verbs {
		if !d.Supports(v) {
			missing = append(missing, v)
		}
	}
	return missing
}

func driverLacks(info *clouddriver.Info, missing []clouddriver.Verb) string {
	if info == nil {
		return "the profile has none"
	}
	return "its info answer does not list " + quoteVerbs(missing)
}

func quoteVerbs(verbs []clouddriver.Verb) string {
	q := make([]string, len(verbs))
	for i, v := range verbs {
		q[i] = fmt.Sprintf("%q", string(v))
	}
	return strings.Join(q, " and ")
}

// checkDriver runs the cloud driver's handshake before anything starts, so
// that a driver that cannot be run or answers garbage is bad input found
// at once. Nothing the run starts exists yet: ${RUN_DIR} is a scratch
// directory, removed afterwards, and ${KUBECONFIG} a path in it that does
// not exist (docs/cloud-driver.md says `info` must answer without the cloud).
func checkDriver(ctx context.Context, p *profile.Profile) (*clouddriver.Info, error) {
	drv, done, err := OpenCloudDriver(ctx, p, "")
	if err != nil || drv == nil {
		return nil, err
	}
	defer done()
	info := drv.Info()
	return &info, nil
}

// OpenCloudDriver makes the profile's cloud driver and runs its
// handshake, outside a run: for the input check and for `sweep`, which
// talk to a cloud that is already there (a real one, or a simulator
// someone runs). ${RUN_DIR} is a scratch directory that done removes, and
// ${KUBECONFIG} is kubeconfig, or a path in the scratch directory that does
// not exist. A profile without a cloud driver gives a nil driver. Errors
// are *InputError, naming the profile.
func OpenCloudDriver(ctx context.Context, p *profile.Profile, kubeconfig string) (drv *clouddriver.Driver, done func(), err error) {
	d := p.CloudDriver
	if d == nil {
		return nil, func() {}, nil
	}
	bad := func(err error) error {
		return &InputError{fmt.Errorf("profile %s: cloudDriver: %w", p.Path, err)}
	}
	scratch, err := cloudside.ScratchDir("ccm-conformance-check-")
	if err != nil {
		return nil, nil, &SetupError{Step: "checking the cloud driver", Err: err}
	}
	cleanup := func() { os.RemoveAll(scratch) }
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	if kubeconfig == "" {
		kubeconfig = filepath.Join(scratch, "kubeconfig")
	}
	in, err := cloudside.DriverInput(p, p.NewExpander(profile.ExpanderInput{RunDir: scratch, Kubeconfig: kubeconfig}))
	if err != nil {
		return nil, nil, bad(err)
	}
	if err := checkExecutable(in.Command[0]); err != nil {
		return nil, nil, bad(fmt.Errorf("command: %w", err))
	}
	if drv, err = clouddriver.New(ctx, in); err != nil {
		return nil, nil, bad(err)
	}
	return drv, cleanup, nil
}

// checkInput validates everything that needs no cluster, so that bad input
// fails in a second, not after a cluster came up.
func checkInput(ctx context.Context, opts Options) (*Checked, error) {
	if opts.ProfilePath == "" {
		return nil, &InputError{errors.New("no profile: pass --provider FILE")}
	}
	if opts.Backend == nil {
		return nil, &InputError{errNoBackend}
	}
	if opts.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(opts.LabelFilter); err != nil {
			return nil, &InputError{fmt.Errorf("--label-filter %q: %s", opts.LabelFilter, labelFilterError(err))}
		}
	}
	if opts.Lanes > 0 && opts.LaneCommand == nil {
		return nil, &InputError{errors.New("lanes need a LaneCommand")}
	}
	return CheckProfile(ctx, CheckOptions{ProfilePath: opts.ProfilePath, Backend: opts.Backend})
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

// ProfileSecrets returns the values of the ${env:NAME} variables of the
// profile at path, by NAME: what the run directory must never show. A
// profile that does not load gives none (the run reports it, with its
// other problems); an unset NAME is an *InputError naming it.
func ProfileSecrets(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	p, err := profile.Load(path)
	if err != nil {
		return nil, nil
	}
	secrets, err := p.EnvSecrets()
	if err != nil {
		return nil, &InputError{err}
	}
	return secrets, nil
}
