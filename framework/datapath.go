package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
)

// The data path probes send traffic to a load balancer's ingress. Behind
// it, a backend answers with one line naming itself: the simulated
// kube-proxy of the local backend does so on every node port, and a real
// cluster can run any echo server that does (docs/suites.md).

// Prober sends the probes. Its Resolver resolves an ingress hostname
// (a load balancer whose ingress is a DNS name, as AWS's classic ones);
// nil is the system's resolver. The zero Prober is ready to use.
type Prober struct {
	Resolver *net.Resolver
}

// NameserverResolver resolves names by asking only the DNS server at
// addr (host:port, UDP and TCP), as a profile's
// loadBalancer.ingressNameserver says to.
func NameserverResolver(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// TCP connects to addr and returns the first line the backend sends.
func (p Prober) TCP(ctx context.Context, addr string, timeout time.Duration) (string, error) {
	return p.TCPFrom(ctx, "", addr, timeout)
}

// TCPFrom is TCP from the local source IP source ("" lets the system
// choose).
func (p Prober) TCPFrom(ctx context.Context, source, addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{Resolver: p.Resolver}
	if source != "" {
		ip := net.ParseIP(source)
		if ip == nil {
			return "", fmt.Errorf("source address %q is not an IP", source)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading from %s: %w", addr, err)
	}
	return strings.TrimSpace(line), nil
}

// UDP sends one datagram to addr and returns the answer.
func (p Prober) UDP(ctx context.Context, addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{Resolver: p.Resolver}
	conn, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write([]byte("ccm-conformance probe\n")); err != nil {
		return "", fmt.Errorf("sending to %s: %w", addr, err)
	}
	buf := make([]byte, 2048)
	n, err := conn.Read(buf)
	if err != nil {
		return "", fmt.Errorf("reading from %s: %w", addr, err)
	}
	if n == 0 {
		return "", fmt.Errorf("%s answered with an empty datagram, expected a backend's name", addr)
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

// Denied reports whether a probe's error says the client was turned away
// as a firewall does: the connection refused, or no answer before the
// probe's deadline. Any other error (a reset, an early close, a name that
// does not resolve) is not a denial: it says something else broke.
func Denied(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
