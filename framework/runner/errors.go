package runner

import (
	"errors"
	"fmt"
)

// Exit codes of a run.
const (
	// ExitPassed: every selected spec passed (skips are reported, not failures).
	ExitPassed = 0
	// ExitFailed: at least one spec failed.
	ExitFailed = 1
	// ExitHarnessError: the input was bad, the environment could not be set
	// up, the run was interrupted, or it tested nothing (Result.NothingTested).
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

// DriverError is a cloud driver that broke its protocol during the run
// (docs/cloud-driver.md): it answered a spec, or the setup, with something
// that is not the verb's JSON. The specs it made fail say so; the run is
// the driver's failure, not the CCM's, so it is a harness error.
type DriverError struct {
	// Driver is the driver executable's base name.
	Driver string
	// Specs are the failed specs in which the driver broke the protocol
	// (none when it broke it during setup).
	Specs []string
	// Err is the first protocol error.
	Err error
}

func (e *DriverError) Error() string {
	if len(e.Specs) == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("cloud driver %s broke the protocol in %d spec(s), which failed for it, not for the CCM: %v", e.Driver, len(e.Specs), e.Err)
}
func (e *DriverError) Unwrap() error { return e.Err }

// NothingTestedError is a run that finished without a spec passing or
// failing (Result.NothingTested says why): not a pass, since it showed
// nothing of the CCM, but no failure of the CCM either. It is classed with
// bad input: the profile, the label filter and the backend together left
// nothing to run.
type NothingTestedError struct{ Why string }

func (e *NothingTestedError) Error() string { return "nothing was tested: " + e.Why }

// ErrInterrupted is returned when SIGINT or SIGTERM ended the run.
var ErrInterrupted = errors.New("interrupted")

// Classes of harness errors, as ErrorClass names them for reports.
const (
	// ClassInput: bad input (*InputError).
	ClassInput = "input"
	// ClassDriver: the cloud driver broke its protocol (*DriverError); the
	// CCM is not to blame.
	ClassDriver = "driver"
	// ClassSetup: the environment could not be brought up or torn down
	// (*SetupError).
	ClassSetup = "setup"
	// ClassInterrupted: SIGINT or SIGTERM ended the run.
	ClassInterrupted = "interrupted"
	// ClassLeak: the specs left things behind (*LeakError).
	ClassLeak = "leak"
	// ClassCCM: the CCM under test did not start or become ready (a
	// *SetupError of a CCM step): the CCM's failure, not the environment's.
	ClassCCM = "ccm"
)

// ccmSteps are the SetupError steps in which the CCM under test itself
// failed: it exited, or never answered /healthz, or its pods never ran.
var ccmSteps = map[string]bool{"ccm": true, "ccm deployment": true}

// ErrorClass names what kind of harness error err is, for reports: one of
// the Class constants, "" for nil, or ClassSetup for anything else.
func ErrorClass(err error) string {
	var (
		inErr      *InputError
		drvErr     *DriverError
		setupErr   *SetupError
		nothingErr *NothingTestedError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &drvErr):
		return ClassDriver
	case errors.As(err, &inErr), errors.As(err, &nothingErr):
		return ClassInput
	case errors.Is(err, ErrInterrupted):
		return ClassInterrupted
	case asLeak(err) != nil:
		return ClassLeak
	case errors.As(err, &setupErr) && ccmSteps[setupErr.Step]:
		return ClassCCM
	}
	return ClassSetup
}

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
