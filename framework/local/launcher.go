package local

import "runtime"

// launcher starts processes from one OS thread that lives as long as the
// cluster. Linux sends a child's Pdeathsig when the thread that forked it
// exits, not the process; Go ends a thread when a goroutine locked to it
// exits, so a component forked from an arbitrary thread could be killed by
// unrelated code that locks that thread later. Forking from a thread this
// package owns rules that out.
type launcher struct {
	calls chan func()
	quit  chan struct{}
}

func newLauncher() *launcher {
	l := &launcher{calls: make(chan func()), quit: make(chan struct{})}
	go l.loop()
	return l
}

func (l *launcher) loop() {
	// Never unlocked: once close is called and this goroutine returns, the
	// thread ends too, and with it (through Pdeathsig) any component that
	// is somehow still running.
	runtime.LockOSThread()
	for {
		select {
		case f := <-l.calls:
			f()
		case <-l.quit:
			return
		}
	}
}

// run calls f on the launcher's thread and returns when f has returned.
func (l *launcher) run(f func()) {
	done := make(chan struct{})
	l.calls <- func() {
		defer close(done)
		f()
	}
	<-done
}

// close ends the launcher's thread; run must not be called after.
func (l *launcher) close() { close(l.quit) }
