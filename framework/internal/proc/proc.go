// Package proc starts and stops the child processes of a run. StartCommand
// is the one way a child is started (the local cluster's components, the
// lanes, the CCM under test, profile services): from one OS thread, in a
// process group of its own, dying with the harness unless detached. Start
// adds, for the CCM and profile services, a log file for stdout and stderr
// and a stop that escalates from SIGTERM to SIGKILL.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/command"
)

// Options describe one child process.
type Options struct {
	// Name identifies the process in errors.
	Name string
	// Command is the executable and its arguments.
	Command []string
	// Env is the complete environment; nil inherits the harness's.
	Env []string
	// LogPath receives stdout and stderr.
	LogPath string
}

// Process is a running child.
type Process struct {
	opts    Options
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}

	mu      sync.Mutex
	waitErr error
}

// Start runs the command. The executable must exist; the error names it.
func Start(opts Options) (*Process, error) {
	if len(opts.Command) == 0 {
		return nil, fmt.Errorf("%s: empty command", opts.Name)
	}
	path, err := exec.LookPath(opts.Command[0])
	if err != nil {
		return nil, fmt.Errorf("%s: executable %s: %w", opts.Name, opts.Command[0], err)
	}
	logFile, err := os.OpenFile(opts.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: log file: %w", opts.Name, err)
	}
	cmd := exec.Command(path, opts.Command[1:]...)
	cmd.Env = opts.Env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := StartCommand(cmd, Tie{}); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s: starting %s: %w", opts.Name, CommandLine(opts.Command), err)
	}
	p := &Process{opts: opts, cmd: cmd, logFile: logFile, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.waitErr
	default:
		return false, nil
	}
}

// ExitError describes a process that ended when it should not have. It
// quotes the command line and the last lines of its log.
func (p *Process) ExitError() error {
	_, err := p.Exited()
	state := "exited"
	if err != nil {
		state = err.Error()
	}
	return fmt.Errorf("%s %s (command: %s); last log lines:\n%s", p.opts.Name, state, CommandLine(p.opts.Command), p.Tail(15))
}

// Tail returns the last n lines of the log.
func (p *Process) Tail(n int) string {
	return strings.Join(LogTail(p.opts.LogPath, n), "\n")
}

// LogTail returns the last n lines of the file at path, or a line saying
// why it could not be read. It reads at most the last 64 KiB.
func LogTail(path string, n int) []string {
	const maxRead = 64 * 1024
	f, err := os.Open(path)
	if err != nil {
		return []string{fmt.Sprintf("(log unreadable: %v)", err)}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return []string{fmt.Sprintf("(log unreadable: %v)", err)}
	}
	offset := max(info.Size()-maxRead, 0)
	buf := make([]byte, info.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return []string{fmt.Sprintf("(log unreadable: %v)", err)}
	}
	text := strings.TrimRight(string(buf), "\n")
	if text == "" {
		return []string{"(log is empty)"}
	}
	lines := strings.Split(text, "\n")
	if offset > 0 && len(lines) > 1 {
		lines = lines[1:] // the first line read is likely cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// Log returns the whole log.
func (p *Process) Log(context.Context) (string, error) {
	data, err := os.ReadFile(p.opts.LogPath)
	return string(bytes.ToValidUTF8(data, []byte("?"))), err
}

// Stop sends SIGTERM to the process group, then SIGKILL once grace has
// passed or ctx ends. A process that already exited is not an error.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	if exited, _ := p.Exited(); exited {
		return nil
	}
	pgid := p.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: SIGTERM: %w", p.opts.Name, err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: SIGKILL: %w", p.opts.Name, err)
	}
	<-p.done
	return nil
}

// CommandLine renders a command as a shell would take it (command.Line).
func CommandLine(args []string) string { return command.Line(args[0], nil, args[1:]) }
