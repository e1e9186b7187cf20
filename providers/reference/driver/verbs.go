package driver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// ---- info ----

func (d *driver) info(context.Context, []byte) (any, error) {
	return driverproto.Info{ProtocolVersion: driverproto.Version, Provider: "reference", Verbs: verbNames()}, nil
}

// ---- instances ----

type instanceResponse struct {
	Instance driverproto.Instance `json:"instance"`
}

func toInstance(in *cloudapi.Instance) driverproto.Instance {
	out := driverproto.Instance{
		ID: in.ID, Name: in.Name, ProviderID: in.ProviderID, Zone: in.Zone, Region: in.Region,
		InstanceType: in.InstanceType, State: in.State, Addresses: []driverproto.Address{},
	}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, driverproto.Address{Type: a.Type, Address: a.Address})
	}
	return out
}

func (d *driver) listInstances(ctx context.Context, _ []byte) (any, error) {
	list, err := d.client.ListInstances(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	resp := struct {
		Instances []driverproto.Instance `json:"instances"`
	}{Instances: []driverproto.Instance{}}
	for i := range list {
		resp.Instances = append(resp.Instances, toInstance(&list[i]))
	}
	return resp, nil
}

// byName finds the instance a request names.
func (d *driver) byName(ctx context.Context, request []byte) (*cloudapi.Instance, error) {
	req, err := driverproto.Decode[driverproto.NameRequest](request)
	if err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, fmt.Errorf("the request has no name")
	}
	in, err := d.client.InstanceByName(ctx, req.Name)
	if err != nil {
		return nil, cloudErr(fmt.Sprintf("instance %q", req.Name), err)
	}
	return in, nil
}

func (d *driver) getInstance(ctx context.Context, request []byte) (any, error) {
	in, err := d.byName(ctx, request)
	if err != nil {
		return nil, err
	}
	return instanceResponse{Instance: toInstance(in)}, nil
}

func (d *driver) createInstance(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.CreateInstanceRequest](request)
	if err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, fmt.Errorf("the request has no name")
	}
	in, err := d.client.CreateInstance(ctx, cloudapi.CreateInstanceRequest{
		Name: req.Name, Zone: req.Zone, InstanceType: req.InstanceType, IPFamilies: req.IPFamilies,
	})
	if err != nil {
		return nil, fmt.Errorf("creating instance %q: %w", req.Name, err)
	}
	return instanceResponse{Instance: toInstance(in)}, nil
}

func (d *driver) deleteInstance(ctx context.Context, request []byte) (any, error) {
	in, err := d.byName(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := d.client.DeleteInstance(ctx, in.ID); err != nil {
		return nil, cloudErr(fmt.Sprintf("deleting instance %q (%s)", in.Name, in.ID), err)
	}
	return struct{}{}, nil
}

func (d *driver) stopInstance(ctx context.Context, request []byte) (any, error) {
	in, err := d.byName(ctx, request)
	if err != nil {
		return nil, err
	}
	if _, err := d.client.StopInstance(ctx, in.ID); err != nil {
		return nil, cloudErr(fmt.Sprintf("stopping instance %q (%s)", in.Name, in.ID), err)
	}
	return struct{}{}, nil
}

func (d *driver) startInstance(ctx context.Context, request []byte) (any, error) {
	in, err := d.byName(ctx, request)
	if err != nil {
		return nil, err
	}
	if _, err := d.client.StartInstance(ctx, in.ID); err != nil {
		return nil, cloudErr(fmt.Sprintf("starting instance %q (%s)", in.Name, in.ID), err)
	}
	return struct{}{}, nil
}

func (d *driver) setAddresses(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.SetAddressesRequest](request)
	if err != nil {
		return nil, err
	}
	in, err := d.byName(ctx, request)
	if err != nil {
		return nil, err
	}
	addrs := make([]cloudapi.Address, 0, len(req.Addresses))
	for _, a := range req.Addresses {
		addrs = append(addrs, cloudapi.Address{Type: a.Type, Address: a.Address})
	}
	updated, err := d.client.SetAddresses(ctx, in.ID, addrs)
	if err != nil {
		return nil, cloudErr(fmt.Sprintf("setting the addresses of instance %q (%s)", in.Name, in.ID), err)
	}
	return instanceResponse{Instance: toInstance(updated)}, nil
}

// ---- load balancers ----

// loadBalancerName is the name the reference CCM gives a Service's load
// balancer: the rule of cloudprovider.DefaultLoadBalancerName, "a" and the
// UID without dashes, cut to 32 characters.
func loadBalancerName(uid string) string {
	name := "a" + strings.ReplaceAll(uid, "-", "")
	return name[:min(len(name), 32)]
}

