package main

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/providers/loopback"
)

// rangeAuto is the value of --node-ip-range and --ingress-ip-range that
// lets the cloud pick its own loopback addresses.
const rangeAuto = "auto"

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
func routeIngress(block *loopback.Block) (*routableIngress, error) {
	x := block.Prefix.Addr().As4()[1]
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
