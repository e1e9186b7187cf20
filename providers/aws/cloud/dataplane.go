package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/loopback"
)

// The data path makes classic load balancers carry traffic. Each one that
// has an address (Options.LoadBalancerAddresses) listens there on each of
// its listeners' ports, admits the clients its security groups let in, and
// forwards each connection to one of its registered instances at the
// listener's instance port. An instance is a target while it is running,
// sits in a zone of one of the load balancer's subnets, and is InService by
// the load balancer's health check. Every listener is forwarded as TCP:
// HTTP and SSL listeners carry the same bytes (no TLS is terminated here).
//
// Health checks run every healthCheckEvery, not every Interval seconds of
// the load balancer's HealthCheck, so that a run waits seconds where AWS
// would wait minutes; the Target, the Timeout (capped at healthCheckEvery)
// and both thresholds are the load balancer's own. A new instance is
// OutOfService until it passes HealthyThreshold checks in a row, as in AWS.

const (
	dataPathSyncEvery = 250 * time.Millisecond
	healthCheckEvery  = time.Second
	backendDialLimit  = 2 * time.Second
	// deniedHold is how long a client its security groups do not admit is
	// held without an answer, as a dropping firewall would.
	deniedHold = 30 * time.Second
)

// lbView is what the data path needs of one classic load balancer, or of
// one listener of a Network Load Balancer, copied out of the state under
// its lock.
type lbView struct {
	addr  netip.Addr
	ports map[int32]int32 // listener port → instance port (a target's own port wins)
	// rules are the ingress rules of the load balancer's own security
	// groups, which admit or drop a client at the listener's port before
	// any target sees it: a classic load balancer's always, a Network Load
	// Balancer's when it has security groups (the CCM's
	// NLBSecurityGroupMode Managed gives it one).
	rules   []permission
	guarded bool     // whether rules apply: false for an NLB without security groups
	targets []target // running instances in its zones
	// targetGroup is the ARN of a Network Load Balancer listener's target
	// group. Such a load balancer keeps the client's address, so each
	// target's own security groups admit or drop the client, and the
	// health checks' verdicts are written back to the group, where
	// DescribeTargetHealth reads them.
	targetGroup string
	// label names it in the log: "load balancer NAME", or "network load
	// balancer NAME, listener PORT".
	label string
	// tcp and udp say which transports its listeners carry: a classic
	// load balancer's, TCP; a Network Load Balancer listener's, its
	// protocol's (TCP and TLS: TCP; UDP; TCP_UDP: both).
	tcp, udp bool
}

type target struct {
	id   string
	addr netip.Addr
	port int32       // Network Load Balancer: the registered port
	hc   healthCheck // the check this target gets
	// Network Load Balancer: its instance's security group rules, and
	// whether they let in the health checks, which come from the load
	// balancer's addresses in its subnets.
	rules         []permission
	healthAllowed bool
}

// dataPathViews copies the lbView of every load balancer that has an
// address, by name (a Network Load Balancer's listeners by their ARNs);
// the data path leaves the others alone.
func (s *state) dataPathViews() map[string]lbView {
	s.mu.Lock()
	defer s.mu.Unlock()
	views := map[string]lbView{}
	for name, lb := range s.elbs {
		if !lb.addr.IsValid() {
			continue
		}
		v := lbView{addr: lb.addr, ports: map[int32]int32{}, label: "load balancer " + name, tcp: true, guarded: true}
		for _, l := range lb.listeners {
			v.ports[l.port] = l.instancePort
		}
		v.rules = s.ingressRules(lb.groups)
		zones := s.subnetZones(lb.subnets)
		for _, id := range lb.instances {
			if a, ok := s.targetAddr(id, zones); ok {
				v.targets = append(v.targets, target{id: id, addr: a, hc: lb.health, healthAllowed: true})
			}
		}
		views[name] = v
	}
	for _, l := range s.listeners {
		lb := s.nlbs[nlbNameOfARN(l.lbARN)]
		tg := s.targetGroups[l.targetGroup]
		if lb == nil || lb.arn != l.lbARN || !lb.addr.IsValid() || tg == nil {
			continue
		}
		v := lbView{addr: lb.addr, ports: map[int32]int32{l.port: tg.port}, targetGroup: tg.arn,
			label: fmt.Sprintf("network load balancer %s, listener %d", lb.name, l.port),
			tcp:   l.protocol != "UDP", udp: l.protocol == "UDP" || l.protocol == "TCP_UDP",
			guarded: len(lb.groups) > 0}
		v.rules = s.ingressRules(lb.groups)
		zones := s.subnetZones(lb.subnets)
		var healthFrom []netip.Addr
		for _, id := range lb.subnets {
			if sn := s.subnets[id]; sn != nil {
				healthFrom = append(healthFrom, sn.cidr.Addr().Next().Next().Next().Next()) // .4: the load balancer's node there
			}
		}
		for _, t := range tg.targets {
			a, ok := s.targetAddr(t.id, zones)
			if !ok {
				continue
			}
			x := target{id: t.id, addr: a, port: t.port}
			x.rules = s.ingressRules(s.instances[t.id].groups)
			hcPort := t.port
			if n, err := strconv.Atoi(tg.health.port); err == nil {
				hcPort = int32(n)
			}
			x.hc = healthCheck{target: fmt.Sprintf("%s:%d%s", tg.health.protocol, hcPort, tg.health.path),
				timeout: tg.health.timeout, healthy: tg.health.healthy, unhealthy: tg.health.unhealthy}
			x.healthAllowed = slices.ContainsFunc(healthFrom, func(src netip.Addr) bool { return admits(x.rules, "tcp", hcPort, src) })
			v.targets = append(v.targets, x)
		}
		views[l.arn] = v
	}
	return views
}

