// Command aws-cloud serves the EC2 and Elastic Load Balancing emulator
// for the AWS CCM (see providers/aws/cloud) until it receives SIGINT or
// SIGTERM.
//
//	aws-cloud --listen 127.0.0.1:4566 --dir /run/dir
//
// It writes the CCM's cloud config (aws.conf), the control socket and,
// last, aws-cloud.ready into --dir. It logs failed API calls on stderr.
//
// Floor: a provider. It links nothing of this repository outside
// providers/.
package main

import (
	"context"
	"flag"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/cloud"
	"github.com/ccm-conformance/ccm-conformance/providers/loopback"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("aws-cloud", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "TCP address of the EC2 and Elastic Load Balancing APIs (HTTP)")
	dns := fs.String("dns", "", "UDP address of the DNS server that resolves load balancers' DNS names to their addresses (default: none)")
	dir := fs.String("dir", "", "directory for the cloud config, the control socket and the ready file (required)")
	region := fs.String("region", "us-east-1", "the region")
	zones := fs.String("zones", "", "availability zones, comma-separated (default <region>a,b,c)")
	cluster := fs.String("cluster-id", "ccm-conformance", "the cluster ID the CCM is configured with (KubernetesClusterID)")
	nlbGroups := fs.String("nlb-security-group-mode", "", `the cloud config's NLBSecurityGroupMode: "Managed" makes the CCM give each Network Load Balancer a security group of its own (default: unset, none)`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logger := log.New(os.Stderr, "aws-cloud: ", log.LstdFlags|log.Lmicroseconds)
	if *dir == "" || fs.NArg() > 0 {
		logger.Print("usage: aws-cloud --dir DIR [--listen 127.0.0.1:PORT] [flags]")
		return 2
	}
	if *nlbGroups != "" && *nlbGroups != "Managed" {
		// The CCM would accept the file and then fail every NLB
		// (config.IsNLBSecurityGroupModeManaged), far from this flag.
		logger.Printf("--nlb-security-group-mode %q: the CCM accepts only Managed (case-sensitive) or none", *nlbGroups)
		return 2
	}
	var zoneList []string
	if *zones != "" {
		zoneList = strings.Split(*zones, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A loopback /16 of its own: instances' private addresses (the VPC)
	// in its lower half, where the simulated nodes answer, and load
	// balancers' addresses in its upper half, where the data path serves.
	block, err := loopback.Claim(rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid()))))
	if err != nil {
		logger.Print(err)
		return 1
	}
	defer block.Release()
	c := cloud.New(cloud.Options{Region: *region, Zones: zoneList, ClusterID: *cluster, NLBSecurityGroupMode: *nlbGroups, Network: block.Nodes, LoadBalancerAddresses: block.Ingress})
	s, err := cloud.Serve(c, cloud.ServeOptions{Listen: *listen, DNS: *dns, Dir: *dir, Logf: logger.Printf})
	if err != nil {
		logger.Print(err)
		return 1
	}
	logger.Printf("serving EC2 and Elastic Load Balancing at %s; VPC %s, load balancers in %s", s.URL, block.Nodes, block.Ingress)
	if s.DNS != "" {
		logger.Printf("serving load balancers' DNS names at %s (UDP)", s.DNS)
	}
	code := 0
	select {
	case <-ctx.Done():
		logger.Print("shutting down")
	case err := <-s.Errors():
		if err != nil {
			logger.Print(err)
			code = 1
		}
	}
	if err := s.Close(); err != nil {
		logger.Printf("shutting down: %v", err)
		code = 1
	}
	return code
}
