// Command vsphere-cloud serves a simulated vCenter for the vSphere CCM,
// built on govmomi's simulator (see providers/vsphere/cloud), until it
// receives SIGINT or SIGTERM.
//
//	vsphere-cloud --listen 127.0.0.1:8989 --dir /run/dir
//
// It writes the CCM's cloud config, the CA certificate, the control socket
// and, last, vsphere-cloud.ready into --dir. It logs on stderr.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/cloud"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("vsphere-cloud", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "TCP address of the vCenter SDK (HTTPS)")
	dir := fs.String("dir", "", "directory for the cloud config, the CA certificate, the control socket and the ready file (required)")
	region := fs.String("region", "region-1", "region tag on the datacenter")
	zones := fs.String("zones", "zone-a,zone-b,zone-c", "zone tags, one cluster each, comma-separated")
	hosts := fs.Int("hosts-per-cluster", 2, "hosts in each cluster")
	ipFamily := fs.String("ip-family", "ipv4", "the cloud config's ip-family: ipv4, ipv6 or ipv4,ipv6 (the CCM needs ENABLE_ALPHA_DUAL_STACK for two)")
	user := fs.String("user", "ccm@vsphere.local", "the CCM's user in the cloud config (the simulator accepts any)")
	password := fs.String("password", "ccm-conformance", "the CCM's password in the cloud config")
	logCalls := fs.Bool("log-calls", true, "print the SOAP calls the SDK serves, but the cloud driver's and successful property reads (calls list has them all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logger := log.New(os.Stderr, "vsphere-cloud: ", log.LstdFlags|log.Lmicroseconds)
	if *dir == "" || fs.NArg() > 0 {
		logger.Print("usage: vsphere-cloud --dir DIR [--listen 127.0.0.1:PORT] [flags]")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cloud.Start(ctx, cloud.Options{
		Listen: *listen, Dir: *dir, Region: *region, Zones: strings.Split(*zones, ","), HostsPerCluster: *hosts,
		IPFamily: *ipFamily, User: *user, Password: *password, Logf: logger.Printf, LogCalls: *logCalls,
	})
	if err != nil {
		logger.Print(err)
		return 1
	}
	code := 0
	select {
	case <-ctx.Done():
		logger.Print("shutting down")
	case err := <-c.Errors():
		logger.Print(err)
		code = 1
	}
	if err := c.Close(); err != nil {
		logger.Printf("shutting down: %v", err)
		code = 1
	}
	return code
}
