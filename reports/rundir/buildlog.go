package rundir

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// BuildLog is build-log.txt: everything the run prints, as Spyglass shows
// it. Tee it into the run's output streams. The file is created (or
// truncated) by the first write, so that a command that fails on bad input
// before printing anything leaves no run directory behind.
type BuildLog struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	opened bool
	closed bool
	werr   error
}

// NewBuildLog returns the build log of the run directory dir.
func NewBuildLog(dir string) *BuildLog {
	return &BuildLog{path: filepath.Join(dir, prow.BuildLogFile)}
}

// Opened reports whether anything was written to the log.
func (l *BuildLog) Opened() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opened
}

func (l *BuildLog) open() {
	l.opened = true
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		l.werr = fmt.Errorf("creating %s: %w", l.path, err)
		return
	}
	f, err := os.Create(l.path)
	if err != nil {
		l.werr = fmt.Errorf("creating %s: %w", l.path, err)
		return
	}
	l.f = f
}

// Tee returns a writer that writes to w and to the build log. A failure to
// write the build log never fails a write to w: it is kept and returned by
// Close.
func (l *BuildLog) Tee(w io.Writer) io.Writer {
	return teeWriter{w: w, log: l}
}

// Write appends p to the build log only.
func (l *BuildLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opened && !l.closed {
		l.open()
	}
	if l.werr == nil && l.f != nil {
		if _, err := l.f.Write(p); err != nil {
			l.werr = fmt.Errorf("writing %s: %w", l.f.Name(), err)
		}
	}
	return len(p), nil
}

// Close closes the file and returns the first error writing it.
func (l *BuildLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.f == nil {
		return l.werr
	}
	err := l.f.Close()
	l.f = nil
	if l.werr != nil {
		return l.werr
	}
	return err
}

type teeWriter struct {
	w   io.Writer
	log *BuildLog
}

func (t teeWriter) Write(p []byte) (int, error) {
	_, _ = t.log.Write(p)
	return t.w.Write(p)
}
