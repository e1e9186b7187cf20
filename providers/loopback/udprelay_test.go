package loopback

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// echoUDP answers each datagram with "<name>:<datagram>" and returns its
// address.
func echoUDP(t *testing.T, name string) netip.AddrPort {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = conn.WriteToUDPAddrPort([]byte(name+":"+string(buf[:n])), from)
		}
	}()
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// udpClient is one client address of a relay.
type udpClient struct {
	t *testing.T
	c *net.UDPConn
}

func dialRelay(t *testing.T, r *UDPRelay) udpClient {
	t.Helper()
	c, err := net.DialUDP("udp4", nil, r.conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return udpClient{t, c}
}

// ask sends msg and returns the answer, or "" when none comes within wait.
func (u udpClient) ask(msg string, wait time.Duration) string {
	u.t.Helper()
	if _, err := u.c.Write([]byte(msg)); err != nil {
		u.t.Fatal(err)
	}
	_ = u.c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 2048)
	n, err := u.c.Read(buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

func (r *UDPRelay) openFlows() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.open)
}

func TestUDPRelay(t *testing.T) {
	const answered, dropped = time.Second, 200 * time.Millisecond
	for _, tt := range []struct {
		name     string
		admit    bool // Admit refuses every datagram when false
		target   bool // Open finds no target when false
		idle     time.Duration
		maxFlows int
		// run drives the relay with two clients and returns the number
		// of opens it wants to have seen.
		run func(t *testing.T, r *UDPRelay, a, b udpClient) int32
	}{{
		name: "a flow carries every datagram of its client to one target and back", admit: true, target: true, idle: time.Minute,
		run: func(t *testing.T, r *UDPRelay, a, b udpClient) int32 {
			for _, msg := range []string{"one", "two"} {
				if got := a.ask(msg, answered); got != "t:"+msg {
					t.Errorf("client a sent %q, got %q", msg, got)
				}
			}
			if got := b.ask("three", answered); got != "t:three" {
				t.Errorf("client b got %q", got)
			}
			if n := r.openFlows(); n != 2 {
				t.Errorf("%d flows open, want 2 (one per client)", n)
			}
			return 2
		},
	}, {
		name: "a datagram without a target is dropped, and the next one asks again", admit: true, target: false, idle: time.Minute,
		run: func(t *testing.T, r *UDPRelay, a, b udpClient) int32 {
			for _, msg := range []string{"one", "two"} {
				if got := a.ask(msg, dropped); got != "" {
					t.Errorf("dropped datagram %q got an answer %q", msg, got)
				}
			}
			return 2
		},
	}, {
		name: "a datagram Admit refuses is dropped before any target is opened", admit: false, target: true, idle: time.Minute,
		run: func(t *testing.T, r *UDPRelay, a, b udpClient) int32 {
			if got := a.ask("one", dropped); got != "" {
				t.Errorf("refused datagram got an answer %q", got)
			}
			return 0
		},
	}, {
		name: "an idle flow ends and the client's next datagram opens another", admit: true, target: true, idle: 150 * time.Millisecond,
		run: func(t *testing.T, r *UDPRelay, a, b udpClient) int32 {
			if got := a.ask("one", answered); got != "t:one" {
				t.Errorf("got %q", got)
			}
			deadline := time.Now().Add(5 * time.Second)
			for r.openFlows() != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the idle flow never ended")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := a.ask("two", answered); got != "t:two" {
				t.Errorf("after the flow ended, got %q", got)
			}
			return 2
		},
	}, {
		name: "past MaxFlows a new client ends the least active flow", admit: true, target: true, idle: time.Minute, maxFlows: 1,
		run: func(t *testing.T, r *UDPRelay, a, b udpClient) int32 {
			for _, c := range []udpClient{a, b, a} {
				if got := c.ask("x", answered); got != "t:x" {
					t.Errorf("got %q", got)
				}
			}
			if n := r.openFlows(); n != 1 {
				t.Errorf("%d flows open, want MaxFlows 1", n)
			}
			return 3
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			target := echoUDP(t, "t")
			var opens atomic.Int32
			conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			r := RelayUDP(conn, UDPFlows{
				Open: func(netip.AddrPort) net.Conn {
					opens.Add(1)
					if !tt.target {
						return nil
					}
					c, err := net.Dial("udp", target.String())
					if err != nil {
						t.Error(err)
						return nil
					}
					return c
				},
				Admit:    func(netip.AddrPort) bool { return tt.admit },
				Idle:     tt.idle,
				MaxFlows: tt.maxFlows,
			})
			defer r.Close()
			want := tt.run(t, r, dialRelay(t, r), dialRelay(t, r))
			if got := opens.Load(); got != want {
				t.Errorf("Open called %d times, want %d", got, want)
			}
		})
	}
}

// Close ends every flow: the targets' sockets are closed and the listener
// answers no more.
func TestUDPRelayCloseEndsFlows(t *testing.T) {
	target := echoUDP(t, "t")
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan net.Conn, 1)
	r := RelayUDP(conn, UDPFlows{
		Open: func(netip.AddrPort) net.Conn {
			c, err := net.Dial("udp", target.String())
			if err != nil {
				t.Error(err)
				return nil
			}
			opened <- c
			return c
		},
		Idle: time.Minute,
	})
	a := dialRelay(t, r)
	if got := a.ask("one", time.Second); got != "t:one" {
		t.Fatalf("got %q", got)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := (<-opened).Write([]byte("x")); err == nil {
		t.Error("the flow's socket to its target is still open after Close")
	}
	if got := a.ask("two", 200*time.Millisecond); got != "" {
		t.Errorf("the closed relay answered %q", got)
	}
	if n := r.openFlows(); n != 0 {
		t.Errorf("%d flows left after Close", n)
	}
}
