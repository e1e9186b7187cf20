// Package cloudside brings up the cloud side of a provider profile: its
// services (a cloud simulator, say), each waited for through its ready
// file, and its cloud driver with the protocol's handshake. It is the one
// piece of code that a run (framework/runner), the input check and sweep
// (runner.OpenCloudDriver) and validate-driver (checks/drivercheck)
// share, so that a profile's cloud comes up the same way in each.
//
// Floor: framework. It stands on framework/profile, framework/clouddriver
// and the process launcher; nothing of the runner, suites or reports.
package cloudside

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

const (
	// ServiceStopGrace is how long a profile service gets to exit after
	// SIGTERM.
	ServiceStopGrace = 10 * time.Second
	// readyFilePoll is how often the wait for a ready file looks.
	readyFilePoll = 50 * time.Millisecond
	// maxScratchBase is the longest temporary directory a scratch
	// directory goes under: services often listen on a unix socket in
	// ${RUN_DIR}, whose path the kernel limits to 108 bytes.
	maxScratchBase = 48
)

// ScratchDir makes a private directory for one run or check, a profile's
// ${RUN_DIR}: under $TMPDIR, unless that path is so long that unix sockets
// below it would pass the kernel's limit; then under /tmp. The caller
// removes it.
func ScratchDir(pattern string) (string, error) {
	return os.MkdirTemp(ScratchBase(), pattern)
}

// ScratchBase is where ScratchDir makes its directories.
func ScratchBase() string {
	base := os.TempDir()
	if len(base) > maxScratchBase {
		if info, err := os.Stat("/tmp"); err == nil && info.IsDir() {
			return "/tmp"
		}
	}
	return base
}

// Service is a profile service that started.
type Service struct {
	*proc.Process
	Name string
}

// Stop stops the service, giving it ServiceStopGrace after SIGTERM.
func (s *Service) Stop(ctx context.Context) error { return s.Process.Stop(ctx, ServiceStopGrace) }

// StartService starts the profile service s, its log in logDir, and waits
// for its ready file (timeouts.serviceReady). The service is returned
// whenever it started, also with an error, so that the caller stops it.
func StartService(ctx context.Context, p *profile.Profile, e *profile.Expander, s profile.Service, logDir string) (*Service, error) {
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
		Name:    "service " + s.Name,
		Command: command,
		Env:     env,
		LogPath: filepath.Join(logDir, "service-"+s.Name+".log"),
	})
	if err != nil {
		return nil, err
	}
	svc := &Service{Process: pr, Name: s.Name}
	if s.ReadyFile == "" {
		return svc, nil
	}
	timeout := p.Timeout(profile.ServiceReady)
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(ready); err == nil {
			return svc, nil
		}
		if exited, _ := pr.Exited(); exited {
			return svc, pr.ExitError()
		}
		if time.Now().After(deadline) {
			return svc, fmt.Errorf("%s did not appear within %s (timeouts.%s); last log lines:\n%s", ready, timeout, profile.ServiceReady, pr.Tail(10))
		}
		select {
		case <-ctx.Done():
			return svc, ctx.Err()
		case <-time.After(readyFilePoll):
		}
	}
}

// DriverInput is the profile's cloud driver as expanded for one run or
// check: its command line (the executable resolved against the
// profile's directory), environment and deadline per call.
func DriverInput(p *profile.Profile, e *profile.Expander) (clouddriver.Options, error) {
	d := p.CloudDriver
	if d == nil {
		return clouddriver.Options{}, fmt.Errorf("the profile has no cloudDriver")
	}
	command, err := e.ExpandAll(d.Command)
	if err != nil {
		return clouddriver.Options{}, fmt.Errorf("command: %w", err)
	}
	command[0] = p.ResolvePath(command[0])
	env, err := e.Environ(d.Env)
	if err != nil {
		return clouddriver.Options{}, fmt.Errorf("env: %w", err)
	}
	return clouddriver.Options{Command: command, Env: env, CallTimeout: p.Timeout(profile.CloudDriverCall)}, nil
}
