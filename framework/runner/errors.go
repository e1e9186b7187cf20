package runner

import "errors"

// Exit codes of a run.
const (
	// ExitPassed: every selected spec passed (skips are reported, not failures).
	ExitPassed = 0
	// ExitFailed: at least one spec failed.
	ExitFailed = 1
	// ExitHarnessError: the input was bad, the environment could not be set
	// up, or the run was interrupted.
	ExitHarnessError = 2
)

// InputError is bad input: a malformed profile, a missing binary, a bad
// label filter. Its message is one line that names the input.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// SetupError is an environment that could not be brought up: an
// unreachable cluster, a CCM that does not get healthy.
type SetupError struct {
	Step string
	Err  error
}

func (e *SetupError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// ErrInterrupted is returned when SIGINT or SIGTERM ended the run.
var ErrInterrupted = errors.New("interrupted")

// ExitCode maps a run's outcome to the process exit code.
func ExitCode(res *Result, err error) int {
	if err != nil {
		return ExitHarnessError
	}
	if res == nil || res.Interrupted {
		return ExitHarnessError
	}
	if res.Failed > 0 {
		return ExitFailed
	}
	return ExitPassed
}
