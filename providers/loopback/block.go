// Package loopback hands each simulated cloud on this machine a loopback
// /16 of its own. Simulated nodes answer on their instances' InternalIPs and
// load balancers listen on their ingress addresses, all in 127.0.0.0/8,
// which Linux routes to lo without configuration; two clouds running at
// once (two conformance runs, or two lanes of one) must never share an
// address, so each claims a block first.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"
)

// Every block is 127.X.0.0/16 with X in [FirstBlock, LastBlock]: instance
// addresses come from its lower half and load balancer addresses from its
// upper half.
//
// A cloud claims its block by listening on ClaimPort at the block's last
// address, 127.X.255.255, for as long as it runs; allocators skip
// addresses that end in .255, so no node or load balancer ever uses it. A
// block whose claim address is taken belongs to a running cloud, and
// another one is tried.
const (
	FirstBlock = 66 // below: 127.0/16 is everyone's; 127.64 and 127.65 are the reference cloud's fixed defaults of earlier versions
	LastBlock  = 254
	ClaimPort  = 49151
	maxTries   = 64
)

// Block is a claimed /16 and the two halves made from it.
type Block struct {
	Prefix, Nodes, Ingress netip.Prefix
	claim                  net.Listener
}

// Release gives the block back.
func (b *Block) Release() error { return b.claim.Close() }

// Claim claims a free block, trying blocks in an order drawn from rng.
func Claim(rng *rand.Rand) (*Block, error) {
	var lastErr error
	for try := 0; try < maxTries; try++ {
		x := FirstBlock + rng.IntN(LastBlock-FirstBlock+1)
		block := netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(x), 0, 0}), 16)
		claimAddr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, byte(x), 255, 255}), ClaimPort)
		l, err := net.Listen("tcp4", claimAddr.String())
		if errors.Is(err, syscall.EADDRINUSE) {
			lastErr = err
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("claiming loopback block %s: %w", block, err)
		}
		return &Block{
			Prefix:  block,
			Nodes:   netip.PrefixFrom(block.Addr(), 17),
			Ingress: netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(x), 128, 0}), 17),
			claim:   l,
		}, nil
	}
	return nil, fmt.Errorf("no free loopback block in 127.%d.0.0-127.%d.0.0 after %d tries (last: %v)",
		FirstBlock, LastBlock, maxTries, lastErr)
}
