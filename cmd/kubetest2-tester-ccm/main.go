// Command kubetest2-tester-ccm runs the CCM conformance suites as a
// kubetest2 tester (`kubetest2 <deployer> --test=ccm -- --provider P`).
// See docs/kubetest2.md.
//
// Floor: the commands, the top. They parse flags and delegate to the floors
// below.
package main

import (
	"os"

	"github.com/ccm-conformance/ccm-conformance/cmd/kubetest2-tester-ccm/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
}
