package proc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Tie says how a child's life is bound to the harness's.
type Tie struct {
	// DeathSignal is what the kernel sends the child when the harness dies
	// (Linux only): SIGKILL, the default, for a child with nothing to
	// clean up; SIGTERM for one that tears down what it made (a lane).
	DeathSignal syscall.Signal
	// Detach lets the child outlive the harness instead: it gets a
	// session of its own, away from the harness's terminal and its
	// hangups, and no death signal (a detached local cluster).
	Detach bool
}

// StartCommand starts cmd as a child of the run. The child leads a process
// group of its own, so that stopping it can signal everything it started,
// and is tied to the harness as tie says. Every child of the run is started
// here, from one OS thread (see forkThread).
func StartCommand(cmd *exec.Cmd, tie Tie) error {
	cmd.SysProcAttr = sysProcAttr(tie)
	var err error
	forkThread.run(func() { err = cmd.Start() })
	return err
}

// forkThread starts every child from one OS thread that lives as long as
// the harness. Linux sends a child its death signal when the thread that
// forked it exits, not the process; Go ends a thread when a goroutine
// locked to it exits, so a child forked from an arbitrary thread could be
// killed by unrelated code that locks that thread later.
var forkThread = &launcher{}

type launcher struct {
	once  sync.Once
	calls chan func()
}

// run calls f on the launcher's thread and returns when f has returned.
func (l *launcher) run(f func()) {
	l.once.Do(func() {
		l.calls = make(chan func())
		go l.loop()
	})
	done := make(chan struct{})
	l.calls <- func() {
		defer close(done)
		f()
	}
	<-done
}

func (l *launcher) loop() {
	// Never unlocked and never returns: the thread lives until the
	// harness exits.
	runtime.LockOSThread()
	for f := range l.calls {
		f()
	}
}
