// Package ccm starts and stops the cloud-controller-manager under test when
// the harness runs it as a local process, and reads what a CCM executable's
// Go build info says of the module it was built from (buildinfo.go).
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package ccm

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/internal/freeport"
	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
)

// Bounds of the harness's own dealings with a CCM process.
const (
	// StopGrace is how long a CCM gets to exit after SIGTERM before it is
	// killed.
	StopGrace = 10 * time.Second
	// healthRequestTimeout bounds one request to the CCM's /healthz; the
	// wait as a whole is bounded by the caller (timeouts.ccmReady).
	healthRequestTimeout = 5 * time.Second
)

// BinaryOptions describe a CCM run from a local executable.
type BinaryOptions struct {
	// Path of the executable.
	Path string
	// Args from the profile, already expanded.
	Args []string
	// Env is the complete environment.
	Env []string
	// Kubeconfig is passed as --kubeconfig, --authentication-kubeconfig and
	// --authorization-kubeconfig unless Args set them.
	Kubeconfig string
	// LogPath receives the CCM's output.
	LogPath string
	// Name in messages; default "ccm".
	Name string
}

// Process is a CCM running as a child of the harness: the binary itself,
// or `docker run` of its image.
type Process struct {
	proc       *proc.Process
	securePort int
	command    []string
	// container is set for a CCM run from an image.
	container *container
}

// StartBinary starts the CCM. It adds the flags the harness needs unless
// the profile's args set them: the kubeconfigs, --bind-address=127.0.0.1
// and a free --secure-port, so that several CCMs never collide.
func StartBinary(opts BinaryOptions) (*Process, error) {
	if opts.Name == "" {
		opts.Name = "ccm"
	}
	info, err := os.Stat(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("ccm binary %s: %w", opts.Path, err)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("ccm binary %s: not an executable file", opts.Path)
	}
	args, port, err := harnessArgs(opts.Args, opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(opts.LogPath), 0o755); err != nil {
		return nil, err
	}
	command := append([]string{opts.Path}, args...)
	p, err := proc.Start(proc.Options{Name: opts.Name, Command: command, Env: opts.Env, LogPath: opts.LogPath})
	if err != nil {
		return nil, err
	}
	return &Process{proc: p, securePort: port, command: command}, nil
}

// harnessArgs adds to args the flags the harness needs, unless they are
// set: the kubeconfigs, --bind-address=127.0.0.1 and a free --secure-port.
// It returns the args and the secure port.
func harnessArgs(args []string, kubeconfig string) ([]string, int, error) {
	args = append([]string{}, args...)
	for _, flag := range []string{"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"} {
		if _, ok := FlagValue(args, flag); !ok {
			args = append(args, "--"+flag+"="+kubeconfig)
		}
	}
	if _, ok := FlagValue(args, "bind-address"); !ok {
		args = append(args, "--bind-address=127.0.0.1")
	}
	if v, ok := FlagValue(args, "secure-port"); ok {
		port, err := strconv.Atoi(v)
		if err != nil {
			return nil, 0, fmt.Errorf("ccm args: --secure-port=%q is not a number", v)
		}
		return args, port, nil
	}
	port, err := freeport.Port()
	if err != nil {
		return nil, 0, err
	}
	return append(args, "--secure-port="+strconv.Itoa(port)), port, nil
}

// SecurePort is where the CCM serves /healthz.
func (p *Process) SecurePort() int { return p.securePort }

// CommandLine is how the CCM was started.
func (p *Process) CommandLine() string { return proc.CommandLine(p.command) }

// Pid is the CCM's process ID (for an image, that of `docker run`).
func (p *Process) Pid() int { return p.proc.Pid() }

// Container is the name of the CCM's container, or "" for a binary.
func (p *Process) Container() string {
	if p.container == nil {
		return ""
	}
	return p.container.name
}

// Log returns everything the CCM has logged so far.
func (p *Process) Log(ctx context.Context) (string, error) { return p.proc.Log(ctx) }

// Exited reports whether the CCM has ended.
func (p *Process) Exited() bool {
	done, _ := p.proc.Exited()
	return done
}

// ExitError describes how the CCM ended, with its command line and last
// log lines, or is nil while it runs.
func (p *Process) ExitError() error {
	if !p.Exited() {
		return nil
	}
	return p.proc.ExitError()
}

// WaitReady waits until /healthz answers 200. It fails at once, quoting the
// CCM's last log lines, if the process exits first.
func (p *Process) WaitReady(ctx context.Context, timeout, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", p.securePort)
	client := insecureClient()
	var last string
	for {
		if exited, _ := p.proc.Exited(); exited {
			return p.proc.ExitError()
		}
		status, body, err := get(ctx, client, url)
		switch {
		case err != nil:
			last = err.Error()
		case status == http.StatusOK:
			return nil
		default:
			last = fmt.Sprintf("HTTP %d: %s", status, strings.TrimSpace(body))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ccm not healthy at %s within %s (last answer: %s); last log lines:\n%s", url, timeout, last, p.proc.Tail(15))
		case <-p.proc.Done():
		case <-time.After(interval):
		}
	}
}

// Healthz returns the body of /healthz?verbose, which lists each check.
func (p *Process) Healthz(ctx context.Context) (int, string, error) {
	return get(ctx, insecureClient(), fmt.Sprintf("https://127.0.0.1:%d/healthz?verbose", p.securePort))
}

// Stop ends the CCM: SIGTERM, then SIGKILL after StopGrace. A container
// is removed too, and Stop returns once the engine no longer has it.
func (p *Process) Stop(ctx context.Context) error {
	if p.container != nil {
		return p.container.stop(ctx, p.proc, StopGrace)
	}
	return p.proc.Stop(ctx, StopGrace)
}

func insecureClient() *http.Client {
	// The CCM serves a self-signed certificate on loopback; only its health
	// is read over this connection.
	return &http.Client{
		Timeout:   healthRequestTimeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
}

func get(ctx context.Context, client *http.Client, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), err
}

// FlagValue finds --name=value or --name value in args.
func FlagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		switch {
		case a == "--"+name || a == "-"+name:
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		case strings.HasPrefix(a, "--"+name+"="):
			return strings.TrimPrefix(a, "--"+name+"="), true
		case strings.HasPrefix(a, "-"+name+"="):
			return strings.TrimPrefix(a, "-"+name+"="), true
		}
	}
	return "", false
}
