// Package drivercheck checks a cloud driver against the cloud-driver
// protocol (docs/cloud-driver.md, "Checking a driver"): it asks the driver
// which verbs it implements and calls each with real arguments, checking
// exit codes and the JSON each answers against the protocol's schema.
// Read-only verbs are called on what the cloud has; mutating verbs only on
// objects the check made itself, which it removes afterwards.
//
// Floor: the checks, which only commands call. This one stands on the
// framework's cloud side and driver client, and on the driver SDK.
package drivercheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"

	"github.com/ccm-conformance/ccm-conformance/framework"
)

// Outcome is the verdict on one verb.
type Outcome string

// The outcomes.
const (
	Pass Outcome = "PASS"
	Fail Outcome = "FAIL"
	Skip Outcome = "SKIP"
)

// Result is the verdict on one verb of the protocol.
type Result struct {
	Verb    clouddriver.Verb
	Outcome Outcome
	// Detail says what was checked, what failed, or why the verb was
	// not called.
	Detail string
}

// String is the result's line: "PASS instance get: ...".
func (r Result) String() string { return fmt.Sprintf("%s %s: %s", r.Outcome, r.Verb, r.Detail) }

// Report is every verb's result, in the protocol's order.
type Report struct {
	// Driver is the driver executable's base name.
	Driver  string
	Results []Result
}

// Failed reports whether any verb failed.
func (r *Report) Failed() bool {
	for _, res := range r.Results {
		if res.Outcome == Fail {
			return true
		}
	}
	return false
}

// Summary is the report's last line.
func (r *Report) Summary() string {
	count := map[Outcome]int{}
	for _, res := range r.Results {
		count[res.Outcome]++
	}
	verdict := "conforms"
	if r.Failed() {
		verdict = "does not conform"
	}
	return fmt.Sprintf("cloud driver %s %s to protocol %s: %d passed, %d failed, %d skipped",
		r.Driver, verdict, clouddriver.ProtocolVersion, count[Pass], count[Fail], count[Skip])
}

// InputError is bad input to the check (a driver that cannot be found, a
// profile that does not load): exit code 2, not a verdict on the driver.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Input says which driver to check.
type Input struct {
	// Command is the driver executable and its fixed arguments. Required.
	Command []string
	// Env is the driver's complete environment; nil inherits this
	// process's.
	Env []string
	// CallTimeout bounds one call; default clouddriver.DefaultCallTimeout.
	CallTimeout time.Duration
	// NamePrefix starts the names of the objects the check makes; default
	// "ccmc-check". A random suffix follows.
	NamePrefix string
	// NewName makes a unique name from a prefix; default a random suffix
	// of five letters and digits.
	NewName func(prefix string) string
}

// Verbs is the protocol's verbs in the order the report lists them.
var Verbs = []clouddriver.Verb{
	clouddriver.VerbInfo,
	clouddriver.VerbInstancesList, clouddriver.VerbInstanceGet, clouddriver.VerbInstanceCreate,
	clouddriver.VerbInstanceStop, clouddriver.VerbInstanceStart, clouddriver.VerbInstanceSetAddresses,
	clouddriver.VerbInstanceDelete,
	clouddriver.VerbLoadBalancerGet, clouddriver.VerbLoadBalancersList,
	clouddriver.VerbRoutesList, clouddriver.VerbRouteCreate, clouddriver.VerbRouteDelete,
	clouddriver.VerbFaultInject, clouddriver.VerbFaultClear,
	clouddriver.VerbCallsList,
}

// answer is one raw call's outcome.
type answer struct {
	exit   int
	stdout []byte
	stderr string
	// obj is stdout decoded as one JSON object, when it is one.
	obj map[string]json.RawMessage
	// err is why the call broke the protocol or could not be made; nil
	// when it exited (0 or not) with well-formed output.
	err error
}

// checker holds one check's state.
type checker struct {
	in      Input
	listed  map[clouddriver.Verb]bool
	results map[clouddriver.Verb]*Result
}

// Check runs the check. An error is bad input (an *InputError): the driver
// cannot be found or run. Everything the driver answers, even a handshake
// that is garbage, is a result in the report.
func Check(ctx context.Context, in Input) (*Report, error) {
	if len(in.Command) == 0 || strings.TrimSpace(in.Command[0]) == "" {
		return nil, &InputError{errors.New("--driver: no cloud driver command given")}
	}
	if _, err := exec.LookPath(in.Command[0]); err != nil {
		return nil, &InputError{fmt.Errorf("cloud driver %s: %w", in.Command[0], unwrapExec(err))}
	}
	if in.CallTimeout <= 0 {
		in.CallTimeout = clouddriver.DefaultCallTimeout
	}
	if in.NamePrefix == "" {
		in.NamePrefix = "ccmc-check"
	}
	if in.NewName == nil {
		in.NewName = framework.UniqueName
	}
	c := &checker{in: in, listed: map[clouddriver.Verb]bool{}, results: map[clouddriver.Verb]*Result{}}
	c.run(ctx)
	rep := &Report{Driver: filepath.Base(in.Command[0])}
	for _, v := range Verbs {
		r := c.results[v]
		if r == nil {
			r = &Result{Verb: v, Outcome: Skip, Detail: "not listed by info"}
		}
		rep.Results = append(rep.Results, *r)
	}
	return rep, nil
}

