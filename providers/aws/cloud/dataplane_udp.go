package cloud

import (
	"net"
	"net/netip"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/loopback"
)

// A Network Load Balancer's UDP listener relays datagrams. Each client
// address is a flow, as AWS keeps one: its first datagram picks a target
// (admitted by the target's security groups, as a TCP client is), and
// every later datagram of the flow goes to that target until the flow has
// been idle for udpFlowIdle; the target's answers go back to the client
// from the listener's address. A datagram no target admits is dropped.

const (
	// udpFlowIdle is how long a UDP flow lives without traffic (AWS's
	// idle timeout for UDP flows is 120 seconds; a run needs no more
	// than this).
	udpFlowIdle = 30 * time.Second
	maxUDPFlows = 1024
)

// listenUDP opens the UDP listener of a load balancer's port. Called with
// dp.mu held.
func (dp *dataPlane) listenUDP(name string, rt *lbRuntime, port int32) {
	at := netip.AddrPortFrom(rt.view.addr, uint16(port))
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(at))
	if err != nil {
		if !rt.unbound[-port] {
			dp.logf("%s: cannot serve UDP listener %s: %v", rt.view.label, at, err)
			rt.unbound[-port] = true
		}
		return
	}
	delete(rt.unbound, -port)
	rt.packets[port] = loopback.RelayUDP(conn, loopback.UDPFlows{
		Open: func(client netip.AddrPort) net.Conn {
			to, admitted := dp.pick(name, "udp", port, client.Addr(), nil)
			if !admitted || !to.IsValid() {
				return nil // dropped, as a security group drops it
			}
			c, err := net.Dial("udp", to.String())
			if err != nil {
				return nil
			}
			return c
		},
		Idle:     udpFlowIdle,
		MaxFlows: maxUDPFlows,
	})
}
