package suites_test

import (
	"testing"

	"github.com/ccm-conformance/ccm-conformance/testsupport/floors"
)

// A suite stands on the framework alone: it names capabilities, never a
// provider, and knows nothing of how results are reported or judged.
func TestSuitesStandOnTheFrameworkAlone(t *testing.T) {
	floors.Check(t, floors.Rule{
		Floor: []string{"suites"},
		May:   []string{"suites", "framework", "internal", "labels", "kubeversion", "driversdk"},
	}, 7, "./...")
}
