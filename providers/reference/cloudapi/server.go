package cloudapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configures a Server. The zero value is a usable default.
type Options struct {
	// Logf, when set, receives one line per HTTP request.
	Logf func(format string, args ...any)
	// Now stamps the call log; default time.Now.
	Now func() time.Time
	// Seed seeds the random numbers behind fault error rates, so that a
	// run with the same calls fails the same ones.
	Seed uint64
	// NodeIPRange is the IPv4 range of instances' InternalIPs; default
	// 127.64.0.0/16.
	NodeIPRange netip.Prefix
	// IngressIPRange is the IPv4 range of load balancer ingress IPs;
	// default 127.65.0.0/16. Two simulators on one machine need different
	// ranges, since load balancers really listen on these addresses.
	IngressIPRange netip.Prefix
	// DisableDataPath keeps load balancers as records only: nothing
	// listens on their ingress IPs.
	DisableDataPath bool
	// HealthCheckInterval is how often load balancers probe their
	// backends' health check node port; default 1s.
	HealthCheckInterval time.Duration
	// BareInstances makes instances as many clouds report theirs: no
	// Hostname address (the node keeps its kubelet's) and no instance type
	// unless one is asked for. A correct CCM passes on either kind of
	// cloud; the harness's tests run both, so that an oracle written for
	// one cannot hide (docs/reference-provider.md).
	BareInstances bool
	// BackendLimit, when above 0, makes every load balancer register at
	// most that many of the nodes it is given, the first by name, as
	// clouds that subset their backends do (GCE's subsetting, Azure's
	// node pools, AWS's target-node labels). A profile of such a cloud
	// says loadBalancer.backends: subset.
	BackendLimit int
	// Machines act on the real machines behind adopted instances
	// (Adopt); nil when every instance is simulated.
	Machines Machines
}

// maxCalls bounds the call log; older calls are dropped.
const maxCalls = 100000

// Server is the simulated cloud. Create it with NewServer, serve its
// Handler, and Close it to stop the load balancers' data path.
type Server struct {
	opts Options
	mux  *http.ServeMux
	dp   *dataPlane // nil when the data path is disabled

	// routeSyncMu serializes syncMachineRoutes.
	routeSyncMu sync.Mutex
	mu          sync.Mutex
	instances   map[string]*instanceRecord // by ID
	idByName    map[string]string
	instanceSeq int
	zoneSeq     int
	lbs         map[string]*LoadBalancer // by name
	ingressSeq  int
	routes      map[string]*routeRecord // by name
	routeSeq    int
	calls       []Call
	callSeq     int64
	faults      []*faultState
	rng         *rand.Rand
}

type instanceRecord struct {
	Instance
	seq int
	// machine says a real machine is behind the instance (Adopt).
	machine bool
}

type routeRecord struct {
	Route
	seq int
}

// NewServer returns a simulator with no instances, load balancers or routes.
func NewServer(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if !opts.NodeIPRange.IsValid() {
		opts.NodeIPRange = defaultNodeIPRange
	}
	if !opts.IngressIPRange.IsValid() {
		opts.IngressIPRange = defaultIngressIPRange
	}
	if opts.HealthCheckInterval <= 0 {
		opts.HealthCheckInterval = time.Second
	}
	s := &Server{
		opts:      opts,
		mux:       http.NewServeMux(),
		instances: map[string]*instanceRecord{},
		idByName:  map[string]string{},
		lbs:       map[string]*LoadBalancer{},
		routes:    map[string]*routeRecord{},
		rng:       rand.New(rand.NewPCG(opts.Seed, 0x5eed)),
	}
	if !opts.DisableDataPath {
		s.dp = newDataPlane(s.backendAddr, opts.HealthCheckInterval, s.logf)
	}
	s.routesTable()
	return s
}

// Handler serves the cloud API.
func (s *Server) Handler() http.Handler { return s.mux }

