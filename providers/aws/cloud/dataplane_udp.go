package cloud

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// A Network Load Balancer's UDP listener relays datagrams. Each client
// address is a flow, as AWS keeps one: its first datagram picks a target
// (admitted by the target's security groups, as a TCP client is), and
// every later datagram of the flow goes to that target until the flow has
// been idle for udpFlowIdle; the target's answers go back to the client
// from the listener's address. A datagram no target admits is dropped.

// udpFlowIdle is how long a UDP flow lives without traffic (AWS's idle
// timeout for UDP flows is 120 seconds; a run needs no more than this).
const udpFlowIdle = 30 * time.Second

type udpListener struct {
	pc net.PacketConn

	mu     sync.Mutex
	flows  map[netip.AddrPort]net.Conn // client → its connected socket to the target
	closed bool
}

func (u *udpListener) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	_ = u.pc.Close()
	for client, c := range u.flows {
		_ = c.Close()
		delete(u.flows, client)
	}
}

// listenUDP opens the UDP listener of a load balancer's port. Called with
// dp.mu held.
func (dp *dataPlane) listenUDP(name string, rt *lbRuntime, port int32) {
	at := netip.AddrPortFrom(rt.view.addr, uint16(port)).String()
	pc, err := net.ListenPacket("udp", at)
	if err != nil {
		if !rt.unbound[-port] {
			dp.logf("%s: cannot serve UDP listener %s: %v", rt.view.label, at, err)
			rt.unbound[-port] = true
		}
		return
	}
	delete(rt.unbound, -port)
	u := &udpListener{pc: pc, flows: map[netip.AddrPort]net.Conn{}}
	rt.packets[port] = u
	go dp.relayUDP(name, port, u)
}

func (dp *dataPlane) relayUDP(name string, port int32, u *udpListener) {
	buf := make([]byte, 65535)
	for {
		n, from, err := u.pc.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		addr, ok := from.(*net.UDPAddr)
		if !ok {
			continue
		}
		client := addr.AddrPort()
		u.mu.Lock()
		flow := u.flows[client]
		u.mu.Unlock()
		if flow == nil {
			to, admitted := dp.pick(name, "udp", port, client.Addr(), nil)
			if !admitted || !to.IsValid() {
				continue // dropped, as a security group drops it
			}
			c, err := net.Dial("udp", to.String())
			if err != nil {
				continue
			}
			u.mu.Lock()
			if u.closed {
				u.mu.Unlock()
				_ = c.Close()
				return
			}
			u.flows[client] = c
			u.mu.Unlock()
			flow = c
			go u.answer(client, from, c)
		}
		_ = flow.SetReadDeadline(time.Now().Add(udpFlowIdle))
		_, _ = flow.Write(buf[:n])
	}
}

// answer sends the target's datagrams back to the client until the flow
// is idle for udpFlowIdle, then ends the flow.
func (u *udpListener) answer(client netip.AddrPort, to net.Addr, c net.Conn) {
	defer func() {
		u.mu.Lock()
		if u.flows[client] == c {
			delete(u.flows, client)
		}
		u.mu.Unlock()
		_ = c.Close()
	}()
	buf := make([]byte, 65535)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		if _, err := u.pc.WriteTo(buf[:n], to); err != nil {
			return
		}
	}
}