// ingressRules are the ingress rules of the security groups.
func (s *state) ingressRules(groups []string) []permission {
	var rules []permission
	for _, g := range groups {
		if sg := s.groups[g]; sg != nil {
			rules = append(rules, sg.ingress...)
		}
	}
	return rules
}

// subnetZones are the zones of the subnets.
func (s *state) subnetZones(subnets []string) map[string]bool {
	zones := map[string]bool{}
	for _, id := range subnets {
		if sn := s.subnets[id]; sn != nil {
			zones[sn.zone] = true
		}
	}
	return zones
}

// targetAddr is the private address of an instance that can be a target:
// running, in one of zones.
func (s *state) targetAddr(id string, zones map[string]bool) (netip.Addr, bool) {
	in := s.instances[id]
	if in == nil || in.state != "running" || !zones[in.zone] || len(in.privateIPs) == 0 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(in.privateIPs[0])
	return a, err == nil
}

// setTargetHealth records a health verdict for DescribeTargetHealth.
func (s *state) setTargetHealth(tgARN string, t v2Target, healthy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tg := s.targetGroups[tgARN]; tg != nil && slices.Contains(tg.targets, t) {
		tg.healthy[t] = healthy
	}
}

// admits reports whether security group rules let a client from src
// reach port over protocol (tcp or udp): a rule for all protocols, or for
// that protocol over a port range that holds port, from a CIDR that holds
// src. Rules naming a source group admit only instances of that group, and
// a client is none.
func admits(rules []permission, protocol string, port int32, src netip.Addr) bool {
	src = src.Unmap()
	number := map[string]string{"tcp": "6", "udp": "17"}[protocol]
	for _, r := range rules {
		switch r.protocol {
		case "-1", "all":
		case protocol, number:
			if port < r.from || port > r.to {
				continue
			}
		default:
			continue
		}
		for _, cidr := range []string{r.cidr, r.cidr6} {
			if p, err := netip.ParsePrefix(cidr); err == nil && p.Contains(src) {
				return true
			}
		}
	}
	return false
}

// dataPlane runs every load balancer's listeners and health checks.
type dataPlane struct {
	st     *state
	logf   func(string, ...any)
	probes *http.Client
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu     sync.Mutex
	lbs    map[string]*lbRuntime
	closed bool
}

// lbRuntime is one load balancer's listeners, health and connections.
type lbRuntime struct {
	name      string
	view      lbView
	listeners map[int32]net.Listener
	packets   map[int32]*loopback.UDPRelay
	unbound   map[int32]bool // ports whose bind failed, logged once
	health    map[string]*healthState
	next      int // round-robin counter
	conns     map[net.Conn]bool
}

type healthState struct {
	inService     bool
	decided       bool // InService or OutOfService once, no longer initial
	passes, fails int32
}

// startDataPlane serves the load balancers of s until Close.
func startDataPlane(s *state, logf func(string, ...any)) *dataPlane {
	ctx, cancel := context.WithCancel(context.Background())
	dp := &dataPlane{
		st: s, logf: logf, cancel: cancel, lbs: map[string]*lbRuntime{},
		// One fresh connection per check, as a cloud's health checker
		// makes.
		probes: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	}
	dp.done.Go(func() { dp.every(ctx, dataPathSyncEvery, dp.sync) })
	dp.done.Go(func() { dp.every(ctx, healthCheckEvery, func() { dp.checkHealth(ctx) }) })
	return dp
}

