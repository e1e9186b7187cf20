package k8sbin

import (
	"os"
	"path/filepath"
)

// e2eTestDir is the package of the build module that `go test -c` turns
// into the E2ELoadBalancers binary.
const e2eTestDir = "e2eloadbalancers"

// e2eTestSource is that package's one file. It links upstream's sig-network
// specs (the LoadBalancers ones among them, selected at run time with
// --ginkgo.focus) with upstream's e2e framework, and does what upstream's
// own test/e2e main does before running them: register the framework's
// flags, parse them, let the framework act on them (provider, kubeconfig,
// --list-images), then run the specs with the framework's ginkgo
// configuration (--report-dir gets a JUnit file). Upstream's suite-wide
// set-up (waiting for system pods, dumping logs) is left out: the harness
// hands over a cluster it has already checked.
const e2eTestSource = `// Code written by ccm-conformance (internal/k8sbin/e2etest.go); not edited by hand.

package e2eloadbalancers

import (
	"flag"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"k8s.io/kubernetes/test/e2e/framework"
	_ "k8s.io/kubernetes/test/e2e/network"
)

func TestMain(m *testing.M) {
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

func TestUpstreamLoadBalancers(t *testing.T) {
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "upstream sig-network e2e specs, run by ccm-conformance", suiteConfig, reporterConfig)
}
`

// e2eTestImports are the packages e2eTestSource imports from Kubernetes.
var e2eTestImports = []string{kubernetesModule + "/test/e2e/framework", kubernetesModule + "/test/e2e/network"}

// writeE2ETestPackage writes the e2e test package into the build module
// modDir and returns its relative package path for the go command.
func writeE2ETestPackage(modDir string) (string, error) {
	dir := filepath.Join(modDir, e2eTestDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "e2e_test.go"), []byte(e2eTestSource), 0o644); err != nil {
		return "", err
	}
	return "./" + e2eTestDir, nil
}
