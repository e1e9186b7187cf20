package framework

import (
	"regexp"
	"strings"

	"github.com/onsi/ginkgo/v2"
)

// Fail is the fail handler the runner gives gomega: ginkgo.Fail with the
// message rearranged by FailureMessage, so that a failure starts with what
// was expected, what was seen and on which object.
func Fail(message string, callerSkip ...int) {
	skip := 0
	if len(callerSkip) > 0 {
		skip = callerSkip[0]
	}
	ginkgo.Fail(FailureMessage(message), skip+1)
}

// asyncPreamble is how gomega starts the failure of Eventually and
// Consistently: "Timed out after 30.001s.", "Failed after 0.512s.", "Told
// to stop trying after 1.204s.", "Context was cancelled after ...".
var asyncPreamble = regexp.MustCompile(`^((?:Timed out|Failed|Told to stop trying|No future change is possible|Context was cancelled)[^\n]*?) after (\d+(?:\.\d+)?)s\.\n`)

// asyncLocation is the line gomega puts before the failure of the check
// a Gomega-taking function made.
var asyncLocation = regexp.MustCompile(`(?m)^The function passed to (?:Eventually|Consistently) failed at (\S+:\d+) with:\n`)

// errorBlock is how gomega shows an error value: a header line, then the
// error's text and its fields indented by four spaces.
var errorBlock = regexp.MustCompile(`(?m)^(?:Unexpected error:|Expected success, but got an error:|The function passed to (?:Eventually|Consistently) returned the following error:)\n    <[^\n]*>: ?\n`)

// FailureMessage rearranges a gomega failure message so that its first
// line is the spec's own sentence (what was expected and seen, on which
// object) or, where the spec gave none, the text of the error that failed
// it. Dashboards cut long messages: TestGrid keeps 70 characters from each
// end. What gomega puts first (how long an Eventually waited and where,
// the type and address of an error) follows, as context.
func FailureMessage(message string) string {
	var outcome, location string
	rest := message
	if m := asyncPreamble.FindStringSubmatch(rest); m != nil {
		outcome = strings.ToLower(m[1][:1]) + m[1][1:] + " after " + m[2] + "s"
		rest = rest[len(m[0]):]
	}
	if loc := asyncLocation.FindStringSubmatchIndex(rest); loc != nil {
		location = rest[loc[2]:loc[3]]
		// An outer description (given to Should) comes before the
		// inner check's; both are the spec's words.
		rest = rest[:loc[0]] + rest[loc[1]:]
	}
	rest = leadWithError(rest)
	if outcome == "" && location == "" {
		return rest
	}
	var tail []string
	if outcome != "" {
		tail = append(tail, outcome)
	}
	if location != "" {
		tail = append(tail, "the failing check is at "+location)
	}
	return strings.TrimRight(rest, "\n") + "\n(" + strings.Join(tail, "; ") + ")"
}

// leadWithError lifts the text of the first error block in message to the
// front, after the description lines that precede it: "creating Service
// ns/web: the server is unavailable". The block itself (type, fields)
// stays below.
func leadWithError(message string) string {
	loc := errorBlock.FindStringIndex(message)
	if loc == nil {
		return message
	}
	var text []string
	for _, line := range strings.Split(message[loc[1]:], "\n") {
		if !strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "    {") {
			break
		}
		text = append(text, strings.TrimPrefix(line, "    "))
	}
	errText := strings.TrimSpace(strings.Join(text, " "))
	if errText == "" {
		return message
	}
	desc := strings.TrimRight(message[:loc[0]], "\n")
	details := message[loc[0]:]
	if desc == "" {
		return errText + "\n" + details
	}
	var parts []string
	for _, line := range strings.Split(desc, "\n") {
		if line = strings.TrimRight(strings.TrimSpace(line), ".:;"); line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(append(parts, errText), ": ") + "\n" + details
}
