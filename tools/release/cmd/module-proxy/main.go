// Command module-proxy serves a folder of this checkout as one module
// version from a GOPROXY=file://... directory (release.WriteModuleVersion):
// scripts/tidy.sh serves the cloud-driver SDK to `go mod tidy` with it.
//
// Floor: the tools, programs that build and test the project. They stand on
// the leaves.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ccm-conformance/ccm-conformance/tools/release"
)

func main() {
	out := flag.String("out", "", "the proxy directory")
	mod := flag.String("module", "", "the module path")
	version := flag.String("version", "", "the version to serve it as")
	dir := flag.String("dir", ".", "the module's folder in the checkout")
	flag.Parse()
	if *out == "" || *mod == "" || *version == "" {
		fmt.Fprintln(os.Stderr, "module-proxy: --out, --module and --version are required")
		os.Exit(2)
	}
	if err := release.WriteModuleVersion(*out, *mod, *version, *dir, time.Now()); err != nil {
		fmt.Fprintf(os.Stderr, "module-proxy: %v\n", err)
		os.Exit(1)
	}
}