func (d *driver) getLoadBalancer(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		UID       string `json:"uid"`
	}](request)
	if err != nil {
		return nil, err
	}
	if req.UID == "" {
		return nil, fmt.Errorf("the request has no uid for service %s/%s; the reference cloud names load balancers by Service UID", req.Namespace, req.Name)
	}
	name := loadBalancerName(req.UID)
	resp := struct {
		LoadBalancer driverproto.LoadBalancer `json:"loadBalancer"`
	}{driverproto.LoadBalancer{Ingress: []driverproto.Ingress{}, Ports: []driverproto.Port{}, Backends: []string{}, SourceRanges: []string{}}}

	lb, err := d.client.GetLoadBalancer(ctx, name)
	if cloudapi.IsNotFound(err) {
		// A CCM may name its load balancers otherwise; the cloud records
		// which Service each was made for, as real clouds tag theirs.
		lb, err = d.loadBalancerMadeFor(ctx, req.Namespace, req.Name)
		if lb == nil && err == nil {
			return resp, nil // exists: false
		}
	}
	if err != nil {
		return nil, fmt.Errorf("getting load balancer %s of service %s/%s: %w", name, req.Namespace, req.Name, err)
	}
	resp.LoadBalancer = toLoadBalancer(lb)
	return resp, nil
}

// loadBalancerMadeFor returns the load balancer whose record names the
// Service (the first by name if several do), or nil.
func (d *driver) loadBalancerMadeFor(ctx context.Context, namespace, name string) (*cloudapi.LoadBalancer, error) {
	list, err := d.client.ListLoadBalancers(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].ServiceNamespace == namespace && list[i].ServiceName == name {
			return &list[i], nil
		}
	}
	return nil, nil
}

// toLoadBalancer is the protocol's view of a load balancer that exists.
func toLoadBalancer(lb *cloudapi.LoadBalancer) driverproto.LoadBalancer {
	out := driverproto.LoadBalancer{Exists: true, Name: lb.Name, Ingress: []driverproto.Ingress{}, Ports: []driverproto.Port{}, Backends: []string{}, SourceRanges: []string{}}
	if lb.IngressIP != "" {
		out.Ingress = append(out.Ingress, driverproto.Ingress{IP: lb.IngressIP})
	}
	for _, p := range lb.Ports {
		out.Ports = append(out.Ports, driverproto.Port{Protocol: p.Protocol, Port: p.Port, NodePort: p.NodePort})
	}
	out.Backends = append(out.Backends, lb.Backends...)
	out.SourceRanges = append(out.SourceRanges, lb.SourceRanges...)
	out.HealthCheckNodePort = lb.HealthCheckNodePort
	return out
}

// listLoadBalancers returns every load balancer of the cloud, each with
// the Service it was made for.
func (d *driver) listLoadBalancers(ctx context.Context, _ []byte) (any, error) {
	list, err := d.client.ListLoadBalancers(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing load balancers: %w", err)
	}
	resp := struct {
		LoadBalancers []driverproto.LoadBalancer `json:"loadBalancers"`
	}{LoadBalancers: []driverproto.LoadBalancer{}}
	for i := range list {
		lb := toLoadBalancer(&list[i])
		lb.ServiceNamespace, lb.ServiceName = list[i].ServiceNamespace, list[i].ServiceName
		resp.LoadBalancers = append(resp.LoadBalancers, lb)
	}
	return resp, nil
}

// ---- routes ----

func (d *driver) listRoutes(ctx context.Context, _ []byte) (any, error) {
	list, err := d.client.ListRoutes(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	resp := struct {
		Routes []driverproto.Route `json:"routes"`
	}{Routes: []driverproto.Route{}}
	for _, r := range list {
		resp.Routes = append(resp.Routes, driverproto.Route{Name: r.Name, NodeName: r.NodeName, DestinationCIDR: r.DestinationCIDR})
	}
	return resp, nil
}

func (d *driver) createRoute(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[struct {
		NodeName        string `json:"nodeName"`
		DestinationCIDR string `json:"destinationCIDR"`
	}](request)
	if err != nil {
		return nil, err
	}
	r, err := d.client.CreateRoute(ctx, cloudapi.CreateRouteRequest{NodeName: req.NodeName, DestinationCIDR: req.DestinationCIDR})
	if err != nil {
		return nil, fmt.Errorf("creating route %s to node %s: %w", req.DestinationCIDR, req.NodeName, err)
	}
	return struct {
		Route driverproto.Route `json:"route"`
	}{driverproto.Route{Name: r.Name, NodeName: r.NodeName, DestinationCIDR: r.DestinationCIDR}}, nil
}

func (d *driver) deleteRoute(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.NameRequest](request)
	if err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, fmt.Errorf("the request has no name")
	}
	if err := d.client.DeleteRoute(ctx, req.Name); err != nil {
		return nil, cloudErr(fmt.Sprintf("deleting route %q", req.Name), err)
	}
	return struct{}{}, nil
}

