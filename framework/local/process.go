package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
)

const (
	// pollInterval is how often readiness and process exit are polled.
	pollInterval = 100 * time.Millisecond
	// killWait is how long a process gets to vanish after SIGKILL.
	killWait = 10 * time.Second
	// logTailLines is how many of a log's last lines an error quotes.
	logTailLines = 20
)

// process is a running component.
type process struct {
	name      string
	binary    string
	args      []string
	logPath   string
	pid       int
	startTime uint64 // see procStartTime; 0 if unknown

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // how it exited; read only after done is closed
}

// startProcess starts binary with args in dir, its stdout and stderr
// appended to logPath.
func startProcess(name, binary string, args []string, dir, logPath string, detach bool) (*process, error) {
	p := &process{name: name, binary: binary, args: args, logPath: logPath, done: make(chan struct{})}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, &ComponentError{Component: name, Command: p.commandLine(), Err: err}
	}
	// The child gets its own descriptor of the log; this process's copy is
	// closed at once, so nothing here has to copy output or stay alive for it.
	defer logFile.Close()
	p.cmd = exec.Command(binary, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = logFile
	p.cmd.Stderr = logFile
	// A component leads a process group of its own, so that stop can
	// signal everything it started. It dies with the harness unless the
	// cluster is detached.
	if err := proc.StartCommand(p.cmd, proc.Tie{Detach: detach}); err != nil {
		return nil, &ComponentError{Component: name, Command: p.commandLine(), LogPath: logPath, Err: err}
	}
	p.pid = p.cmd.Process.Pid
	p.startTime, _ = procStartTime(p.pid)
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process: see terminate. It returns once the process has
// been reaped.
func (p *process) stop(ctx context.Context, grace time.Duration) error {
	if err := terminate(ctx, p.pid, grace, p.exited); err != nil {
		return fmt.Errorf("stopping %s (pid %d): %w", p.name, p.pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("stopping %s (pid %d): not reaped %s after it exited", p.name, p.pid, killWait)
	}
}

// terminate sends SIGTERM to the process group led by pid, waits for the
// leader to exit for up to grace (less if ctx ends first), then sends
// SIGKILL to whatever is left of the group. gone reports whether the leader
// has exited.
func terminate(ctx context.Context, pid int, grace time.Duration, gone func() bool) error {
	if !gone() {
		if err := signalGroup(pid, syscall.SIGTERM); err != nil {
			return err
		}
		waitGone(ctx, grace, gone)
	}
	if err := signalGroup(pid, syscall.SIGKILL); err != nil {
		return err
	}
	if !waitGone(context.WithoutCancel(ctx), killWait, gone) {
		return fmt.Errorf("still running %s after SIGKILL", killWait)
	}
	return nil
}

// waitGone polls gone until it holds, d passes or ctx ends, and reports the
// last answer.
func waitGone(ctx context.Context, d time.Duration, gone func() bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	ticker := time.NewTicker(pollInterval / 4)
	defer ticker.Stop()
	for !gone() {
		select {
		case <-ctx.Done():
			return gone()
		case <-timer.C:
			return gone()
		case <-ticker.C:
		}
	}
	return true
}

// signalGroup signals the process group pgid; a group that no longer exists
// is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending %v to process group %d: %w", sig, pgid, err)
	}
	return nil
}

// pidAlive reports whether pid names a process that has not exited.
func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	return !isZombie(pid)
}

// commandLine renders the process's command as a shell would take it.
func (p *process) commandLine() string { return commandLine(p.binary, p.args) }

func commandLine(binary string, args []string) string {
	return proc.CommandLine(append([]string{binary}, args...))
}

// ComponentError is a component of the local cluster that failed to start
// or become ready. Its message quotes the command line and the last lines of
// the component's log.
type ComponentError struct {
	// Component is etcd, kube-apiserver or kube-controller-manager.
	Component string
	// Command is the command line it was started with.
	Command string
	// LogPath is the file its output went to; it may be gone by the time
	// the error is read if the cluster's directory was temporary.
	LogPath string
	// LogTail holds the last lines of its log.
	LogTail []string
	// Err is what went wrong.
	Err error
}

func (e *ComponentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %v\ncommand: %s", e.Component, e.Err, e.Command)
	if len(e.LogTail) > 0 {
		fmt.Fprintf(&b, "\nlast lines of %s:", e.LogPath)
		for _, l := range e.LogTail {
			b.WriteString("\n  " + l)
		}
	}
	return b.String()
}

func (e *ComponentError) Unwrap() error { return e.Err }
