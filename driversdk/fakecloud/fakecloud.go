// Package fakecloud is an in-memory cloud that answers every verb of the
// cloud-driver protocol through driversdk.Driver: for the unit tests of a
// driver (compare its answers with the fake's for the same state) and of
// clients of the protocol (the harness's own). It keeps instances, load
// balancers, routes, injected faults and a call log, and nothing else.
//
// Floor: the driver SDK, a module of its own: the standard library only, so
// a provider's driver can import it without the harness.
package fakecloud

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/driversdk"
)

// Cloud is the fake. The zero value is not usable; call New.
type Cloud struct {
	mu        sync.Mutex
	provider  string
	instances map[string]driversdk.Instance
	lbs       map[driversdk.ServiceRef]driversdk.LoadBalancer
	routes    []driversdk.Route
	faults    map[string]float64
	calls     []driversdk.Call
	nextID    int
	now       func() time.Time
}

// New returns an empty cloud of the named provider.
func New(provider string) *Cloud {
	return &Cloud{
		provider:  provider,
		instances: map[string]driversdk.Instance{},
		lbs:       map[driversdk.ServiceRef]driversdk.LoadBalancer{},
		faults:    map[string]float64{},
		now:       time.Now,
	}
}

// AddInstance puts an instance into the cloud (its Name is its key).
func (c *Cloud) AddInstance(in driversdk.Instance) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.instances[in.Name] = in
}

// SetLoadBalancer gives a Service a load balancer, as a CCM would.
func (c *Cloud) SetLoadBalancer(svc driversdk.ServiceRef, lb driversdk.LoadBalancer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lb.Exists = true
	lb.ServiceNamespace, lb.ServiceName = svc.Namespace, svc.Name
	c.lbs[driversdk.ServiceRef{Namespace: svc.Namespace, Name: svc.Name}] = lb
}

// AddRoute puts a route into the cloud.
func (c *Cloud) AddRoute(r driversdk.Route) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routes = append(c.routes, r)
}

// LogCall records a call of the CCM's, as the cloud's API would.
func (c *Cloud) LogCall(operation, caller, resource string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, driversdk.Call{Seq: int64(len(c.calls) + 1), Time: c.now().UTC(), Operation: operation, Caller: caller, Resource: resource})
}

// Fault is the error rate injected on target, 0 when none.
func (c *Cloud) Fault(target string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faults[target]
}

// Driver is the fake's driver: every verb of the protocol.
func (c *Cloud) Driver() *driversdk.Driver {
	return &driversdk.Driver{
		Provider: c.provider,
		Verbs:    driversdk.AllVerbs[1:],
		Handle: map[driversdk.Verb]driversdk.HandlerFunc{
			driversdk.VerbInstancesList:        c.listInstances,
			driversdk.VerbInstanceGet:          c.getInstance,
			driversdk.VerbInstanceCreate:       c.createInstance,
			driversdk.VerbInstanceDelete:       c.deleteInstance,
			driversdk.VerbInstanceStop:         c.setState(driversdk.StateStopped),
			driversdk.VerbInstanceStart:        c.setState(driversdk.StateRunning),
			driversdk.VerbInstanceSetAddresses: c.setAddresses,
			driversdk.VerbLoadBalancerGet:      c.getLoadBalancer,
			driversdk.VerbLoadBalancersList:    c.listLoadBalancers,
			driversdk.VerbRoutesList:           c.listRoutes,
			driversdk.VerbRouteCreate:          c.createRoute,
			driversdk.VerbRouteDelete:          c.deleteRoute,
			driversdk.VerbFaultInject:          c.injectFault,
			driversdk.VerbFaultClear:           c.clearFaults,
			driversdk.VerbCallsList:            c.listCalls,
		},
	}
}

func (c *Cloud) listInstances(context.Context, []byte) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := driversdk.InstancesResponse{Instances: []driversdk.Instance{}}
	for _, name := range sortedKeys(c.instances) {
		resp.Instances = append(resp.Instances, c.instances[name])
	}
	return resp, nil
}

func (c *Cloud) instance(request []byte) (driversdk.Instance, error) {
	req, err := driversdk.Decode[driversdk.NameRequest](request)
	if err != nil {
		return driversdk.Instance{}, err
	}
	in, ok := c.instances[req.Name]
	if !ok {
		return in, fmt.Errorf("instance %q: %w", req.Name, driversdk.ErrNotFound)
	}
	return in, nil
}

func (c *Cloud) getInstance(_ context.Context, request []byte) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, err := c.instance(request)
	return driversdk.InstanceResponse{Instance: in}, err
}

