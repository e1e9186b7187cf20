// Package plainlog is the harness's logr sink: one plain line per entry,
// "<prefix> <name>: <message> key=value ...", for a person reading a run's
// output rather than a log collector. The runner writes its progress
// through it and hands the same logger, through the context, to the code
// it calls (the local cluster, the simulated nodes), so that a run has one
// logger (logr, which the Kubernetes code the project links uses too).
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package plainlog

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// New returns a logger that writes the entries up to verbosity v to w,
// each line starting with prefix.
func New(w io.Writer, prefix string, v int) logr.Logger {
	return logr.New(&sink{out: &lockedWriter{w: w}, prefix: prefix, verbosity: v})
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) writeLine(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, s)
}

type sink struct {
	out       *lockedWriter
	prefix    string
	verbosity int
	name      string
	values    []any
}

func (s *sink) Init(logr.RuntimeInfo) {}

func (s *sink) Enabled(level int) bool { return level <= s.verbosity }

func (s *sink) Info(_ int, msg string, kv ...any) { s.write(msg, nil, kv) }

func (s *sink) Error(err error, msg string, kv ...any) { s.write(msg, err, kv) }

func (s *sink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any(nil), s.values...), kv...)
	return &c
}

func (s *sink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "/" + name
	}
	c.name = name
	return &c
}

func (s *sink) write(msg string, err error, kv []any) {
	var b strings.Builder
	if s.prefix != "" {
		b.WriteString(s.prefix + " ")
	}
	if s.name != "" {
		b.WriteString(s.name + ": ")
	}
	b.WriteString(msg)
	if err != nil {
		b.WriteString(": " + err.Error())
	}
	pairs := append(append([]any(nil), s.values...), kv...)
	for i := 0; i < len(pairs); i += 2 {
		var value any = "(missing)"
		if i+1 < len(pairs) {
			value = pairs[i+1]
		}
		fmt.Fprintf(&b, " %v=%s", pairs[i], quote(fmt.Sprint(value)))
	}
	b.WriteString("\n")
	s.out.writeLine(b.String())
}

// quote leaves a plain value as it is and quotes one a reader could not
// tell apart from the next pair.
func quote(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\n\"=") {
		return fmt.Sprintf("%q", v)
	}
	return v
}
