package providers_test

import (
	"testing"

	"github.com/ccm-conformance/ccm-conformance/testsupport/floors"
)

// A provider here is what a provider's own repository would hold: a CCM,
// an emulator of its cloud and a cloud driver. Like a real one it talks to
// the harness only through the cluster, the CCM's process or image and the
// cloud-driver protocol, so none of its packages links the harness. The one
// thing it may import from this repository is the driver SDK, a module of
// its own with no dependency beyond the standard library, which is what a
// provider's driver elsewhere would import too (docs/cloud-driver.md).
func TestProvidersLinkNothingOfTheHarness(t *testing.T) {
	floors.Check(t, floors.Rule{Floor: []string{"providers"}, May: []string{"providers", "driversdk"}}, 5, "./...")
}
