// Package firstline shortens a message of many lines (a command's output,
// an error from another process) to its first, for one-line errors,
// progress lines and table cells. A leaf: it imports the standard library
// only.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package firstline

import "strings"

// Of returns the first line of s that is not blank, trimmed; "" when
// every line is blank.
func Of(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}

// Marked is Of(s), followed by " …" when s has more to say after that
// line, so that a reader knows it was cut.
func Marked(s string) string {
	_, rest, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if strings.TrimSpace(rest) == "" {
		return Of(s)
	}
	return Of(s) + " …"
}