func (c *Cloud) createInstance(_ context.Context, request []byte) (any, error) {
	req, err := driversdk.Decode[driversdk.CreateInstanceRequest](request)
	if err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, fmt.Errorf("instance create: no name")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.instances[req.Name]; ok {
		return nil, fmt.Errorf("instance %q exists", req.Name)
	}
	c.nextID++
	id := fmt.Sprintf("i-%04d", c.nextID)
	in := driversdk.Instance{
		ID: id, Name: req.Name, ProviderID: c.provider + "://" + req.Zone + "/" + id,
		Zone: req.Zone, InstanceType: req.InstanceType, State: driversdk.StateRunning,
		Addresses: []driversdk.Address{{Type: "InternalIP", Address: fmt.Sprintf("10.0.%d.%d", c.nextID/250, c.nextID%250+1)}},
	}
	c.instances[req.Name] = in
	return driversdk.InstanceResponse{Instance: in}, nil
}

func (c *Cloud) deleteInstance(_ context.Context, request []byte) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, err := c.instance(request)
	if err != nil {
		return nil, err
	}
	delete(c.instances, in.Name)
	return driversdk.Empty{}, nil
}

func (c *Cloud) setState(state string) driversdk.HandlerFunc {
	return func(_ context.Context, request []byte) (any, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		in, err := c.instance(request)
		if err != nil {
			return nil, err
		}
		in.State = state
		c.instances[in.Name] = in
		return driversdk.Empty{}, nil
	}
}

func (c *Cloud) setAddresses(_ context.Context, request []byte) (any, error) {
	req, err := driversdk.Decode[driversdk.SetAddressesRequest](request)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.instances[req.Name]
	if !ok {
		return nil, fmt.Errorf("instance %q: %w", req.Name, driversdk.ErrNotFound)
	}
	in.Addresses = slices.Clone(req.Addresses)
	c.instances[in.Name] = in
	return driversdk.InstanceResponse{Instance: in}, nil
}

func (c *Cloud) getLoadBalancer(_ context.Context, request []byte) (any, error) {
	svc, err := driversdk.Decode[driversdk.ServiceRef](request)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	lb, ok := c.lbs[driversdk.ServiceRef{Namespace: svc.Namespace, Name: svc.Name}]
	if !ok {
		return driversdk.LoadBalancerResponse{LoadBalancer: driversdk.LoadBalancer{Exists: false}}, nil
	}
	lb.ServiceNamespace, lb.ServiceName = "", "" // listed only by loadbalancers list
	return driversdk.LoadBalancerResponse{LoadBalancer: lb}, nil
}

func (c *Cloud) listLoadBalancers(context.Context, []byte) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := driversdk.LoadBalancersResponse{LoadBalancers: []driversdk.LoadBalancer{}}
	for _, lb := range c.lbs {
		resp.LoadBalancers = append(resp.LoadBalancers, lb)
	}
	slices.SortFunc(resp.LoadBalancers, func(a, b driversdk.LoadBalancer) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return resp, nil
}

func (c *Cloud) listRoutes(context.Context, []byte) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return driversdk.RoutesResponse{Routes: append([]driversdk.Route{}, c.routes...)}, nil
}

func (c *Cloud) createRoute(_ context.Context, request []byte) (any, error) {
	req, err := driversdk.Decode[driversdk.RouteCreateRequest](request)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	r := driversdk.Route{Name: fmt.Sprintf("r-%04d", c.nextID), NodeName: req.NodeName, DestinationCIDR: req.DestinationCIDR}
	c.routes = append(c.routes, r)
	return driversdk.RouteResponse{Route: r}, nil
}

func (c *Cloud) deleteRoute(_ context.Context, request []byte) (any, error) {
	req, err := driversdk.Decode[driversdk.NameRequest](request)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.routes, func(r driversdk.Route) bool { return r.Name == req.Name })
	if i < 0 {
		return nil, fmt.Errorf("route %q: %w", req.Name, driversdk.ErrNotFound)
	}
	c.routes = slices.Delete(c.routes, i, i+1)
	return driversdk.Empty{}, nil
}

func (c *Cloud) injectFault(_ context.Context, request []byte) (any, error) {
	req, err := driversdk.Decode[driversdk.FaultInjectRequest](request)
	if err != nil {
		return nil, err
	}
	if req.ErrorRate < 0 || req.ErrorRate > 1 {
		return nil, fmt.Errorf("fault inject: errorRate %v is not between 0 and 1", req.ErrorRate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults[req.Target] = req.ErrorRate
	return driversdk.Empty{}, nil
}

func (c *Cloud) clearFaults(context.Context, []byte) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.faults)
	return driversdk.Empty{}, nil
}

func (c *Cloud) listCalls(_ context.Context, request []byte) (any, error) {
	req, err := driversdk.Decode[driversdk.CallsListRequest](request)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := driversdk.CallsResponse{Calls: []driversdk.Call{}, Last: int64(len(c.calls))}
	for _, call := range c.calls {
		if call.Seq > req.After && (len(req.Operations) == 0 || slices.Contains(req.Operations, call.Operation)) {
			resp.Calls = append(resp.Calls, call)
		}
	}
	return resp, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
