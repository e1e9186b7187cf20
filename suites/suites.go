// Package suites lists every conformance suite, in the order they run.
//
// Floor: the suites. They stand on the framework alone and name
// capabilities, never a provider.
package suites

import (
	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/suites/leadermigration"
	"github.com/ccm-conformance/ccm-conformance/suites/loadbalancer"
	"github.com/ccm-conformance/ccm-conformance/suites/nodeaddress"
	"github.com/ccm-conformance/ccm-conformance/suites/nodeip"
	"github.com/ccm-conformance/ccm-conformance/suites/nodelifecycle"
	"github.com/ccm-conformance/ccm-conformance/suites/routes"
)

// All returns every suite.
func All() []framework.Suite {
	return []framework.Suite{
		nodeaddress.Suite(),
		nodeip.Suite(),
		nodelifecycle.Suite(),
		loadbalancer.Suite(),
		routes.Suite(),
		leadermigration.Suite(),
	}
}
