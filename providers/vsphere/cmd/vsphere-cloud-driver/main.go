// Command vsphere-cloud-driver is the vSphere provider's cloud driver: it
// speaks the cloud driver protocol v1 (docs/cloud-driver.md) to the vCenter
// named by the CCM's cloud config ($VSPHERE_CLOUD_CONFIG) and, for the
// simulator-only verbs, to the simulated vCenter's control channel
// ($VSPHERE_CONTROL_SOCKET). See providers/vsphere/driver.
//
//	echo '{"name":"n1"}' | vsphere-cloud-driver instance get
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

	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/driver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := driver.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
