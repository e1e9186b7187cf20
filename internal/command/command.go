// Package command describes an external command the harness ran (the go
// command, docker, debootstrap, git) for messages: its command line as a
// shell would take it, and the one error type of a command that failed,
// which carries the line, where it ran, how it ended and the last lines of
// its output.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package command

import (
	"fmt"
	"strconv"
	"strings"
)

// TailLines is how many of the last lines of a command's output an Error
// keeps.
const TailLines = 40

// Error is an external command that failed.
type Error struct {
	// Command is the command line (Line), led by the environment it set.
	Command string
	// Dir is the directory it ran in; "" for the harness's own.
	Dir string
	// Output holds the last lines of what it printed (Tail).
	Output []string
	// Err is how it ended.
	Err error
}

// Error is one line when the command printed at most one, so that a short
// command's failure reads as one line; otherwise the output's last lines
// follow, indented.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Command)
	if e.Dir != "" {
		fmt.Fprintf(&b, " (in %s)", e.Dir)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	switch len(e.Output) {
	case 0:
	case 1:
		b.WriteString(": " + strings.TrimSpace(e.Output[0]))
	default:
		b.WriteString("\nlast lines of output:")
		for _, l := range e.Output {
			b.WriteString("\n  " + l)
		}
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Said reports whether the command's output contains s, ignoring case.
func (e *Error) Said(s string) bool {
	return strings.Contains(strings.ToLower(strings.Join(e.Output, "\n")), strings.ToLower(s))
}

// Tail returns the last n lines of s; nil when s is empty.
func Tail(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// Line renders a command as a shell would take it, led by its
// environment overrides: each word quoted where a shell would split or
// expand it.
func Line(name string, env, args []string) string {
	parts := make([]string, 0, len(env)+1+len(args))
	for _, e := range env {
		parts = append(parts, quote(e))
	}
	parts = append(parts, quote(name))
	for _, a := range args {
		parts = append(parts, quote(a))
	}
	return strings.Join(parts, " ")
}

func quote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\$`;&|<>*?()[]{}!#~") {
		return s
	}
	return strconv.Quote(s)
}
