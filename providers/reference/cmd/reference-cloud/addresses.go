package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
)

// rangeAuto is the value of --node-ip-range and --ingress-ip-range that
// lets the cloud pick its own loopback addresses.
const rangeAuto = "auto"

// Automatic address blocks. Every cloud with an automatic range takes a
// loopback /16, 127.X.0.0/16 with X in [firstBlock, lastBlock]: instance
// InternalIPs come from its lower half and load balancer ingress IPs from
// its upper half. Simulated nodes and load balancers listen on those
// addresses, so two clouds on one machine (two conformance runs at once)
// must never share a block.
//
// A cloud claims its block by listening on claimPort at the block's last
// address, 127.X.255.255, for as long as it runs; the address allocator
// skips addresses that end in .255, so no node or load balancer ever uses
// it. A block whose claim address is taken belongs to a running cloud, and
// another one is tried.
const (
	firstBlock = 66 // below: 127.0/16 is everyone's; 127.64 and 127.65 are the fixed defaults of earlier versions
	lastBlock  = 254
	claimPort  = 49151
	maxTries   = 64
)

// addressBlock is a claimed /16 and the ranges made from it.
type addressBlock struct {
	Block, Nodes, Ingress netip.Prefix
	claim                 net.Listener
}

// Release gives the block back.
func (b *addressBlock) Release() error { return b.claim.Close() }

// claimAddressBlock claims a free automatic block, trying blocks in an
// order drawn from rng.
func claimAddressBlock(rng *rand.Rand) (*addressBlock, error) {
	var lastErr error
	for try := 0; try < maxTries; try++ {
		x := firstBlock + rng.IntN(lastBlock-firstBlock+1)
		block := netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(x), 0, 0}), 16)
		claimAddr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, byte(x), 255, 255}), claimPort)
		l, err := net.Listen("tcp4", claimAddr.String())
		if errors.Is(err, syscall.EADDRINUSE) {
			lastErr = err
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("claiming loopback block %s: %w", block, err)
		}
		return &addressBlock{
			Block:   block,
			Nodes:   netip.PrefixFrom(block.Addr(), 17),
			Ingress: netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(x), 128, 0}), 17),
			claim:   l,
		}, nil
	}
	return nil, fmt.Errorf("no free loopback block in 127.%d.0.0-127.%d.0.0 after %d tries (last: %v); pass --node-ip-range and --ingress-ip-range",
		firstBlock, lastBlock, maxTries, lastErr)
}

// routableIngress is an ingress range made local to this host by a route
// of type local on lo: the host holds every address in it, so load
// balancers listen there as on loopback, while the kind nodes, whose
// default route is this host, and their pods, whose packets kube-proxy
// takes once the Service's status names the address, reach it too. The
// cloud whose automatic block is 127.X.0.0/16 takes 100.72.X.0/24, in the
// shared address space of RFC 6598, which neither Docker's networks nor
// kind's pod and Service networks use.
type routableIngress struct {
	Prefix netip.Prefix
}

// routeIngress makes the ingress range of block local to this host: `ip
// route add local 100.72.X.0/24 dev lo`. It needs CAP_NET_ADMIN; without
// it the error says so and the caller keeps the loopback range. A route
// left by a cloud that was killed (the block's claim is ours now) is
// taken over.
func routeIngress(block *addressBlock) (*routableIngress, error) {
	x := block.Block.Addr().As4()[1]
	r := &routableIngress{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 72, x, 0}), 24)}
	out, err := r.ip("add")
	if err != nil && !strings.Contains(out, "File exists") {
		return nil, err
	}
	return r, nil
}

// Release removes the route.
func (r *routableIngress) Release() error {
	_, err := r.ip("del")
	return err
}

// ip runs `ip -4 route VERB local PREFIX dev lo`.
func (r *routableIngress) ip(verb string) (string, error) {
	out, err := exec.Command("ip", "-4", "route", verb, "local", r.Prefix.String(), "dev", "lo").CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip route %s local %s dev lo: %v: %s", verb, r.Prefix, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
