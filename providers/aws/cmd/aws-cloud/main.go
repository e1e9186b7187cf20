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
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/cloud"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("aws-cloud", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "TCP address of the EC2 and Elastic Load Balancing APIs (HTTP)")
	dir := fs.String("dir", "", "directory for the cloud config, the control socket and the ready file (required)")
	region := fs.String("region", "us-east-1", "the region")
	zones := fs.String("zones", "", "availability zones, comma-separated (default <region>a,b,c)")
	cluster := fs.String("cluster-id", "ccm-conformance", "the cluster ID the CCM is configured with (KubernetesClusterID)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logger := log.New(os.Stderr, "aws-cloud: ", log.LstdFlags|log.Lmicroseconds)
	if *dir == "" || fs.NArg() > 0 {
		logger.Print("usage: aws-cloud --dir DIR [--listen 127.0.0.1:PORT] [flags]")
		return 2
	}
	var zoneList []string
	if *zones != "" {
		zoneList = strings.Split(*zones, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := cloud.New(cloud.Options{Region: *region, Zones: zoneList, ClusterID: *cluster})
	s, err := cloud.Serve(c, *listen, *dir, logger.Printf)
	if err != nil {
		logger.Print(err)
		return 1
	}
	logger.Printf("serving EC2 and Elastic Load Balancing at %s", s.URL)
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
