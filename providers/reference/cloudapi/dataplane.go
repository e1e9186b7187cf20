package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/loopback"
)

// The data path makes load balancers real: each one listens on its ingress
// IP at each of its ports and forwards to a backend node's InternalIP at the
// port's nodePort. It is deliberately small: TCP is spliced both ways, UDP
// is relayed with a flow (a connected socket to one backend) per client
// address.

const (
	dialTimeout = 2 * time.Second
	// deniedHold is how long a client outside a load balancer's source
	// ranges is held without an answer, as a dropping firewall would.
	deniedHold     = 30 * time.Second
	udpIdleTimeout = 30 * time.Second
	maxUDPFlows    = 1024
)

// dataPlane owns the runtime side of every load balancer.
type dataPlane struct {
	// resolve returns the InternalIP IPv4 of a running instance by name.
	resolve  func(name string) (netip.Addr, bool)
	interval time.Duration
	logf     func(format string, args ...any)
	probes   *http.Client

	mu  sync.Mutex
	lbs map[string]*lbRuntime
}

func newDataPlane(resolve func(string) (netip.Addr, bool), interval time.Duration, logf func(string, ...any)) *dataPlane {
	return &dataPlane{
		resolve:  resolve,
		interval: interval,
		logf:     logf,
		// No proxy, no keep-alives: each probe is one fresh connection
		// to the node, the way a cloud health checker behaves.
		probes: &http.Client{
			Transport: &http.Transport{DisableKeepAlives: true},
			Timeout:   min(interval, time.Second),
		},
		lbs: map[string]*lbRuntime{},
	}
}

// apply makes the runtime of a load balancer match lb: it binds listeners
// for new ports, closes those of removed ports, and takes the new backends,
// source ranges and health check port for the next connections.
func (dp *dataPlane) apply(lb LoadBalancer) error {
	ip, err := netip.ParseAddr(lb.IngressIP)
	if err != nil {
		return fmt.Errorf("ingress IP %q: %w", lb.IngressIP, err)
	}
	ranges := make([]netip.Prefix, 0, len(lb.SourceRanges))
	for _, cidr := range lb.SourceRanges {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return fmt.Errorf("source range %q: %w", cidr, err)
		}
		ranges = append(ranges, p.Masked())
	}

	dp.mu.Lock()
	rt, ok := dp.lbs[lb.Name]
	if !ok {
		ctx, cancel := context.WithCancel(context.Background())
		rt = &lbRuntime{dp: dp, name: lb.Name, ip: ip, cancel: cancel, probeNow: make(chan struct{}, 1), listeners: map[portKey]io.Closer{}}
		dp.lbs[lb.Name] = rt
		go rt.probeLoop(ctx)
	}
	dp.mu.Unlock()
	return rt.update(lb.LoadBalancerSpec, ranges)
}

// remove closes a load balancer's listeners, connections and health checks.
func (dp *dataPlane) remove(name string) {
	dp.mu.Lock()
	rt, ok := dp.lbs[name]
	delete(dp.lbs, name)
	dp.mu.Unlock()
	if ok {
		rt.close()
	}
}

func (dp *dataPlane) close() error {
	dp.mu.Lock()
	lbs := dp.lbs
	dp.lbs = map[string]*lbRuntime{}
	dp.mu.Unlock()
	for _, rt := range lbs {
		rt.close()
	}
	return nil
}

type portKey struct {
	protocol string
	port     int32
}

// lbRuntime is one load balancer's listeners and health state.
type lbRuntime struct {
	dp       *dataPlane
	name     string
	ip       netip.Addr
	cancel   context.CancelFunc // stops the health checks
	probeNow chan struct{}

	mu        sync.Mutex
	spec      LoadBalancerSpec
	ranges    []netip.Prefix
	healthy   map[string]bool // replaced, never mutated, by each probe round
	next      uint64          // round-robin counter
	listeners map[portKey]io.Closer
}