// unwrapExec drops the repetitions of the path from a lookup error.
func unwrapExec(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

// call runs one verb with a request and returns what came back.
func (c *checker) call(ctx context.Context, verb clouddriver.Verb, request any) answer {
	input, err := json.Marshal(request)
	if err != nil {
		return answer{err: fmt.Errorf("encoding the request: %w", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, c.in.CallTimeout)
	defer cancel()
	args := append(append([]string{}, c.in.Command[1:]...), strings.Fields(string(verb))...)
	cmd := exec.CommandContext(ctx, c.in.Command[0], args...)
	cmd.Env = c.in.Env
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	runErr := cmd.Run()
	a := answer{stdout: stdout.Bytes(), stderr: oneLine(stderr.String())}
	if ctx.Err() == context.DeadlineExceeded {
		a.err = fmt.Errorf("did not answer within %s", c.in.CallTimeout)
		return a
	}
	if runErr != nil {
		var exitErr *exec.ExitError
		if !errors.As(runErr, &exitErr) {
			a.err = fmt.Errorf("could not be run: %w", runErr)
			return a
		}
		a.exit = exitErr.ExitCode()
		return a
	}
	dec := json.NewDecoder(bytes.NewReader(a.stdout))
	if err := dec.Decode(&a.obj); err != nil {
		a.err = fmt.Errorf("answered with invalid JSON (%v): %q", err, truncate(string(a.stdout), 300))
		return a
	}
	if dec.More() {
		a.err = fmt.Errorf("printed more than one JSON value: %q", truncate(string(a.stdout), 300))
		return a
	}
	if a.obj == nil {
		a.err = fmt.Errorf("answered %q, not a JSON object", truncate(strings.TrimSpace(string(a.stdout)), 300))
		return a
	}
	// Every answer is held to the protocol's JSON Schema first (the one
	// drivers in other languages validate against, driversdk/schema);
	// the checks of each verb then look at what a schema cannot say.
	// A handshake of another protocol version is not judged by v1's
	// schema: the info check says which version it named.
	if verb == clouddriver.VerbInfo && !speaksV1(a.obj) {
		return a
	}
	if err := ValidateMessage("response", verb, a.stdout); err != nil {
		a.err = fmt.Errorf("answered %s", err)
	}
	return a
}

// speaksV1 reports whether a handshake names this protocol's version.
func speaksV1(info map[string]json.RawMessage) bool {
	var v string
	return json.Unmarshal(info["protocolVersion"], &v) == nil && v == clouddriver.ProtocolVersion
}

// expectOK returns why an answer is not a success with a JSON object, or
// nil.
func expectOK(a answer) error {
	if a.err != nil {
		return a.err
	}
	if a.exit != 0 {
		return fmt.Errorf("exited %d, want 0%s", a.exit, stderrNote(a.stderr))
	}
	return nil
}

// expectNotFound returns why an answer is not "no such object" (exit 3),
// or nil.
func expectNotFound(a answer, what string) error {
	if a.exit == clouddriver.ExitNotFound {
		return nil
	}
	if a.err != nil && a.exit == 0 {
		return fmt.Errorf("for %s: want exit code %d (no such object); the driver exited 0 and %w", what, clouddriver.ExitNotFound, a.err)
	}
	return fmt.Errorf("for %s: exited %d, want %d (no such object)%s", what, a.exit, clouddriver.ExitNotFound, stderrNote(a.stderr))
}

func stderrNote(s string) string {
	if s == "" {
		return ""
	}
	return "; stderr: " + truncate(s, 300)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")), " ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// pass records a passing verb unless a failure is on record already.
func (c *checker) pass(verb clouddriver.Verb, format string, args ...any) {
	if r := c.results[verb]; r != nil && r.Outcome == Fail {
		return
	}
	if r := c.results[verb]; r != nil && r.Outcome == Pass {
		r.Detail += "; " + fmt.Sprintf(format, args...)
		return
	}
	c.results[verb] = &Result{Verb: verb, Outcome: Pass, Detail: fmt.Sprintf(format, args...)}
}

// fail records a failing verb; the first failure of a verb is its detail.
func (c *checker) fail(verb clouddriver.Verb, err error) {
	if r := c.results[verb]; r != nil && r.Outcome == Fail {
		return
	}
	c.results[verb] = &Result{Verb: verb, Outcome: Fail, Detail: err.Error()}
}

// skip records a listed verb the check did not call, and why.
func (c *checker) skip(verb clouddriver.Verb, why string) {
	if c.results[verb] == nil {
		c.results[verb] = &Result{Verb: verb, Outcome: Skip, Detail: why}
	}
}
