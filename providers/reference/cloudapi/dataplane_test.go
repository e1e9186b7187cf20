package cloudapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The data path tests bind real sockets on 127.66.0.0/16, a loopback
// range that no other package's tests use: nodes on 127.66.0.x, load
// balancer ingress on 127.66.1.x.
var (
	testNodeRange    = netip.MustParsePrefix("127.66.0.0/24")
	testIngressRange = netip.MustParsePrefix("127.66.1.0/24")
)

func TestSourceRangeCheck(t *testing.T) {
	tests := []struct {
		name    string
		ranges  []string
		client  string
		allowed bool
	}{
		{"no ranges allow all", nil, "198.51.100.7", true},
		{"inside", []string{"10.0.0.0/8", "127.0.0.0/24"}, "127.0.0.1", true},
		{"outside", []string{"10.0.0.0/8"}, "127.0.0.1", false},
		{"IPv4-mapped client", []string{"127.0.0.1/32"}, "::ffff:127.0.0.1", true},
		{"IPv6 client, IPv4 ranges", []string{"0.0.0.0/0"}, "::1", false},
		{"IPv6 range", []string{"fd00::/8"}, "fd00::5", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &lbRuntime{}
			for _, r := range tt.ranges {
				rt.ranges = append(rt.ranges, netip.MustParsePrefix(r))
			}
			if got := rt.allowed(netip.MustParseAddr(tt.client)); got != tt.allowed {
				t.Errorf("allowed(%s) with %v = %v, want %v", tt.client, tt.ranges, got, tt.allowed)
			}
		})
	}
}

// serveTCPBackend listens on ip:port (port 0 picks one) and answers each
// connection with "<name>\n", then echoes what it reads.
func serveTCPBackend(t *testing.T, name, ip string, port int) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("backend %s: %v", name, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, name+"\n")
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// serveHealthz serves /healthz with the given status on ip:port.
func serveHealthz(t *testing.T, ip string, port, status int) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// tcpRequest connects to addr from local (empty: any), reads the backend's
// name, and checks that a line is echoed. It returns the backend name.
func tcpRequest(addr, local string) (string, error) {
	d := net.Dialer{Timeout: time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	name, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the backend name: %w", err)
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	if echo, err := r.ReadString('\n'); err != nil || echo != "ping\n" {
		return "", fmt.Errorf("echo = %q, %v", echo, err)
	}
	return strings.TrimSpace(name), nil
}

// backendsSeen makes n requests and returns how often each backend
// answered; failed requests count under "error".
func backendsSeen(addr string, n int) map[string]int {
	seen := map[string]int{}
	for range n {
		name, err := tcpRequest(addr, "")
		if err != nil {
			name = "error"
		}
		seen[name]++
	}
	return seen
}

func TestTCPForwarding(t *testing.T) {
	_, c := newTestCloud(t, Options{NodeIPRange: testNodeRange, IngressIPRange: testIngressRange, HealthCheckInterval: 20 * time.Millisecond})
	ctx := t.Context()
	for _, name := range []string{"n1", "n2"} {
		if _, err := c.CreateInstance(ctx, CreateInstanceRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	nodePort := serveTCPBackend(t, "n1", "127.66.0.1", 0)
	serveTCPBackend(t, "n2", "127.66.0.2", nodePort)

	spec := LoadBalancerSpec{Ports: []Port{{ProtocolTCP, 8080, int32(nodePort)}}, Backends: []string{"n1", "n2"}}
	lb, err := c.EnsureLoadBalancer(ctx, "tcp", spec)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(lb.IngressIP, "8080")

	if seen := backendsSeen(addr, 4); seen["n1"] != 2 || seen["n2"] != 2 {
		t.Errorf("round robin over two backends: saw %v, want 2 each", seen)
	}

	// A stopped instance gets no traffic.
	if _, err := c.StopInstance(ctx, "i-0002"); err != nil {
		t.Fatal(err)
	}
	if seen := backendsSeen(addr, 3); seen["n1"] != 3 {
		t.Errorf("with n2 stopped: saw %v, want only n1", seen)
	}
	if _, err := c.StartInstance(ctx, "i-0002"); err != nil {
		t.Fatal(err)
	}

	// Session affinity ClientIP: every connection of one client address
	// reaches one backend, and the clients between them reach both.
	spec.SessionAffinity = SessionAffinityClientIP
	if _, err := c.EnsureLoadBalancer(ctx, "tcp", spec); err != nil {
		t.Fatal(err)
	}
	reached := map[string]bool{}
	for i := 2; i <= 9; i++ {
		client := fmt.Sprintf("127.0.0.%d", i)
		seen := map[string]int{}
		for range 4 {
			name, err := tcpRequest(addr, client)
			if err != nil {
				name = "error"
			}
			seen[name]++
			reached[name] = true
		}
		if len(seen) != 1 || seen["error"] > 0 {
			t.Errorf("session affinity ClientIP, client %s: saw %v, want one backend for all 4 connections", client, seen)
		}
	}
	if !reached["n1"] || !reached["n2"] {
		t.Errorf("session affinity ClientIP: eight clients reached %v, want both backends", reached)
	}
	spec.SessionAffinity = ""
	if _, err := c.EnsureLoadBalancer(ctx, "tcp", spec); err != nil {
		t.Fatal(err)
	}
	if seen := backendsSeen(addr, 4); seen["n1"] != 2 || seen["n2"] != 2 {
		t.Errorf("session affinity back to none: saw %v, want round robin, 2 each", seen)
	}

	// Source ranges: 127.0.0.2 is allowed, 127.0.0.3 hears nothing back
	// (dropped, as by a cloud firewall), so its read times out.
	spec.SourceRanges = []string{"127.0.0.2/32"}
	if _, err := c.EnsureLoadBalancer(ctx, "tcp", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := tcpRequest(addr, "127.0.0.2"); err != nil {
		t.Errorf("from an allowed source: %v", err)
	}
	var timeout net.Error
	if _, err := tcpRequest(addr, "127.0.0.3"); !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Errorf("from a source outside the ranges: got %v, want a timeout (no answer)", err)
	}
	spec.SourceRanges = nil

	// Health checks: only n2 answers 200, so only n2 gets traffic (once
	// the first probe is done; until then no backend is known healthy).
	hcPort := serveHealthz(t, "127.66.0.2", 0, http.StatusOK)
	serveHealthz(t, "127.66.0.1", hcPort, http.StatusServiceUnavailable)
	spec.HealthCheckNodePort = int32(hcPort)
	if _, err := c.EnsureLoadBalancer(ctx, "tcp", spec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "only n2 to get traffic", func() bool {
		seen := backendsSeen(addr, 4)
		return seen["n2"] == 4
	})

	// Moving the listener to another port closes the old one.
	spec.Ports = []Port{{ProtocolTCP, 8081, int32(nodePort)}}
	if _, err := c.EnsureLoadBalancer(ctx, "tcp", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := tcpRequest(addr, ""); err == nil {
		t.Error("the old port still answers after the update")
	}
	if _, err := tcpRequest(net.JoinHostPort(lb.IngressIP, "8081"), ""); err != nil {
		t.Errorf("the new port: %v", err)
	}

	if err := c.DeleteLoadBalancer(ctx, "tcp"); err != nil {
		t.Fatal(err)
	}
	if _, err := tcpRequest(net.JoinHostPort(lb.IngressIP, "8081"), ""); err == nil {
		t.Error("the load balancer still answers after deletion")
	}
}

// serveUDPEcho answers each datagram on ip:port with "<name>:<datagram>".
func serveUDPEcho(t *testing.T, name, ip string, port int) int {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), uint16(port))))
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
	return conn.LocalAddr().(*net.UDPAddr).Port
}

