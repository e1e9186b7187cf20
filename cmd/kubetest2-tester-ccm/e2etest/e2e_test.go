//go:build e2etest

package e2etest

import (
	"flag"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"

	"github.com/ccm-conformance/ccm-conformance/cmd/kubetest2-tester-ccm/app"
)

// TestMain is the whole binary: the testing package's and ginkgo's flags
// are on flag.CommandLine already, the tester's are added, and the run's
// exit code is the process's.
func TestMain(m *testing.M) {
	f := app.RegisterE2ETestFlags(flag.CommandLine)
	flag.Parse()
	suiteConfig, _ := ginkgo.GinkgoConfiguration()
	os.Exit(app.RunE2ETest(f, suiteConfig, os.Stdout, os.Stderr))
}
