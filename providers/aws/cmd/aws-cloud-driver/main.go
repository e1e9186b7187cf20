// Command aws-cloud-driver is the AWS provider's cloud driver (protocol
// v1, docs/cloud-driver.md): see providers/aws/driver.
//
// Floor: a provider. It links nothing of this repository outside
// providers/.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/driver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := driver.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
