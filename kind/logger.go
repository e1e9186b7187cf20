package kind

import (
	"fmt"
	"io"
	"strings"
	"sync"

	kindlog "sigs.k8s.io/kind/pkg/log"
)

// logger turns the kind library's user-facing messages (V(0), warnings,
// errors) into progress lines; its debug levels are dropped.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func newLogger(w io.Writer) *logger { return &logger{w: w} }

func (l *logger) line(prefix, msg string) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "kind: %s%s\n", prefix, msg)
}

func (l *logger) Warn(m string)             { l.line("WARNING: ", strings.TrimPrefix(m, "WARNING: ")) }
func (l *logger) Warnf(f string, a ...any)  { l.Warn(fmt.Sprintf(f, a...)) }
func (l *logger) Error(m string)            { l.line("ERROR: ", m) }
func (l *logger) Errorf(f string, a ...any) { l.line("ERROR: ", fmt.Sprintf(f, a...)) }
func (l *logger) V(v kindlog.Level) kindlog.InfoLogger {
	if v > 0 {
		return kindlog.NoopInfoLogger{}
	}
	return info{l}
}

type info struct{ l *logger }

func (i info) Info(m string)            { i.l.line("", m) }
func (i info) Infof(f string, a ...any) { i.l.line("", fmt.Sprintf(f, a...)) }
func (i info) Enabled() bool            { return true }
