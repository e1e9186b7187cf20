// Command testreport reads `go test -json` on standard input and writes a
// log a person reads (see package testreport). It exits 1 when a test or a
// package failed, 2 when its input could not be read. scripts/test.sh
// pipes the project's tests through it.
//
// Floor: the tools, programs that build and test the project. They stand on
// the leaves.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ccm-conformance/ccm-conformance/tools/testreport"
)

func main() {
	var o testreport.Options
	flag.DurationVar(&o.Slow, "slow", 10*time.Second, "a passing top-level test that took this long gets a line of its own")
	flag.IntVar(&o.Top, "top", 15, "how many of the slowest tests and packages the summary lists")
	flag.Parse()
	c, err := testreport.Filter(os.Stdin, os.Stdout, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("\n%d passed, %d failed, %d skipped\n", c.Passed, c.Failed, c.Skipped)
	if c.Failed > 0 || len(c.FailedPackages) > 0 {
		for _, p := range c.FailedPackages {
			fmt.Printf("FAIL %s\n", p)
		}
		os.Exit(1)
	}
}
