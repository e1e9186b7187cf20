package drivercheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Bounds of the profile's services.
const (
	// serviceStopGrace is how long a service may take to stop on SIGTERM.
	serviceStopGrace = 5 * time.Second
	// readyFilePoll is how often a service's readyFile is looked for.
	readyFilePoll = 50 * time.Millisecond
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
	base := os.TempDir()
	// The services often listen on a unix socket in ${RUN_DIR}, whose
	// path the kernel limits to 108 bytes.
	if len(base) > 40 {
		base = "/tmp"
	}
	runDir, err := os.MkdirTemp(base, "ccmc-driver-")
	if err != nil {
		return nil, err
	}
	var procs []*proc.Process
	stop := func(ctx context.Context) error {
		var errs []error
		for i := len(procs) - 1; i >= 0; i-- {
			errs = append(errs, procs[i].Stop(ctx, serviceStopGrace))
		}
		return errors.Join(append(errs, os.RemoveAll(runDir))...)
	}
	bad := func(err error) (*Environment, error) {
		stopCtx, cancel := context.WithTimeout(context.Background(), 2*serviceStopGrace)
		defer cancel()
		return nil, &InputError{errors.Join(err, stop(stopCtx))}
	}
	e := p.NewExpander(profile.ExpanderInput{RunDir: runDir, Kubeconfig: filepath.Join(runDir, "kubeconfig")})
	for _, s := range p.Services {
		pr, err := startService(ctx, p, e, s, runDir)
		if pr != nil {
			procs = append(procs, pr)
		}
		if err != nil {
			return bad(fmt.Errorf("profile %s: service %s: %w", p.Path, s.Name, err))
		}
	}
	env := &Environment{Input: Input{CallTimeout: p.Timeout(profile.CloudDriverCall)}, Stop: stop}
	if d := p.CloudDriver; d != nil {
		command, err := e.ExpandAll(d.Command)
		if err != nil {
			return bad(fmt.Errorf("profile %s: cloudDriver.command: %w", p.Path, err))
		}
		command[0] = p.ResolvePath(command[0])
		env.Input.Command = command
		if env.Input.Env, err = e.Environ(d.Env); err != nil {
			return bad(fmt.Errorf("profile %s: cloudDriver.env: %w", p.Path, err))
		}
	}
	return env, nil
}

// startService starts one service and waits for its readyFile.
func startService(ctx context.Context, p *profile.Profile, e *profile.Expander, s profile.Service, runDir string) (*proc.Process, error) {
	command, err := e.ExpandAll(s.Command)
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	command[0] = p.ResolvePath(command[0])
	env, err := e.Environ(s.Env)
	if err != nil {
		return nil, err
	}
	ready, err := e.Expand(s.ReadyFile)
	if err != nil {
		return nil, fmt.Errorf("readyFile: %w", err)
	}
	pr, err := proc.Start(proc.Options{
		Name: "service " + s.Name, Command: command, Env: env,
		LogPath: filepath.Join(runDir, "service-"+s.Name+".log"),
	})
	if err != nil {
		return nil, err
	}
	if s.ReadyFile == "" {
		return pr, nil
	}
	timeout := p.Timeout(profile.ServiceReady)
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(ready); err == nil {
			return pr, nil
		}
		if exited, _ := pr.Exited(); exited {
			return pr, pr.ExitError()
		}
		if time.Now().After(deadline) {
			return pr, fmt.Errorf("%s did not appear within %s (timeouts.%s); last log lines:\n%s", ready, timeout, profile.ServiceReady, pr.Tail(10))
		}
		select {
		case <-ctx.Done():
			return pr, ctx.Err()
		case <-time.After(readyFilePoll):
		}
	}
}