// ---- faults ----

// faultTargets maps each fault target of the protocol to the cloud
// operations the CCM calls for it.
func faultTargets() map[string][]string {
	return map[string][]string{
		// InstanceExists, InstanceShutdown and InstanceMetadata look an
		// instance up by ID (providerID) or by name (a list).
		"instances": {cloudapi.OpInstanceGet, cloudapi.OpInstanceList},
		"loadbalancers": {cloudapi.OpLoadBalancerGet, cloudapi.OpLoadBalancerList,
			cloudapi.OpLoadBalancerEnsure, cloudapi.OpLoadBalancerDelete},
		"routes": {cloudapi.OpRouteList, cloudapi.OpRouteCreate, cloudapi.OpRouteDelete},
	}
}

// injectFault makes the cloud fail the target's operations at the given
// rate for every caller but the driver itself, so the harness can still
// look at the cloud while the CCM sees errors. A rate of 0 removes the
// target's faults.
func (d *driver) injectFault(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.FaultRequest](request)
	if err != nil {
		return nil, err
	}
	ops, ok := faultTargets()[req.Target]
	if !ok {
		return nil, fmt.Errorf("unknown fault target %q (known: instances, loadbalancers, routes)", req.Target)
	}
	if req.ErrorRate < 0 || req.ErrorRate > 1 {
		return nil, fmt.Errorf("errorRate %v: want a value from 0 to 1", req.ErrorRate)
	}
	for _, op := range ops {
		f := cloudapi.Fault{Operation: op, ErrorRate: req.ErrorRate, ExceptCaller: d.caller}
		if _, err := d.client.AddFault(ctx, f); err != nil {
			return nil, fmt.Errorf("injecting a fault into %s: %w", op, err)
		}
	}
	return struct{}{}, nil
}

func (d *driver) clearFaults(ctx context.Context, _ []byte) (any, error) {
	if err := d.client.ClearFaults(ctx); err != nil {
		return nil, fmt.Errorf("clearing faults: %w", err)
	}
	return struct{}{}, nil
}

// ---- call log ----

// callOperations maps the cloud API operations that change load balancers
// and routes to the protocol's names for them, which are the cloudprovider
// methods behind them. Other operations keep the cloud's own names.
func callOperations() map[string]string {
	return map[string]string{
		// EnsureLoadBalancer and UpdateLoadBalancer both send the whole
		// desired load balancer.
		cloudapi.OpLoadBalancerEnsure: "EnsureLoadBalancer",
		cloudapi.OpLoadBalancerDelete: "EnsureLoadBalancerDeleted",
		cloudapi.OpRouteCreate:        "CreateRoute",
		cloudapi.OpRouteDelete:        "DeleteRoute",
	}
}

// listCalls returns the cloud's call log after a sequence number, without
// the driver's own calls, optionally only some operations.
func (d *driver) listCalls(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.CallsRequest](request)
	if err != nil {
		return nil, err
	}
	if req.After < 0 {
		return nil, fmt.Errorf("after %d: want 0 or a sequence number", req.After)
	}
	logged, err := d.client.Calls(ctx, req.After)
	if err != nil {
		return nil, fmt.Errorf("reading the call log: %w", err)
	}
	names := callOperations()
	resp := struct {
		Calls []driverproto.Call `json:"calls"`
		Last  int64              `json:"last"`
	}{Calls: []driverproto.Call{}, Last: req.After}
	for _, c := range logged {
		resp.Last = max(resp.Last, c.Seq)
		if c.Caller == d.caller {
			continue
		}
		op := c.Operation
		if name, ok := names[op]; ok {
			op = name
		}
		if len(req.Operations) > 0 && !slices.Contains(req.Operations, op) {
			continue
		}
		resp.Calls = append(resp.Calls, driverproto.Call{Seq: c.Seq, Time: c.Time, Operation: op, Caller: c.Caller, Resource: c.Resource, Error: c.Error})
	}
	return resp, nil
}
