package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/providers/loopback"
)

// The routed ingress range is local to the host while the cloud runs (a
// load balancer can listen on its addresses), is gone afterwards, and a
// route a killed cloud left is taken over. It changes the host's routes,
// so it needs root and is an integration test.
func TestIntegrationRouteIngress(t *testing.T) {
	if testing.Short() {
		t.Skip("changes the host's routes")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to add a route")
	}
	block, err := loopback.Claim(rand.New(rand.NewPCG(3, uint64(os.Getpid()))))
	if err != nil {
		t.Fatal(err)
	}
	defer block.Release()
	for _, leftover := range []bool{false, true} {
		if leftover {
			// A killed cloud's route, left behind.
			b := block.Prefix.Addr().As4()
			out, err := exec.Command("ip", "-4", "route", "add", "local", fmt.Sprintf("100.72.%d.0/24", b[1]), "dev", "lo").CombinedOutput()
			if err != nil {
				t.Fatalf("adding a leftover route: %v: %s", err, out)
			}
		}
		r, err := routeIngress(block)
		if err != nil {
			t.Fatalf("leftover route %v: %v", leftover, err)
		}
		if b := block.Prefix.Addr().As4(); r.Prefix.String() != fmt.Sprintf("100.72.%d.0/24", b[1]) {
			t.Fatalf("range %s for block %s", r.Prefix, block.Prefix)
		}
		addr := netip.AddrPortFrom(r.Prefix.Addr().Next(), 0)
		l, err := net.Listen("tcp4", addr.String())
		if err != nil {
			r.Release()
			t.Fatalf("leftover route %v: listening on %s in the routed range: %v", leftover, addr, err)
		}
		l.Close()
		if err := r.Release(); err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command("ip", "-4", "route", "show", "table", "local", r.Prefix.String()).CombinedOutput()
		if strings.TrimSpace(string(out)) != "" {
			t.Errorf("after Release the route is still there: %s", out)
		}
	}
}