func (rt *lbRuntime) update(spec LoadBalancerSpec, ranges []netip.Prefix) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.spec = spec
	rt.ranges = ranges

	want := map[portKey]bool{}
	for _, p := range spec.Ports {
		want[portKey{p.Protocol, p.Port}] = true
	}
	for key, l := range rt.listeners {
		if !want[key] {
			_ = l.Close()
			delete(rt.listeners, key)
		}
	}
	var errs []error
	for key := range want {
		if _, ok := rt.listeners[key]; ok {
			continue
		}
		l, err := rt.listen(key)
		if err != nil {
			rt.dp.logf("load balancer %s: %v", rt.name, err)
			errs = append(errs, err)
			continue
		}
		rt.listeners[key] = l
	}
	select { // let the health checks see new backends now
	case rt.probeNow <- struct{}{}:
	default:
	}
	return errors.Join(errs...)
}

func (rt *lbRuntime) listen(key portKey) (io.Closer, error) {
	addr := netip.AddrPortFrom(rt.ip, uint16(key.port))
	switch key.protocol {
	case ProtocolTCP:
		ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(addr))
		if err != nil {
			return nil, fmt.Errorf("binding TCP %s: %w", addr, err)
		}
		l := &tcpListener{rt: rt, port: key.port, ln: ln, conns: map[net.Conn]struct{}{}}
		go l.serve()
		return l, nil
	case ProtocolUDP:
		conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
		if err != nil {
			return nil, fmt.Errorf("binding UDP %s: %w", addr, err)
		}
		return loopback.RelayUDP(conn, loopback.UDPFlows{
			// Source ranges can change under an open flow: every
			// datagram is checked.
			Admit: func(client netip.AddrPort) bool { return rt.allowed(client.Addr()) },
			Open: func(client netip.AddrPort) net.Conn {
				target, ok := rt.pick(key, client.Addr())
				if !ok {
					return nil
				}
				backend, err := dialBackend("udp", client.Addr(), target)
				if err != nil {
					return nil
				}
				return backend
			},
			Idle:     udpIdleTimeout,
			MaxFlows: maxUDPFlows,
		}), nil
	default:
		return nil, fmt.Errorf("unsupported protocol %q", key.protocol)
	}
}

func (rt *lbRuntime) close() {
	rt.cancel()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for key, l := range rt.listeners {
		_ = l.Close()
		delete(rt.listeners, key)
	}
}

// allowed reports whether a client address passes the source ranges.
func (rt *lbRuntime) allowed(client netip.Addr) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.ranges) == 0 {
		return true
	}
	client = client.Unmap()
	return slices.ContainsFunc(rt.ranges, func(p netip.Prefix) bool { return p.Contains(client) })
}

// pick chooses the backend address for a new connection or UDP session of
// client to a port, among the backends that are running, have an
// InternalIP IPv4 and, when the load balancer health-checks, passed the
// last probe: by a hash of the client's address with session affinity
// ClientIP, round-robin otherwise.
func (rt *lbRuntime) pick(key portKey, client netip.Addr) (netip.AddrPort, bool) {
	rt.mu.Lock()
	var nodePort int32
	for _, p := range rt.spec.Ports {
		if p.Protocol == key.protocol && p.Port == key.port {
			nodePort = p.NodePort
		}
	}
	backends, hcPort, healthy := rt.spec.Backends, rt.spec.HealthCheckNodePort, rt.healthy
	n := rt.next
	rt.next++
	if rt.spec.SessionAffinity == SessionAffinityClientIP {
		n = clientHash(client)
	}
	rt.mu.Unlock()

	if nodePort == 0 {
		return netip.AddrPort{}, false
	}
	var eligible []netip.Addr
	for _, name := range backends {
		if hcPort != 0 && !healthy[name] {
			continue
		}
		if ip, ok := rt.dp.resolve(name); ok {
			eligible = append(eligible, ip)
		}
	}
	if len(eligible) == 0 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(eligible[n%uint64(len(eligible))], uint16(nodePort)), true
}

