// Package suites lists every conformance suite, in the order they run.
package suites

import (
	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/suites/nodeaddress"
	"github.com/ccm-conformance/ccm-conformance/suites/nodeip"
)

// All returns every suite.
func All() []framework.Suite {
	return []framework.Suite{
		nodeaddress.Suite(),
		nodeip.Suite(),
	}
}
