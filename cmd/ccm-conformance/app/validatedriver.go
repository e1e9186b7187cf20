package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/checks/drivercheck"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
)

// validateDriverStopTimeout bounds stopping the profile's services.
const validateDriverStopTimeout = 30 * time.Second

func newValidateDriverCommand(stdout io.Writer) *cobra.Command {
	var driver, profilePath string
	cmd := &cobra.Command{
		Use:   "validate-driver --driver CMD [--profile FILE]",
		Short: "Check a cloud driver against the cloud-driver protocol",
		Long: `validate-driver asks a cloud driver which verbs it implements ('info') and
calls each with real arguments, checking its exit codes (3 for "no such
object") and the JSON it answers against the protocol's schema
(docs/cloud-driver.md). Read-only verbs look at what the cloud has; mutating
verbs act only on an instance and a route the check makes itself and removes
afterwards. It prints one PASS, FAIL or SKIP line per verb.

--driver is the driver's command line, split at spaces. --profile takes the
driver's environment (cloudDriver.env) and deadline (timeouts.cloudDriverCall)
from a profile, and starts the profile's services first (a cloud simulator),
in a scratch ${RUN_DIR}; no cluster and no CCM run.

Exit codes: 0 every listed verb passed, 1 a verb failed, 2 bad input (no
such driver executable, a profile that does not load, a service that does
not start).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			in := drivercheck.Input{Command: strings.Fields(driver)}
			if len(in.Command) == 0 {
				return &exitError{code: runner.ExitHarnessError, err: errors.New("validate-driver: --driver CMD is required")}
			}
			if profilePath != "" {
				env, err := drivercheck.FromProfile(ctx, profilePath)
				if err != nil {
					return &exitError{code: runner.ExitHarnessError, err: err}
				}
				defer func() {
					stopCtx, cancel := context.WithTimeout(context.Background(), validateDriverStopTimeout)
					defer cancel()
					_ = env.Stop(stopCtx)
				}()
				in.Env, in.CallTimeout = env.Input.Env, env.Input.CallTimeout
			}
			rep, err := drivercheck.Check(ctx, in)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			for _, r := range rep.Results {
				fmt.Fprintln(stdout, r.String())
			}
			fmt.Fprintln(stdout, rep.Summary())
			if rep.Failed() {
				return &exitError{code: runner.ExitFailed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&driver, "driver", "", "the cloud driver's command line (required)")
	cmd.Flags().StringVar(&profilePath, "profile", "", "a provider profile: the driver's env and deadline, and services to start first")
	return cmd
}