func (dp *dataPlane) every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops every listener, connection and health check.
func (dp *dataPlane) Close() {
	dp.cancel()
	dp.done.Wait()
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.closed = true
	for name, rt := range dp.lbs {
		rt.close()
		delete(dp.lbs, name)
	}
}

// sync makes the listeners match the state: a deleted load balancer's
// close, a new one's open, a listener removed or added follows.
func (dp *dataPlane) sync() {
	views := dp.st.dataPathViews()
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.closed {
		return
	}
	for name, rt := range dp.lbs {
		if v, ok := views[name]; !ok || v.addr != rt.view.addr {
			rt.close()
			delete(dp.lbs, name)
		}
	}
	for name, v := range views {
		rt := dp.lbs[name]
		if rt == nil {
			rt = &lbRuntime{name: name, listeners: map[int32]net.Listener{}, packets: map[int32]*loopback.UDPRelay{}, unbound: map[int32]bool{}, health: map[string]*healthState{}, conns: map[net.Conn]bool{}}
			dp.lbs[name] = rt
		}
		rt.view = v
		for port, ln := range rt.listeners {
			if _, ok := v.ports[port]; !ok || !v.tcp {
				_ = ln.Close()
				delete(rt.listeners, port)
			}
		}
		for port, u := range rt.packets {
			if _, ok := v.ports[port]; !ok || !v.udp {
				_ = u.Close()
				delete(rt.packets, port)
			}
		}
		for port := range v.ports {
			if v.udp && rt.packets[port] == nil {
				dp.listenUDP(name, rt, port)
			}
			if !v.tcp || rt.listeners[port] != nil {
				continue
			}
			at := netip.AddrPortFrom(v.addr, uint16(port)).String()
			ln, err := net.Listen("tcp", at)
			if err != nil {
				if !rt.unbound[port] {
					dp.logf("%s: cannot serve listener %s: %v", v.label, at, err)
					rt.unbound[port] = true
				}
				continue
			}
			delete(rt.unbound, port)
			rt.listeners[port] = ln
			go dp.accept(name, port, ln)
		}
		for id := range rt.health {
			if !slices.ContainsFunc(v.targets, func(t target) bool { return t.id == id }) {
				delete(rt.health, id)
			}
		}
	}
}

func (rt *lbRuntime) close() {
	for port, ln := range rt.listeners {
		_ = ln.Close()
		delete(rt.listeners, port)
	}
	for port, u := range rt.packets {
		_ = u.Close()
		delete(rt.packets, port)
	}
	for c := range rt.conns {
		_ = c.Close()
	}
}

func (dp *dataPlane) accept(name string, port int32, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(50 * time.Millisecond) // out of descriptors and the like
			continue
		}
		go dp.forward(name, port, c)
	}
}

// forward carries one client connection to a target, or turns it away.
func (dp *dataPlane) forward(name string, port int32, client net.Conn) {
	var src netip.Addr
	if a, ok := client.RemoteAddr().(*net.TCPAddr); ok {
		src = a.AddrPort().Addr()
	}
	to, admitted := dp.pick(name, "tcp", port, src, client)
	if !admitted {
		// The security group drops the client's packets: it hears
		// nothing until it gives up.
		_ = client.SetReadDeadline(time.Now().Add(deniedHold))
		_, _ = client.Read(make([]byte, 1))
		_ = client.Close()
		return
	}
	if !to.IsValid() {
		_ = client.Close() // no target InService
		return
	}
	defer dp.untrack(name, client)
	backend, err := net.DialTimeout("tcp", to.String(), backendDialLimit)
	if err != nil {
		_ = client.Close()
		return
	}
	loopback.Splice(client, backend)
}

