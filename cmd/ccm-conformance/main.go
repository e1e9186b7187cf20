// Command ccm-conformance runs the CCM conformance suites. See README.md.
//
// Floor: the commands, the top. They parse flags and delegate to the floors
// below.
package main

import (
	"os"

	"github.com/ccm-conformance/ccm-conformance/cmd/ccm-conformance/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
}
