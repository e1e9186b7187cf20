package framework

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// The data path probes send traffic to a load balancer's ingress. Behind
// it, a backend answers with one line naming itself: the simulated
// kube-proxy of the local backend does so on every node port, and a real
// cluster can run any echo server that does (docs/suites.md).

// ProbeTCP connects to addr and returns the first line the backend sends.
func ProbeTCP(ctx context.Context, addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
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

// ProbeUDP sends one datagram to addr and returns the answer.
func ProbeUDP(ctx context.Context, addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
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
