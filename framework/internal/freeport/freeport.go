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
//
// That leaves harness processes running side by side, such as the lanes of
// one run: two can draw the same port, and the second one's check passes
// while the first one's component has not bound it yet. So a drawn port is
// also claimed in a file every harness process on the machine shares
// (claimFile), for claimLease: long enough for its component to start and
// bind it. A port another process has claimed is not drawn.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
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
	// claimLease is how long a port stays claimed after it is drawn. The
	// slowest component to bind is kube-controller-manager, which starts
	// once kube-apiserver is ready: seconds here, a minute on a loaded
	// machine.
	claimLease = 10 * time.Minute
)

// claimFile is where ports are claimed, one byte per port. It is not under
// $TMPDIR, which tests and users set per run, so that every harness on the
// machine sees the same claims.
var claimFile = "/tmp/ccm-conformance-ports.lock"

// Ports returns n distinct free TCP ports on 127.0.0.1, claimed for
// claimLease. No connection the kernel sets up takes one and no other
// harness draws one; a program that binds ports of its own choosing still
// can.
func Ports(n int) ([]int, error) {
	low, high := drawRange(readEphemeralLow())
	ports, release, err := pick(n, low, high)
	if err != nil {
		return nil, err
	}
	time.AfterFunc(claimLease, release)
	return ports, nil
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

// pick claims and binds n distinct ports drawn from [low, high), or chosen
// by the kernel when low is 0. It closes the listeners once all are found
// and returns what gives up the claims. On an error it holds nothing.
func pick(n int, low, high int) (ports []int, release func(), err error) {
	var listeners []net.Listener
	var releases []func()
	releaseAll := func() {
		for _, r := range releases {
			r()
		}
	}
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
		if err != nil {
			releaseAll()
		}
	}()
	for range n {
		l, r, err := listen(low, high)
		if err != nil {
			return nil, nil, err
		}
		listeners = append(listeners, l)
		releases = append(releases, r)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, releaseAll, nil
}

// listen binds a port, drawn or chosen by the kernel, and claims it; a
// port it cannot bind or claim is given up and another tried.
func listen(low, high int) (net.Listener, func(), error) {
	var lastErr error
	for range attempts {
		addr := "127.0.0.1:0"
		if low != 0 {
			addr = "127.0.0.1:" + strconv.Itoa(low+rand.IntN(high-low))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			lastErr = err
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		release, ok := claim(claimFile, port)
		if !ok {
			l.Close()
			lastErr = fmt.Errorf("port %d is claimed by another harness (%s)", port, claimFile)
			continue
		}
		return l, release, nil
	}
	if low == 0 {
		return nil, nil, fmt.Errorf("finding a free port: %d tried, the last: %w", attempts, lastErr)
	}
	return nil, nil, fmt.Errorf("finding a free port in %d-%d: %d ports tried, the last: %w", low, high-1, attempts, lastErr)
}