// Close stops every load balancer listener, connection and health check.
func (s *Server) Close() error {
	if s.dp == nil {
		return nil
	}
	return s.dp.close()
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// routesTable registers every endpoint with its operation name and the
// status of a successful answer.
func (s *Server) routesTable() {
	s.handle("GET /v1/instances", OpInstanceList, http.StatusOK, s.listInstances)
	s.handle("POST /v1/instances", OpInstanceCreate, http.StatusCreated, s.createInstance)
	s.handle("GET /v1/instances/{id}", OpInstanceGet, http.StatusOK, s.getInstance)
	s.handle("DELETE /v1/instances/{id}", OpInstanceDelete, http.StatusOK, s.thenSyncRoutes(s.deleteInstance))
	s.handle("POST /v1/instances/{id}/stop", OpInstanceStop, http.StatusOK, s.thenSyncRoutes(s.stopInstance))
	s.handle("POST /v1/instances/{id}/start", OpInstanceStart, http.StatusOK, s.thenSyncRoutes(s.startInstance))
	s.handle("PUT /v1/instances/{id}/addresses", OpInstanceSetAddresses, http.StatusOK, s.setAddresses)

	s.handle("GET /v1/loadbalancers", OpLoadBalancerList, http.StatusOK, s.listLoadBalancers)
	s.handle("GET /v1/loadbalancers/{name}", OpLoadBalancerGet, http.StatusOK, s.getLoadBalancer)
	s.handle("PUT /v1/loadbalancers/{name}", OpLoadBalancerEnsure, http.StatusOK, s.ensureLoadBalancer)
	s.handle("DELETE /v1/loadbalancers/{name}", OpLoadBalancerDelete, http.StatusOK, s.deleteLoadBalancer)

	// With real machines the routes are real: each change, and each
	// list (the route controller lists on every reconciliation, so a
	// machine that missed one catches up), programs the machines.
	s.handle("GET /v1/routes", OpRouteList, http.StatusOK, s.thenSyncRoutes(s.listRoutes))
	s.handle("POST /v1/routes", OpRouteCreate, http.StatusCreated, s.thenSyncRoutes(s.createRoute))
	s.handle("DELETE /v1/routes/{name}", OpRouteDelete, http.StatusOK, s.thenSyncRoutes(s.deleteRoute))

	// Inspection and fault injection are not cloud operations: they are
	// neither logged as calls nor subject to faults.
	s.handle("GET /v1/calls", "", http.StatusOK, s.listCalls)
	s.handle("GET /v1/faults", "", http.StatusOK, s.listFaults)
	s.handle("POST /v1/faults", "", http.StatusOK, s.addFault)
	s.handle("DELETE /v1/faults", "", http.StatusOK, s.clearFaults)

	s.handle("/", "", 0, func(r *http.Request) (any, error) {
		return nil, notFound("no such endpoint: %s %s", r.Method, r.URL.Path)
	})
}

// thenSyncRoutes runs fn and then, if it succeeded, gives the machines
// their route tables (syncMachineRoutes); an error of that is the
// request's.
func (s *Server) thenSyncRoutes(fn func(*http.Request) (any, error)) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		v, err := fn(r)
		if err != nil {
			return v, err
		}
		if err := s.syncMachineRoutes(r.Context()); err != nil {
			return nil, err
		}
		return v, nil
	}
}

// handle registers fn for pattern. The wrapper applies faults, records the
// call, writes the JSON answer and logs one line.
func (s *Server) handle(pattern, op string, okStatus int, fn func(*http.Request) (any, error)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		caller := r.Header.Get(CallerHeader)
		var (
			body any
			err  error
		)
		var resource string
		if op != "" {
			resource = s.resourceOf(r)
			err = s.injectFault(r.Context(), op, caller)
		}
		if err == nil {
			body, err = fn(r)
		}
		status := okStatus
		if err != nil {
			status = statusOf(err)
			body = ErrorBody{Error: err.Error()}
		}
		if op != "" {
			s.record(op, caller, resource, err)
		}
		writeJSON(w, status, body)
		s.logf("%s %s -> %d op=%s caller=%q duration=%s", r.Method, r.URL.RequestURI(), status, op, caller, time.Since(start).Round(time.Microsecond))
	})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	if body == nil {
		body = struct{}{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// decode reads a JSON request body into v; unknown fields are ignored.
func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(v); err != nil {
		return badRequest("decoding request body: %v", err)
	}
	return nil
}

// apiError is an error with an HTTP status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &apiError{http.StatusConflict, fmt.Sprintf(format, args...)}
}

func statusOf(err error) int {
	if e, ok := errors.AsType[*apiError](err); ok {
		return e.status
	}
	return http.StatusInternalServerError
}

// resourceOf names what a request is about, for the call log: the
// instance's name (also when the request gives its ID), the load
// balancer's or route's name, or the name a list filters on.
func (s *Server) resourceOf(r *http.Request) string {
	if id := r.PathValue("id"); id != "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		if rec, ok := s.instances[id]; ok {
			return rec.Name
		}
		return id
	}
	if name := r.PathValue("name"); name != "" {
		return name
	}
	return r.URL.Query().Get("name")
}

