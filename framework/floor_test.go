package framework_test

import (
	"testing"

	"github.com/ccm-conformance/ccm-conformance/testsupport/floors"
)

// The framework is the floor the suites, the backends and the commands
// stand on: it links the leaves below it (internal/, labels, kubeversion,
// the driver SDK) and nothing above it. Capability, not provider, decides
// what runs, and results are written by the reports, so nothing here may
// know a provider, a suite, a report, a check or a command.
func TestFrameworkLinksNothingAboveIt(t *testing.T) {
	floors.Check(t, floors.Rule{
		Floor: []string{"framework"},
		May:   []string{"framework", "internal", "labels", "kubeversion", "driversdk"},
	}, 10, "./...")
}