// udpRequest sends msg to addr and returns the reply, or an error when
// none comes within the timeout.
func udpRequest(addr, msg string, timeout time.Duration) (string, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func TestUDPForwarding(t *testing.T) {
	_, c := newTestCloud(t, Options{NodeIPRange: testNodeRange, IngressIPRange: testIngressRange})
	ctx := t.Context()
	if _, err := c.CreateInstance(ctx, CreateInstanceRequest{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	nodePort := serveUDPEcho(t, "n1", "127.66.0.1", 0)

	spec := LoadBalancerSpec{Ports: []Port{{ProtocolUDP, 5353, int32(nodePort)}}, Backends: []string{"n1"}}
	lb, err := c.EnsureLoadBalancer(ctx, "udp", spec)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(lb.IngressIP, "5353")
	for _, msg := range []string{"hello", "again"} {
		if got, err := udpRequest(addr, msg, 2*time.Second); err != nil || got != "n1:"+msg {
			t.Errorf("udp %q: got %q, %v; want %q", msg, got, err, "n1:"+msg)
		}
	}

	spec.SourceRanges = []string{"10.0.0.0/8"}
	if _, err := c.EnsureLoadBalancer(ctx, "udp", spec); err != nil {
		t.Fatal(err)
	}
	if got, err := udpRequest(addr, "blocked", 300*time.Millisecond); err == nil {
		t.Errorf("udp from outside the source ranges got a reply %q", got)
	}
}

// waitFor polls cond every 20ms for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client on this host with an address that is not loopback (a kind
// host's routed ingress range) is kept: the backend sees it. A loopback
// client, or one whose address the host does not hold, is not: the dial
// comes from the host's own address.
func TestDialBackendKeepsALocalClientAddress(t *testing.T) {
	backend, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	seen := make(chan netip.Addr, 1)
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			seen <- c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
			c.Close()
		}
	}()
	target := netip.MustParseAddrPort(backend.Addr().String())

	cases := []struct {
		name   string
		client netip.Addr
		want   netip.Addr
	}{
		{"loopback client", netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.1")},
		{"client the host does not hold", netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("127.0.0.1")},
	}
	if local, ok := hostAddress(); ok {
		cases = append(cases, struct {
			name   string
			client netip.Addr
			want   netip.Addr
		}{"client on this host, not loopback", local, local})
	} else {
		t.Log("this host has no IPv4 address but loopback: the case that keeps the client is not run")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := dialBackend("tcp", c.client, target)
			if err != nil {
				t.Fatalf("dialBackend(%s): %v", c.client, err)
			}
			defer conn.Close()
			if got := <-seen; got != c.want {
				t.Errorf("the backend saw a connection from %s, want %s", got, c.want)
			}
		})
	}
}

// hostAddress is an IPv4 address of one of this host's interfaces that is
// not loopback.
func hostAddress() (netip.Addr, bool) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
			return p.Addr(), true
		}
	}
	return netip.Addr{}, false
}