// clientHash is a stable hash of a client address (FNV-1a), so that one
// client maps to one backend for as long as the eligible set holds.
func clientHash(client netip.Addr) uint64 {
	h := fnv.New64a()
	b := client.Unmap().As16()
	_, _ = h.Write(b[:])
	return h.Sum64()
}

// probeLoop health-checks the backends every interval, and at once when
// the load balancer changes.
func (rt *lbRuntime) probeLoop(ctx context.Context) {
	t := time.NewTicker(rt.dp.interval)
	defer t.Stop()
	for {
		rt.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-rt.probeNow:
		}
	}
}

func (rt *lbRuntime) probe(ctx context.Context) {
	rt.mu.Lock()
	backends, hcPort := rt.spec.Backends, rt.spec.HealthCheckNodePort
	rt.mu.Unlock()

	healthy := map[string]bool{}
	if hcPort != 0 {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for _, name := range backends {
			ip, ok := rt.dp.resolve(name)
			if !ok {
				continue
			}
			url := "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(int(hcPort))) + "/healthz"
			wg.Go(func() {
				if rt.dp.healthz(ctx, url) {
					mu.Lock()
					healthy[name] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	rt.mu.Lock()
	rt.healthy = healthy
	rt.mu.Unlock()
}

// healthz reports whether GET url answers 200.
func (dp *dataPlane) healthz(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := dp.probes.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64*1024))
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// ---- TCP ----

// tcpListener accepts clients on one TCP port and splices each to a backend.
type tcpListener struct {
	rt   *lbRuntime
	port int32
	ln   *net.TCPListener

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open client and backend connections
	closed bool
}

func (l *tcpListener) serve() {
	for {
		c, err := l.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Transient (out of file descriptors and the like): back off.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		go l.handle(c)
	}
}

func (l *tcpListener) handle(client net.Conn) {
	remote, _ := client.RemoteAddr().(*net.TCPAddr)
	if remote == nil || !l.rt.allowed(remote.AddrPort().Addr()) {
		// A cloud firewall drops a client outside the source ranges: it
		// hears nothing back until it gives up. Hold the connection silent
		// until the client closes it, for deniedHold at most.
		_ = client.SetReadDeadline(time.Now().Add(deniedHold))
		_, _ = io.Copy(io.Discard, client)
		_ = client.Close()
		return
	}
	target, ok := l.rt.pick(portKey{ProtocolTCP, l.port}, remote.AddrPort().Addr())
	if !ok || !l.track(client) {
		_ = client.Close()
		return
	}
	defer l.untrack(client)
	backend, err := dialBackend("tcp", remote.AddrPort().Addr(), target)
	if err != nil || !l.track(backend) {
		_ = client.Close()
		if backend != nil {
			_ = backend.Close()
		}
		return
	}
	defer l.untrack(backend)
	loopback.Splice(client, backend)
}

// dialBackend connects to a backend node for a client. A load balancer
// whose clients are on this host (a kind cluster's host, whose ingress
// range is routed here: routableIngress) keeps the client's address, as
// a cloud's pass-through load balancer does: it dials from that address,
// which the host holds, so the pod behind a Local traffic policy sees the
// client and not the load balancer (upstream's "should work for
// type=LoadBalancer" checks that). A loopback client cannot be kept (the
// kernel drops loopback sources off the lo device), nor a client whose
// address is not this host's: the dial then comes from the host's own
// address, as a proxy's does.
func dialBackend(network string, client netip.Addr, target netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	if client.IsValid() && !client.IsLoopback() && !client.IsUnspecified() {
		keep := d
		if network == "udp" {
			keep.LocalAddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(client.Unmap(), 0))
		} else {
			keep.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(client.Unmap(), 0))
		}
		c, err := keep.Dial(network, target.String())
		if !errors.Is(err, syscall.EADDRNOTAVAIL) {
			return c, err
		}
	}
	return d.Dial(network, target.String())
}

// track records an open connection so Close can end it; it reports false
// when the listener is already closed.
func (l *tcpListener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *tcpListener) untrack(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
}

// Close stops accepting and ends every open connection.
func (l *tcpListener) Close() error {
	err := l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
	return err
}
