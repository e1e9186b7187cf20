package framework

import (
	"context"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
)

// CCMs starts and stops instances of the CCM under test, for specs that
// need several at once (leader election, leader migration) or the main one
// out of the way. Only runs where the harness starts the CCM itself have it.
type CCMs interface {
	// Start runs another instance of the CCM with extraArgs appended to the
	// profile's args, and waits until it is healthy. name labels its log
	// (logs/ccm-NAME.log). The caller stops it (usually through
	// DeferCleanup); the run stops whatever is left at its end.
	Start(ctx context.Context, name string, extraArgs []string) (*ccm.Process, error)
	// StopMain stops the instance the run started. The returned function
	// starts it again and waits until it is healthy.
	StopMain(ctx context.Context) (restart func(context.Context) error, err error)
}

// RequireCCMs skips the current spec unless the harness runs the CCM and
// can start more instances of it.
func (f *Framework) RequireCCMs() {
	if f.CCMInstances == nil {
		skip("the CCM under test is not started by the harness, so the spec cannot start more instances of it")
	}
}
