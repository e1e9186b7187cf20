package prow

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// BuildLog is build-log.txt: everything the run prints, as Spyglass shows
// it. Tee it into the run's output streams.
type BuildLog struct {
	mu   sync.Mutex
	f    *os.File
	werr error
}

// CreateBuildLog creates (or truncates) dir/build-log.txt.
func CreateBuildLog(dir string) (*BuildLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, BuildLogFile))
	if err != nil {
		return nil, err
	}
	return &BuildLog{f: f}, nil
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
