// Package freeport picks TCP ports on 127.0.0.1 for components that must be
// told their port before they bind it: etcd, kube-apiserver,
// kube-controller-manager and the CCM (--secure-port).
//
// A port the kernel gives a listener on port 0 comes from its ephemeral
// range, which also supplies the source port of every outgoing connection.
// Between the pick and the component's bind, a connection of another lane,
// or of anything else on the machine, can take that port, and the component
// exits with "address already in use". So ports are drawn at random from
// below the ephemeral range, where the kernel assigns none by itself, and
// each is checked by binding it.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// rangeFile holds Linux's ephemeral port range, "low high".
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

const (
	// lowest is the first port drawn: above the well-known and the
	// commonly configured service ports.
	lowest = 10000
	// defaultEphemeralLow is Linux's default start of the ephemeral range,
	// used where rangeFile cannot be read.
	defaultEphemeralLow = 32768
	// attempts bounds the draws for each port.
	attempts = 100
)

// Ports returns n distinct free TCP ports on 127.0.0.1. Another process can
// still bind one before the caller's component does, but no connection the
// kernel sets up takes one.
func Ports(n int) ([]int, error) {
	low, high := drawRange(readEphemeralLow())
	return pick(n, low, high)
}

// Port returns one free TCP port on 127.0.0.1, as Ports does.
func Port() (int, error) {
	ports, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// drawRange is the range ports are drawn from, [low, high), given the start
// of the ephemeral range. A machine whose ephemeral range starts too low to
// leave room gets low == 0: ask the kernel instead.
func drawRange(ephemeralLow int) (low, high int) {
	if ephemeralLow-lowest < 1000 {
		return 0, 0
	}
	return lowest, ephemeralLow
}

func readEphemeralLow() int {
	data, err := os.ReadFile(rangeFile)
	if err != nil {
		return defaultEphemeralLow
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return defaultEphemeralLow
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 0 {
		return defaultEphemeralLow
	}
	return low
}

// pick binds n distinct ports drawn from [low, high), or chosen by the
// kernel when low is 0, and releases them once all are found.
func pick(n int, low, high int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := listen(low, high)
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func listen(low, high int) (net.Listener, error) {
	if low == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		return l, nil
	}
	var lastErr error
	for range attempts {
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			return l, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("finding a free port in %d-%d: %d ports tried, the last: %w", low, high-1, attempts, lastErr)
}
