package loopback

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// Two clouds never get the same automatic block while both run, even when
// they draw the same numbers, and a released block can be claimed again.
func TestClaim(t *testing.T) {
	seeded := func() *rand.Rand { return rand.New(rand.NewPCG(7, 7)) }
	first, err := Claim(seeded())
	if err != nil {
		t.Fatal(err)
	}
	x := int(first.Prefix.Addr().As4()[1])
	if first.Prefix.Bits() != 16 || x < FirstBlock || x > LastBlock {
		t.Errorf("block %s: want a /16 in 127.%d-%d", first.Prefix, FirstBlock, LastBlock)
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

	second, err := Claim(seeded())
	if err != nil {
		t.Fatal(err)
	}
	if second.Prefix == first.Prefix {
		t.Errorf("block %s given to two running clouds", first.Prefix)
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Claim(seeded())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release()
	if again.Prefix != first.Prefix {
		t.Errorf("after release, the same draw gave %s, want %s back", again.Prefix, first.Prefix)
	}
}