// record appends a call to the call log.
func (s *Server) record(op, caller, resource string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callSeq++
	c := Call{Seq: s.callSeq, Time: s.opts.Now(), Operation: op, Caller: caller, Resource: resource}
	if err != nil {
		c.Error = err.Error()
	}
	s.calls = append(s.calls, c)
	if len(s.calls) > maxCalls {
		s.calls = slices.Delete(s.calls, 0, len(s.calls)-maxCalls)
	}
}

func (s *Server) listCalls(r *http.Request) (any, error) {
	var since int64
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, badRequest("since=%q: %v", v, err)
		}
		since = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Calls are sorted by Seq: find the first one after since.
	i, _ := slices.BinarySearchFunc(s.calls, since+1, func(c Call, seq int64) int { return cmp.Compare(c.Seq, seq) })
	return CallList{Calls: slices.Clone(s.calls[i:])}, nil
}

// ---- instances ----

func (r *instanceRecord) copy() Instance {
	in := r.Instance
	in.Addresses = slices.Clone(r.Addresses)
	return in
}

func (s *Server) listInstances(r *http.Request) (any, error) {
	name := r.URL.Query().Get("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	records := make([]*instanceRecord, 0, len(s.instances))
	for _, rec := range s.instances {
		if name == "" || rec.Name == name {
			records = append(records, rec)
		}
	}
	slices.SortFunc(records, func(a, b *instanceRecord) int { return cmp.Compare(a.seq, b.seq) })
	list := InstanceList{Instances: []Instance{}}
	for _, rec := range records {
		list.Instances = append(list.Instances, rec.copy())
	}
	return list, nil
}

func (s *Server) createInstance(r *http.Request) (any, error) {
	var req CreateInstanceRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := validateName("instance name", req.Name, 253); err != nil {
		return nil, err
	}
	if strings.Contains(req.Zone, "/") {
		return nil, badRequest("zone %q must not contain '/'", req.Zone)
	}
	families := req.IPFamilies
	if len(families) == 0 {
		families = []string{IPv4}
	}
	if len(families) > 2 || (len(families) == 2 && families[0] == families[1]) {
		return nil, badRequest("ipFamilies %v: want one or two different families", families)
	}
	for _, f := range families {
		if f != IPv4 && f != IPv6 {
			return nil, badRequest("ipFamilies: unknown family %q (want IPv4 or IPv6)", f)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.idByName[req.Name]; ok {
		return nil, conflict("instance %q already exists", req.Name)
	}
	zone := req.Zone
	if zone == "" {
		zone = defaultZones[s.zoneSeq%len(defaultZones)]
		s.zoneSeq++
	}
	instanceType := cmp.Or(req.InstanceType, defaultInstanceType)
	addrs, err := allocateAddresses(s.opts.NodeIPRange, s.instanceSeq+1, req.Name, families)
	if err != nil {
		return nil, &apiError{http.StatusServiceUnavailable, err.Error()}
	}
	if s.opts.BareInstances {
		instanceType = req.InstanceType
		addrs = slices.DeleteFunc(addrs, func(a Address) bool { return a.Type == AddressHostname })
	}
	s.instanceSeq++
	id := fmt.Sprintf("i-%04d", s.instanceSeq)
	rec := &instanceRecord{seq: s.instanceSeq, Instance: Instance{
		ID:           id,
		Name:         req.Name,
		ProviderID:   ProviderID(zone, id),
		Zone:         zone,
		Region:       defaultRegion,
		InstanceType: instanceType,
		State:        StateRunning,
		Addresses:    addrs,
	}}
	s.instances[id] = rec
	s.idByName[req.Name] = id
	return rec.copy(), nil
}

// instance returns the record for the {id} of the request; s.mu must be held.
func (s *Server) instance(r *http.Request) (*instanceRecord, error) {
	id := r.PathValue("id")
	rec, ok := s.instances[id]
	if !ok {
		return nil, notFound("instance %q not found", id)
	}
	return rec, nil
}

func (s *Server) getInstance(r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.instance(r)
	if err != nil {
		return nil, err
	}
	return rec.copy(), nil
}

// actOnInstance runs act on the machine behind the request's instance, if
// it has one (onMachine), then changes the instance's record with change,
// holding s.mu.
func (s *Server) actOnInstance(r *http.Request, what string, act func(context.Context, Machines, string) error, change func(*instanceRecord) any) (any, error) {
	if err := s.onMachine(r, what, act); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.instance(r)
	if err != nil {
		return nil, err
	}
	return change(rec), nil
}

func (s *Server) deleteInstance(r *http.Request) (any, error) {
	deleteMachine := func(ctx context.Context, m Machines, name string) error { return m.Delete(ctx, name) }
	return s.actOnInstance(r, "deleting", deleteMachine, func(rec *instanceRecord) any {
		delete(s.instances, rec.ID)
		delete(s.idByName, rec.Name)
		return nil
	})
}

func (s *Server) stopInstance(r *http.Request) (any, error) {
	stopMachine := func(ctx context.Context, m Machines, name string) error { return m.Stop(ctx, name) }
	return s.actOnInstance(r, "stopping", stopMachine, func(rec *instanceRecord) any {
		rec.State = StateStopped
		return rec.copy()
	})
}

// startInstance starts the instance, and its machine if it has one; the
// instance then has the addresses the machine came back with.
func (s *Server) startInstance(r *http.Request) (any, error) {
	var started []Address
	startMachine := func(ctx context.Context, m Machines, name string) error {
		addrs, err := m.Start(ctx, name)
		if err == nil {
			err = validateMachineAddresses(name, addrs)
		}
		started = addrs
		return err
	}
	return s.actOnInstance(r, "starting", startMachine, func(rec *instanceRecord) any {
		rec.State = StateRunning
		if rec.machine && len(started) > 0 {
			if !slices.Equal(rec.Addresses, started) {
				s.logf("instance %s: its machine came back with addresses %v (were %v)", rec.Name, started, rec.Addresses)
			}
			rec.Addresses = slices.Clone(started)
		}
		return rec.copy()
	})
}

func (s *Server) setAddresses(r *http.Request) (any, error) {
	var req SetAddressesRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	for _, a := range req.Addresses {
		if err := validateAddress(a); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.instance(r)
	if err != nil {
		return nil, err
	}
	if rec.machine {
		return nil, conflict("instance %s is a real machine (adopted): its addresses are the machine's own", rec.Name)
	}
	rec.Addresses = slices.Clone(req.Addresses)
	if rec.Addresses == nil {
		rec.Addresses = []Address{}
	}
	return rec.copy(), nil
}

func validateAddress(a Address) error {
	switch a.Type {
	case AddressInternalIP, AddressExternalIP:
		if _, err := netip.ParseAddr(a.Address); err != nil {
			return badRequest("address %q of type %s: %v", a.Address, a.Type, err)
		}
	case AddressHostname, AddressInternalDNS, AddressExternalDNS:
		if a.Address == "" {
			return badRequest("empty address of type %s", a.Type)
		}
	default:
		return badRequest("unknown address type %q", a.Type)
	}
	return nil
}

func validateName(what, name string, maxLen int) error {
	if name == "" || len(name) > maxLen || strings.ContainsAny(name, "/?#% ") {
		return badRequest("%s %q: want 1 to %d characters without '/', '?', '#', '%%' or spaces", what, name, maxLen)
	}
	return nil
}

// backendAddr returns the InternalIP IPv4 of the running instance with the
// given name; the data path calls it for every new connection.
func (s *Server) backendAddr(name string) (netip.Addr, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.instances[s.idByName[name]]
	if !ok || rec.State != StateRunning {
		return netip.Addr{}, false
	}
	for _, a := range rec.Addresses {
		if a.Type != AddressInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// ---- load balancers ----

func copyLoadBalancer(lb *LoadBalancer) LoadBalancer {
	c := *lb
	c.Ports = slices.Clone(lb.Ports)
	c.Backends = slices.Clone(lb.Backends)
	c.SourceRanges = slices.Clone(lb.SourceRanges)
	return c
}

func (s *Server) listLoadBalancers(*http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := LoadBalancerList{LoadBalancers: []LoadBalancer{}}
	for _, lb := range s.lbs {
		list.LoadBalancers = append(list.LoadBalancers, copyLoadBalancer(lb))
	}
	slices.SortFunc(list.LoadBalancers, func(a, b LoadBalancer) int { return cmp.Compare(a.Name, b.Name) })
	return list, nil
}

func (s *Server) getLoadBalancer(r *http.Request) (any, error) {
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.lbs[name]
	if !ok {
		return nil, notFound("load balancer %q not found", name)
	}
	return copyLoadBalancer(lb), nil
}

func (s *Server) ensureLoadBalancer(r *http.Request) (any, error) {
	name := r.PathValue("name")
	if err := validateName("load balancer name", name, 63); err != nil {
		return nil, err
	}
	var spec LoadBalancerSpec
	if err := decode(r, &spec); err != nil {
		return nil, err
	}
	if err := normalizeSpec(&spec); err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.lbs[name]
	if !ok && r.URL.Query().Get("existing") == "true" {
		// An update: it never brings back a load balancer deleted
		// meanwhile.
		return nil, notFound("load balancer %q not found", name)
	}
	if !ok {
		ip, err := nthIPv4(s.opts.IngressIPRange, s.ingressSeq+1)
		if err != nil {
			return nil, &apiError{http.StatusServiceUnavailable, fmt.Sprintf("allocating ingress IP: %v", err)}
		}
		s.ingressSeq++
		lb = &LoadBalancer{Name: name, IngressIP: ip.String()}
		s.lbs[name] = lb
	}
	if s.opts.BackendLimit > 0 && len(spec.Backends) > s.opts.BackendLimit {
		spec.Backends = spec.Backends[:s.opts.BackendLimit]
	}
	lb.LoadBalancerSpec = spec
	if s.dp != nil {
		// The record stays even when a listener cannot be bound: the
		// caller retries, and the next ensure binds what is missing.
		if err := s.dp.apply(copyLoadBalancer(lb)); err != nil {
			return nil, fmt.Errorf("load balancer %q stored, but its data path failed: %w", name, err)
		}
	}
	return copyLoadBalancer(lb), nil
}

// normalizeSpec validates a load balancer spec and fills empty lists.
func normalizeSpec(spec *LoadBalancerSpec) error {
	seen := map[Port]bool{}
	for _, p := range spec.Ports {
		if p.Protocol != ProtocolTCP && p.Protocol != ProtocolUDP {
			return badRequest("port %d: unsupported protocol %q (want TCP or UDP)", p.Port, p.Protocol)
		}
		if p.Port < 1 || p.Port > 65535 || p.NodePort < 0 || p.NodePort > 65535 {
			return badRequest("port %d -> nodePort %d: out of range", p.Port, p.NodePort)
		}
		key := Port{Protocol: p.Protocol, Port: p.Port}
		if seen[key] {
			return badRequest("port %s/%d listed twice", p.Protocol, p.Port)
		}
		seen[key] = true
	}
	for _, cidr := range spec.SourceRanges {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			return badRequest("source range %q: %v", cidr, err)
		}
	}
	if spec.HealthCheckNodePort < 0 || spec.HealthCheckNodePort > 65535 {
		return badRequest("healthCheckNodePort %d: out of range", spec.HealthCheckNodePort)
	}
	if spec.SessionAffinity != "" && spec.SessionAffinity != SessionAffinityClientIP {
		return badRequest("sessionAffinity %q: want %q or none", spec.SessionAffinity, SessionAffinityClientIP)
	}
	// Empty lists encode as [], never null.
	spec.Ports = append([]Port{}, spec.Ports...)
	spec.Backends = slices.Compact(slices.Sorted(slices.Values(spec.Backends)))
	spec.Backends = append([]string{}, spec.Backends...)
	spec.SourceRanges = append([]string{}, spec.SourceRanges...)
	return nil
}

func (s *Server) deleteLoadBalancer(r *http.Request) (any, error) {
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lbs[name]; !ok {
		return nil, notFound("load balancer %q not found", name)
	}
	delete(s.lbs, name)
	if s.dp != nil {
		s.dp.remove(name)
	}
	return nil, nil
}

// ---- routes ----

func (s *Server) listRoutes(*http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	records := slices.Collect(maps.Values(s.routes))
	slices.SortFunc(records, func(a, b *routeRecord) int { return cmp.Compare(a.seq, b.seq) })
	list := RouteList{Routes: []Route{}}
	for _, rec := range records {
		list.Routes = append(list.Routes, rec.Route)
	}
	return list, nil
}

func (s *Server) createRoute(r *http.Request) (any, error) {
	var req CreateRouteRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.NodeName == "" {
		return nil, badRequest("nodeName is required")
	}
	prefix, err := netip.ParsePrefix(req.DestinationCIDR)
	if err != nil {
		return nil, badRequest("destinationCIDR %q: %v", req.DestinationCIDR, err)
	}
	cidr := prefix.Masked().String()

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.routes {
		if rec.DestinationCIDR == cidr {
			return nil, conflict("route %q already covers %s", rec.Name, cidr)
		}
	}
	name := req.Name
	if name == "" {
		name = fmt.Sprintf("r-%04d", s.routeSeq+1)
	} else if err := validateName("route name", name, 63); err != nil {
		return nil, err
	}
	if _, ok := s.routes[name]; ok {
		return nil, conflict("route %q already exists", name)
	}
	s.routeSeq++
	rec := &routeRecord{seq: s.routeSeq, Route: Route{Name: name, NodeName: req.NodeName, DestinationCIDR: cidr}}
	s.routes[name] = rec
	return rec.Route, nil
}

func (s *Server) deleteRoute(r *http.Request) (any, error) {
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.routes[name]; !ok {
		return nil, notFound("route %q not found", name)
	}
	delete(s.routes, name)
	return nil, nil
}