// pick admits or turns away a client of a load balancer's port and, when
// admitted, chooses the next InService target round-robin (the zero
// AddrPort when there is none) and tracks the client's connection (a TCP
// client's; UDP's are the caller's).
func (dp *dataPlane) pick(name, protocol string, port int32, src netip.Addr, client net.Conn) (to netip.AddrPort, admitted bool) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	rt := dp.lbs[name]
	if rt == nil {
		return netip.AddrPort{}, false
	}
	nlb := rt.view.targetGroup != ""
	if rt.view.guarded && !admits(rt.view.rules, protocol, port, src) {
		return netip.AddrPort{}, false
	}
	instancePort, ok := rt.view.ports[port]
	var in []target
	for _, t := range rt.view.targets {
		if h := rt.health[t.id]; h != nil && h.inService {
			in = append(in, t)
		}
	}
	if nlb {
		// A Network Load Balancer whose targets all fail their health
		// checks fails open, as AWS documents: it sends to every target.
		if len(in) == 0 {
			in = rt.view.targets
		}
		// The client's packets reach the instance: its security groups
		// drop them unless a rule lets them in.
		candidates := in
		in = slices.DeleteFunc(slices.Clone(in), func(t target) bool { return !admits(t.rules, protocol, t.port, src) })
		if len(candidates) > 0 && len(in) == 0 {
			return netip.AddrPort{}, false
		}
	}
	if len(in) == 0 || !ok {
		return netip.AddrPort{}, true
	}
	if client != nil {
		rt.conns[client] = true
	}
	t := in[rt.next%len(in)]
	rt.next++
	if t.port != 0 {
		instancePort = t.port
	}
	return netip.AddrPortFrom(t.addr, uint16(instancePort)), true
}

func (dp *dataPlane) untrack(name string, c net.Conn) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if rt := dp.lbs[name]; rt != nil {
		delete(rt.conns, c)
	}
}

// checkHealth runs one round of every load balancer's health checks, all
// at once, and moves targets in and out of service by the thresholds.
func (dp *dataPlane) checkHealth(ctx context.Context) {
	type check struct {
		lb, id      string
		label       string
		targetGroup string
		port        int32
		hc          healthCheck
		addr        netip.Addr
		allowed, ok bool
	}
	var checks []*check
	dp.mu.Lock()
	for name, rt := range dp.lbs {
		for _, t := range rt.view.targets {
			checks = append(checks, &check{lb: name, label: rt.view.label, id: t.id, targetGroup: rt.view.targetGroup, port: t.port, hc: t.hc, addr: t.addr, allowed: t.healthAllowed})
		}
	}
	dp.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range checks {
		// A check its security groups drop fails as a timeout would.
		wg.Go(func() { c.ok = c.allowed && dp.probe(ctx, c.hc, c.addr) })
	}
	wg.Wait()

	type verdict struct {
		targetGroup string
		target      v2Target
		healthy     bool
	}
	var verdicts []verdict
	defer func() {
		for _, v := range verdicts {
			dp.st.setTargetHealth(v.targetGroup, v.target, v.healthy)
		}
	}()
	dp.mu.Lock()
	defer dp.mu.Unlock()
	for _, c := range checks {
		rt := dp.lbs[c.lb]
		if rt == nil || !slices.ContainsFunc(rt.view.targets, func(t target) bool { return t.id == c.id }) {
			continue
		}
		h := rt.health[c.id]
		if h == nil {
			h = &healthState{}
			rt.health[c.id] = h
		}
		if c.ok {
			h.passes, h.fails = h.passes+1, 0
		} else {
			h.passes, h.fails = 0, h.fails+1
		}
		was := h.decided
		switch {
		case !h.inService && h.passes >= max(c.hc.healthy, 1):
			h.inService, h.decided = true, true
			dp.logf("%s: instance %s InService (%s passed %d times)", c.label, c.id, c.hc.target, h.passes)
		case (h.inService || !h.decided) && h.fails >= max(c.hc.unhealthy, 1):
			h.inService, h.decided = false, true
			dp.logf("%s: instance %s OutOfService (%s failed %d times)", c.label, c.id, c.hc.target, h.fails)
		default:
			continue
		}
		if c.targetGroup != "" && (h.decided || was) {
			verdicts = append(verdicts, verdict{c.targetGroup, v2Target{c.id, c.port}, h.inService})
		}
	}
}

// probe runs a health check Target against an instance: TCP and SSL
// connect, HTTP and HTTPS GET the path and need a 200 (HTTPS as plain
// HTTP: no TLS here).
func (dp *dataPlane) probe(ctx context.Context, hc healthCheck, addr netip.Addr) bool {
	protocol, rest, err := parseTarget(hc.target)
	if err != nil {
		return false
	}
	port, path, _ := strings.Cut(rest, "/")
	n, _ := strconv.Atoi(port)
	at := netip.AddrPortFrom(addr, uint16(n)).String()
	timeout := healthCheckEvery
	if hc.timeout > 0 {
		timeout = min(timeout, time.Duration(hc.timeout)*time.Second)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if protocol == "TCP" || protocol == "SSL" {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", at)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+at+"/"+path, nil)
	if err != nil {
		return false
	}
	resp, err := dp.probes.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
