// Command reference-cloud serves the reference provider's simulated cloud
// API until it receives SIGINT or SIGTERM.
//
//	reference-cloud --listen unix:///tmp/cloud.sock
//
// It logs one line per request on stderr. See docs/reference-provider.md.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/loopback"
	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("reference-cloud", flag.ContinueOnError)
	listen := fs.String("listen", "", "where to serve the cloud API: unix:///path/cloud.sock or tcp://127.0.0.1:PORT (required)")
	seed := fs.Uint64("seed", 1, "seed of the random numbers behind fault error rates")
	nodeRange := fs.String("node-ip-range", rangeAuto, `IPv4 range of instance InternalIPs; keep it on loopback so simulated nodes can listen on them. "auto" takes the lower half of a loopback /16 that no other running reference cloud has`)
	ingressRange := fs.String("ingress-ip-range", rangeAuto, `IPv4 range of load balancer ingress IPs; load balancers listen on them, so two clouds on one machine need different ranges. "auto" takes the upper half of the same /16 as --node-ip-range=auto; with --kind-cluster, 100.72.X.0/24 instead, made local to this host by a route (needs CAP_NET_ADMIN; without it, loopback) so that pods reach it`)
	noDataPath := fs.Bool("no-data-path", false, "keep load balancers as records only; nothing listens on their ingress IPs")
	bareInstances := fs.Bool("bare-instances", false, "report instances without a Hostname address and without an instance type (unless one is asked for), as many clouds do")
	backendLimit := fs.Int("backend-limit", 0, "register at most this many of the nodes a load balancer is given, the first by name, as clouds that subset their backends do (0: all)")
	kindCluster := fs.String("kind-cluster", "", "adopt the node containers of this kind cluster as instances (docker CLI): their addresses are the containers', and stopping, starting or deleting an instance does so to its container")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logger := log.New(os.Stderr, "reference-cloud: ", log.LstdFlags|log.Lmicroseconds)
	if *listen == "" || fs.NArg() > 0 {
		logger.Print("usage: reference-cloud --listen unix:///path/cloud.sock [flags]")
		return 2
	}
	// Signals are taken before anything is claimed, so that stop runs
	// last: until then a second SIGTERM (a service manager's, or a test's
	// cleanup after its context's) is absorbed instead of killing the
	// process before the ingress route and the block are released.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := cloudapi.Options{Logf: logger.Printf, Seed: *seed, DisableDataPath: *noDataPath, BareInstances: *bareInstances, BackendLimit: *backendLimit}
	var err error
	if *nodeRange != rangeAuto {
		if opts.NodeIPRange, err = parseIPv4Range(*nodeRange); err != nil {
			logger.Printf("--node-ip-range: %v", err)
			return 2
		}
	}
	if *ingressRange != rangeAuto {
		if opts.IngressIPRange, err = parseIPv4Range(*ingressRange); err != nil {
			logger.Printf("--ingress-ip-range: %v", err)
			return 2
		}
	}
	if *nodeRange == rangeAuto || *ingressRange == rangeAuto {
		block, err := loopback.Claim(rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid()))))
		if err != nil {
			logger.Print(err)
			return 1
		}
		defer block.Release()
		if *nodeRange == rangeAuto {
			opts.NodeIPRange = block.Nodes
		}
		if *ingressRange == rangeAuto {
			opts.IngressIPRange = block.Ingress
			// The kind nodes' pods must reach the load balancers too: a
			// range this host routes to itself, where it may add the route.
			if *kindCluster != "" {
				routed, err := routeIngress(block)
				if err != nil {
					logger.Printf("load balancer ingress IPs stay on loopback, where pods cannot reach them: %v", err)
				} else {
					defer func() {
						if err := routed.Release(); err != nil {
							logger.Print(err)
						}
					}()
					opts.IngressIPRange = routed.Prefix
				}
			}
		}
	}
	logger.Printf("instance InternalIPs from %s, load balancer ingress IPs from %s", opts.NodeIPRange, opts.IngressIPRange)

	var machines []cloudapi.Machine
	if *kindCluster != "" {
		km := newKindMachines("docker", *kindCluster, logger.Printf)
		if machines, err = km.List(ctx); err != nil {
			logger.Printf("--kind-cluster %s: %v", *kindCluster, err)
			return 2
		}
		if len(machines) == 0 {
			logger.Printf("--kind-cluster %s: no node containers carry the label %s=%s", *kindCluster, kindClusterLabel, *kindCluster)
			return 2
		}
		opts.Machines = km
	}
	if err := serve(ctx, *listen, opts, machines, logger); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// serve runs the cloud on endpoint until ctx ends, then closes the
// listener (removing a unix socket) and every load balancer.
func serve(ctx context.Context, endpoint string, opts cloudapi.Options, machines []cloudapi.Machine, logger *log.Logger) error {
	l, err := cloudapi.Listen(endpoint)
	if err != nil {
		return err
	}
	cloud := cloudapi.NewServer(opts)
	defer cloud.Close()
	adopted, err := cloud.Adopt(machines)
	if err != nil {
		_ = l.Close()
		return fmt.Errorf("adopting the machines: %w", err)
	}
	for _, in := range adopted {
		logger.Printf("adopted machine %s as instance %s (%s, %s)", in.Name, in.ID, in.ProviderID, formatAddresses(in.Addresses))
	}
	hs := &http.Server{Handler: cloud.Handler(), ReadHeaderTimeout: 10 * time.Second}

	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	logger.Printf("serving the cloud API on %s", endpoint)

	select {
	case err := <-done: // Serve failed on its own
		_ = l.Close()
		return fmt.Errorf("serving on %s: %w", endpoint, err)
	case <-ctx.Done():
	}
	logger.Print("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(shutdownCtx) // closes l, which removes a unix socket
	if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

func parseIPv4Range(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%s is not an IPv4 range", s)
	}
	return p.Masked(), nil
}

func formatAddresses(addrs []cloudapi.Address) string {
	parts := make([]string, len(addrs))
	for i, a := range addrs {
		parts[i] = a.Type + "=" + a.Address
	}
	return strings.Join(parts, " ")
}
