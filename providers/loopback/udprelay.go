package loopback

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// maxDatagram is the largest UDP payload a relay reads or writes.
const maxDatagram = 64 * 1024

// UDPFlows says how a UDPRelay treats its clients.
type UDPFlows struct {
	// Open connects a new flow of client to its target, or returns nil to
	// drop the datagram (no target, or none that admits the client). It
	// is called for a client's first datagram, and again after its flow
	// has ended.
	Open func(client netip.AddrPort) net.Conn
	// Admit, when set, is asked for every datagram, also those of an open
	// flow; a datagram it refuses is dropped. A load balancer whose
	// source ranges can change under an open flow checks them here.
	Admit func(client netip.AddrPort) bool
	// Idle ends a flow that has carried nothing either way for this long.
	Idle time.Duration
	// MaxFlows caps the open flows: opening one more ends the least
	// recently active. Zero means no cap.
	MaxFlows int
}

// UDPRelay relays the datagrams of one UDP socket, a simulated load
// balancer's UDP listener. Each client address is a flow, as a cloud's
// load balancer keeps one: its first datagram opens a socket to a target,
// every later datagram of the flow goes there, and the target's answers go
// back to the client from the listener's address, until the flow is idle.
type UDPRelay struct {
	conn  *net.UDPConn
	flows UDPFlows

	mu     sync.Mutex
	open   map[netip.AddrPort]*udpFlow
	closed bool
}

type udpFlow struct {
	target     net.Conn
	lastActive atomic.Int64 // unix nanoseconds
}

func (f *udpFlow) touch() { f.lastActive.Store(time.Now().UnixNano()) }

func (f *udpFlow) idle() time.Duration {
	return time.Since(time.Unix(0, f.lastActive.Load()))
}

// RelayUDP starts relaying the datagrams that arrive on conn until Close.
func RelayUDP(conn *net.UDPConn, flows UDPFlows) *UDPRelay {
	r := &UDPRelay{conn: conn, flows: flows, open: map[netip.AddrPort]*udpFlow{}}
	go r.serve()
	return r
}

func (r *UDPRelay) serve() {
	buf := make([]byte, maxDatagram)
	for {
		n, client, err := r.conn.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		if r.flows.Admit != nil && !r.flows.Admit(client) {
			continue
		}
		f := r.flow(client)
		if f == nil {
			continue
		}
		if _, err := f.target.Write(buf[:n]); err == nil {
			f.touch()
		}
	}
}

// flow returns the client's flow, opening one if needed. Only serve calls
// it, so two flows of one client are never opened at once.
func (r *UDPRelay) flow(client netip.AddrPort) *udpFlow {
	r.mu.Lock()
	f, ok := r.open[client]
	r.mu.Unlock()
	if ok {
		return f
	}
	// Open without holding r.mu: it asks the cloud's state.
	target := r.flows.Open(client)
	if target == nil {
		return nil
	}
	f = &udpFlow{target: target}
	f.touch()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = target.Close()
		return nil
	}
	if r.flows.MaxFlows > 0 && len(r.open) >= r.flows.MaxFlows {
		r.endLeastActiveLocked()
	}
	r.open[client] = f
	go r.answer(client, f)
	return f
}

// endLeastActiveLocked ends the flow idle longest; r.mu is held.
func (r *UDPRelay) endLeastActiveLocked() {
	var (
		oldest     netip.AddrPort
		oldestIdle time.Duration = -1
	)
	for client, f := range r.open {
		if idle := f.idle(); idle > oldestIdle {
			oldest, oldestIdle = client, idle
		}
	}
	if f, ok := r.open[oldest]; ok {
		delete(r.open, oldest)
		_ = f.target.Close()
	}
}

// answer sends the target's datagrams back to the client until the flow
// has been idle for flows.Idle or its socket fails, then ends the flow.
func (r *UDPRelay) answer(client netip.AddrPort, f *udpFlow) {
	defer func() {
		_ = f.target.Close()
		r.mu.Lock()
		if r.open[client] == f {
			delete(r.open, client)
		}
		r.mu.Unlock()
	}()
	buf := make([]byte, maxDatagram)
	for {
		_ = f.target.SetReadDeadline(time.Now().Add(r.flows.Idle - f.idle()))
		n, err := f.target.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && f.idle() < r.flows.Idle {
				continue // the client sent something meanwhile
			}
			return
		}
		if _, err := r.conn.WriteToUDPAddrPort(buf[:n], client); err != nil {
			return
		}
		f.touch()
	}
}

// Close stops the relay and ends every flow.
func (r *UDPRelay) Close() error {
	err := r.conn.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for client, f := range r.open {
		_ = f.target.Close()
		delete(r.open, client)
	}
	return err
}
