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
)

// Two clouds never get the same automatic block while both run, even when
// they draw the same numbers, and a released block can be claimed again.
func TestClaimAddressBlock(t *testing.T) {
	seeded := func() *rand.Rand { return rand.New(rand.NewPCG(7, 7)) }
	first, err := claimAddressBlock(seeded())
	if err != nil {
		t.Fatal(err)
	}
	x := int(first.Block.Addr().As4()[1])
	if first.Block.Bits() != 16 || x < firstBlock || x > lastBlock {
		t.Errorf("block %s: want a /16 in 127.%d-%d", first.Block, firstBlock, lastBlock)
	}
	for _, tt := range []struct {
		name string
		got  netip.Prefix
		want string
	}{
		{"nodes", first.Nodes, netip.AddrFrom4([4]byte{127, byte(x), 0, 0}).String() + "/17"},
		{"ingress", first.Ingress, netip.AddrFrom4([4]byte{127, byte(x), 128, 0}).String() + "/17"},
	} {
		if tt.got.String() != tt.want {
			t.Errorf("%s range %s, want %s", tt.name, tt.got, tt.want)
		}
	}
	if first.Nodes.Overlaps(first.Ingress) {
		t.Errorf("node range %s overlaps ingress range %s", first.Nodes, first.Ingress)
	}

	second, err := claimAddressBlock(seeded())
	if err != nil {
		t.Fatal(err)
	}
	if second.Block == first.Block {
		t.Errorf("block %s given to two running clouds", first.Block)
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := claimAddressBlock(seeded())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release()
	if again.Block != first.Block {
		t.Errorf("after release, the same draw gave %s, want %s back", again.Block, first.Block)
	}
}

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
	block, err := claimAddressBlock(rand.New(rand.NewPCG(3, uint64(os.Getpid()))))
	if err != nil {
		t.Fatal(err)
	}
	defer block.Release()
	for _, leftover := range []bool{false, true} {
		if leftover {
			// A killed cloud's route, left behind.
			b := block.Block.Addr().As4()
			out, err := exec.Command("ip", "-4", "route", "add", "local", fmt.Sprintf("100.72.%d.0/24", b[1]), "dev", "lo").CombinedOutput()
			if err != nil {
				t.Fatalf("adding a leftover route: %v: %s", err, out)
			}
		}
		r, err := routeIngress(block)
		if err != nil {
			t.Fatalf("leftover route %v: %v", leftover, err)
		}
		if b := block.Block.Addr().As4(); r.Prefix.String() != fmt.Sprintf("100.72.%d.0/24", b[1]) {
			t.Fatalf("range %s for block %s", r.Prefix, block.Block)
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
