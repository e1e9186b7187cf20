package drivercheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ccm-conformance/ccm-conformance/framework/cloudside"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Environment is what a profile gives the check: the cloud its services
// make (a simulator), and the driver's environment and deadline.
type Environment struct {
	// Input has the driver's Env and CallTimeout from the profile, and its
	// Command when the profile has one.
	Input Input
	// Stop stops the services and removes their scratch directory.
	Stop func(ctx context.Context) error
}

// FromProfile loads a profile and starts its services (a cloud
// simulator, say) as a run would, in a scratch ${RUN_DIR}; ${KUBECONFIG}
// names a file that does not exist, since no cluster runs. The driver gets
// cloudDriver.env and timeouts.cloudDriverCall. A profile that does not
// load or a service that does not start is an *InputError; nothing is
// left running then.
func FromProfile(ctx context.Context, path string) (*Environment, error) {
	p, err := profile.Load(path)
	if err != nil {
		return nil, &InputError{err}
	}
	runDir, err := cloudside.ScratchDir("ccmc-driver-")
	if err != nil {
		return nil, err
	}
	var services []*cloudside.Service
	stop := func(ctx context.Context) error {
		var errs []error
		for i := len(services) - 1; i >= 0; i-- {
			errs = append(errs, services[i].Stop(ctx))
		}
		return errors.Join(append(errs, os.RemoveAll(runDir))...)
	}
	bad := func(err error) (*Environment, error) {
		stopCtx, cancel := context.WithTimeout(context.Background(), 2*cloudside.ServiceStopGrace)
		defer cancel()
		return nil, &InputError{errors.Join(err, stop(stopCtx))}
	}
	e := p.NewExpander(profile.ExpanderInput{RunDir: runDir, Kubeconfig: filepath.Join(runDir, "kubeconfig")})
	for _, s := range p.Services {
		svc, err := cloudside.StartService(ctx, p, e, s, runDir)
		if svc != nil {
			services = append(services, svc)
		}
		if err != nil {
			return bad(fmt.Errorf("profile %s: service %s: %w", p.Path, s.Name, err))
		}
	}
	env := &Environment{Input: Input{CallTimeout: p.Timeout(profile.CloudDriverCall)}, Stop: stop}
	if p.CloudDriver != nil {
		in, err := cloudside.DriverInput(p, e)
		if err != nil {
			return bad(fmt.Errorf("profile %s: cloudDriver: %w", p.Path, err))
		}
		env.Input.Command, env.Input.Env = in.Command, in.Env
	}
	return env, nil
}
