// Command reference-cloud-driver is the reference provider's cloud driver:
// it speaks the cloud driver protocol v1 (docs/cloud-driver.md) against the
// simulated cloud named by $REFERENCE_CLOUD_ENDPOINT.
//
//	echo '{"name":"n1"}' | reference-cloud-driver instance get
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/driver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := driver.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
