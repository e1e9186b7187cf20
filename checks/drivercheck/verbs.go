package drivercheck

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// checkRouteCIDR is the destination of the route the check makes: from
// 198.18.0.0/15, the range set aside for benchmarking (RFC 2544), which no
// cluster's pod network should use.
const checkRouteCIDR = "198.18.255.0/24"

// checkAddress is the address the check gives its own instance: from
// TEST-NET-3 (RFC 5737).
var checkAddress = clouddriver.Address{Type: "ExternalIP", Address: "203.0.113.250"}

// run checks every verb the driver lists: the handshake first, then the
// read-only verbs on what the cloud has, then the mutating ones on what the
// check makes, removed at the end.
func (c *checker) run(ctx context.Context) {
	if !c.info(ctx) {
		for _, v := range Verbs[1:] {
			c.skip(v, `not called: "info" failed, so which verbs the driver has is unknown`)
		}
		return
	}
	instances := c.instancesList(ctx)
	c.instanceGet(ctx, instances)
	created := c.instanceLifecycle(ctx)
	c.routes(ctx, created, instances)
	c.loadBalancers(ctx)
	c.faults(ctx)
	c.calls(ctx)
}

func (c *checker) info(ctx context.Context) bool {
	a := c.call(ctx, clouddriver.VerbInfo, struct{}{})
	if err := expectOK(a); err != nil {
		c.fail(clouddriver.VerbInfo, err)
		return false
	}
	var version, provider string
	var verbs []string
	for _, f := range []struct {
		name string
		v    any
	}{{"protocolVersion", &version}, {"provider", &provider}, {"verbs", &verbs}} {
		if _, err := field(a.obj, f.name, f.v, f.name != "provider"); err != nil {
			c.fail(clouddriver.VerbInfo, fmt.Errorf("answer %w", err))
			return false
		}
	}
	if version != clouddriver.ProtocolVersion {
		c.fail(clouddriver.VerbInfo, fmt.Errorf("protocolVersion %q, want %q", version, clouddriver.ProtocolVersion))
		return false
	}
	var unknown []string
	for _, v := range verbs {
		if strings.TrimSpace(v) == "" {
			c.fail(clouddriver.VerbInfo, fmt.Errorf("lists an empty verb in %q", verbs))
			return false
		}
		if !slices.Contains(Verbs, clouddriver.Verb(v)) {
			unknown = append(unknown, fmt.Sprintf("%q", v))
		}
		c.listed[clouddriver.Verb(v)] = true
	}
	detail := fmt.Sprintf("protocol %s, provider %q, %d verbs", version, provider, len(verbs))
	if len(unknown) > 0 {
		detail += fmt.Sprintf("; verbs protocol %s does not have, which the harness never calls: %s", version, strings.Join(unknown, ", "))
	}
	c.pass(clouddriver.VerbInfo, "%s", detail)
	return true
}

// instancesList returns the cloud's instances, nil when the verb is not
// listed or failed.
func (c *checker) instancesList(ctx context.Context) []clouddriver.Instance {
	v := clouddriver.VerbInstancesList
	if !c.listed[v] {
		return nil
	}
	a := c.call(ctx, v, struct{}{})
	if err := expectOK(a); err != nil {
		c.fail(v, err)
		return nil
	}
	list, err := objects(a.obj, "instances")
	if err != nil {
		c.fail(v, fmt.Errorf("answer %w", err))
		return nil
	}
	var out []clouddriver.Instance
	for i, o := range list {
		in, err := checkInstance(o)
		if err != nil {
			c.fail(v, fmt.Errorf("instances[%d]: %w", i, err))
			return nil
		}
		out = append(out, *in)
	}
	c.pass(v, "%d instances", len(out))
	return out
}

// getInstance calls `instance get` for a name that must exist.
func (c *checker) getInstance(ctx context.Context, verb clouddriver.Verb, name, why string) (*clouddriver.Instance, error) {
	a := c.call(ctx, clouddriver.VerbInstanceGet, map[string]string{"name": name})
	if err := expectOK(a); err != nil {
		return nil, fmt.Errorf("%q of %s (%s): %w", clouddriver.VerbInstanceGet, name, why, err)
	}
	in, err := checkInstanceField(a.obj)
	if err != nil {
		return nil, fmt.Errorf("%q of %s (%s): %w", clouddriver.VerbInstanceGet, name, why, err)
	}
	if in.Name != name {
		return nil, fmt.Errorf("%q of %s (%s) answered instance %q", clouddriver.VerbInstanceGet, name, why, in.Name)
	}
	return in, nil
}

// expectGone checks that `instance get` says "no such object" for name.
func (c *checker) expectGone(ctx context.Context, name, why string) error {
	a := c.call(ctx, clouddriver.VerbInstanceGet, map[string]string{"name": name})
	if err := expectNotFound(a, fmt.Sprintf("%q of %s (%s)", clouddriver.VerbInstanceGet, name, why)); err != nil {
		return err
	}
	return nil
}

func (c *checker) instanceGet(ctx context.Context, instances []clouddriver.Instance) {
	v := clouddriver.VerbInstanceGet
	if !c.listed[v] {
		return
	}
	if len(instances) > 0 {
		want := instances[0]
		got, err := c.getInstance(ctx, v, want.Name, "an instance of the list")
		if err != nil {
			c.fail(v, err)
			return
		}
		if got.ID != want.ID || got.ProviderID != want.ProviderID {
			c.fail(v, fmt.Errorf("instance %s: id %q, providerID %q; %q said id %q, providerID %q",
				want.Name, got.ID, got.ProviderID, clouddriver.VerbInstancesList, want.ID, want.ProviderID))
			return
		}
		c.pass(v, "instance %s as listed", want.Name)
	}
	absent := c.in.NewName(c.in.NamePrefix + "-absent")
	if err := c.expectGone(ctx, absent, "a name no instance has"); err != nil {
		c.fail(v, err)
		return
	}
	c.pass(v, "exit %d for %s, which no instance has", clouddriver.ExitNotFound, absent)
}

// instanceLifecycle creates an instance, stops, starts and readdresses it.
// It returns the instance's name ("" when it made none); the route check
// routes to it and then deletes it (deleteInstance).
func (c *checker) instanceLifecycle(ctx context.Context) (created string) {
	mutating := []clouddriver.Verb{clouddriver.VerbInstanceStop, clouddriver.VerbInstanceStart, clouddriver.VerbInstanceSetAddresses}
	create := clouddriver.VerbInstanceCreate
	del := clouddriver.VerbInstanceDelete
	if !c.listed[create] {
		c.skipListed(mutating, fmt.Sprintf("not called: the check changes only an instance of its own, and the driver does not list %q", create))
		if c.listed[del] {
			c.deleteAbsent(ctx)
			c.pass(del, "exit %d for a name no instance has; not called on an instance, since the check deletes only its own and the driver does not list %q", clouddriver.ExitNotFound, create)
		}
		return ""
	}
	if !c.listed[del] {
		c.skip(create, fmt.Sprintf("not called: the driver does not list %q, so the check could not remove what it made", del))
		c.skipListed(mutating, fmt.Sprintf("not called: the check changes only an instance of its own, and made none (no %q)", del))
		return ""
	}
	name := c.in.NewName(c.in.NamePrefix)
	a := c.call(ctx, create, map[string]any{"name": name})
	// Whatever it answered, the instance may exist: remove it.
	if err := expectOK(a); err != nil {
		c.fail(create, fmt.Errorf("creating %s: %w", name, err))
		c.cleanupInstance(ctx, name)
		c.skipAfterFailedCreate(mutating)
		return ""
	}
	in, err := checkInstanceField(a.obj)
	switch {
	case err != nil:
		c.fail(create, fmt.Errorf("creating %s: %w", name, err))
	case in.Name != name:
		c.fail(create, fmt.Errorf("creating %s answered instance %q", name, in.Name))
	case in.State != clouddriver.StateRunning:
		c.fail(create, fmt.Errorf("creating %s: state %q, want %q", name, in.State, clouddriver.StateRunning))
	default:
		c.pass(create, "made %s (%s), running", name, in.ID)
	}
	if c.results[create].Outcome == Fail {
		c.cleanupInstance(ctx, name)
		c.skipAfterFailedCreate(mutating)
		return ""
	}
	c.stopStart(ctx, name)
	c.setAddresses(ctx, name)
	return name
}

// skipListed records why listed verbs were not called.
func (c *checker) skipListed(verbs []clouddriver.Verb, why string) {
	for _, v := range verbs {
		if c.listed[v] {
			c.skip(v, why)
		}
	}
}

func (c *checker) skipAfterFailedCreate(verbs []clouddriver.Verb) {
	c.skipListed(append(verbs, clouddriver.VerbInstanceDelete), fmt.Sprintf("not called: %q failed, so the check has no instance of its own", clouddriver.VerbInstanceCreate))
}

// stateAfter checks, where the driver has `instance get`, that the
// instance is in state.
func (c *checker) stateAfter(ctx context.Context, verb clouddriver.Verb, name, state string) error {
	if !c.listed[clouddriver.VerbInstanceGet] {
		return nil
	}
	in, err := c.getInstance(ctx, verb, name, "after "+string(verb))
	if err != nil {
		return err
	}
	if in.State != state {
		return fmt.Errorf("instance %s: state %q after %q, want %q", name, in.State, verb, state)
	}
	return nil
}

func (c *checker) stopStart(ctx context.Context, name string) {
	stop, start := clouddriver.VerbInstanceStop, clouddriver.VerbInstanceStart
	if c.listed[stop] {
		a := c.call(ctx, stop, map[string]string{"name": name})
		if err := expectOK(a); err != nil {
			c.fail(stop, fmt.Errorf("stopping %s: %w", name, err))
		} else if err := c.stateAfter(ctx, stop, name, clouddriver.StateStopped); err != nil {
			c.fail(stop, err)
		} else {
			c.pass(stop, "stopped %s", name)
		}
	}
	if c.listed[start] {
		a := c.call(ctx, start, map[string]string{"name": name})
		if err := expectOK(a); err != nil {
			c.fail(start, fmt.Errorf("starting %s: %w", name, err))
		} else if err := c.stateAfter(ctx, start, name, clouddriver.StateRunning); err != nil {
			c.fail(start, err)
		} else {
			c.pass(start, "started %s", name)
		}
	}
}

func (c *checker) setAddresses(ctx context.Context, name string) {
	v := clouddriver.VerbInstanceSetAddresses
	if !c.listed[v] {
		return
	}
	a := c.call(ctx, v, map[string]any{"name": name, "addresses": []clouddriver.Address{checkAddress}})
	if err := expectOK(a); err != nil {
		c.fail(v, fmt.Errorf("readdressing %s: %w", name, err))
		return
	}
	in, err := checkInstanceField(a.obj)
	if err != nil {
		c.fail(v, fmt.Errorf("readdressing %s: %w", name, err))
		return
	}
	if len(in.Addresses) != 1 || in.Addresses[0] != checkAddress {
		c.fail(v, fmt.Errorf("instance %s: addresses %v after setting [%v], want exactly those (the verb replaces the whole list)", name, in.Addresses, checkAddress))
		return
	}
	c.pass(v, "%s has exactly %s %s", name, checkAddress.Type, checkAddress.Address)
}

// deleteInstance deletes the check's own instance and checks it is gone.
func (c *checker) deleteInstance(ctx context.Context, name string) {
	v := clouddriver.VerbInstanceDelete
	a := c.call(ctx, v, map[string]string{"name": name})
	if err := expectOK(a); err != nil {
		c.fail(v, fmt.Errorf("deleting %s: %w", name, err))
		return
	}
	if c.listed[clouddriver.VerbInstanceGet] {
		if err := c.expectGone(ctx, name, "after "+string(v)); err != nil {
			c.fail(v, err)
			return
		}
	}
	again := c.call(ctx, v, map[string]string{"name": name})
	if err := expectNotFound(again, "deleting "+name+" again"); err != nil {
		c.fail(v, err)
		return
	}
	c.pass(v, "deleted %s; exit %d deleting it again", name, clouddriver.ExitNotFound)
}

// deleteAbsent checks `instance delete` of a name no instance has.
func (c *checker) deleteAbsent(ctx context.Context) {
	v := clouddriver.VerbInstanceDelete
	absent := c.in.NewName(c.in.NamePrefix + "-absent")
	if err := expectNotFound(c.call(ctx, v, map[string]string{"name": absent}), "deleting "+absent+", which no instance has"); err != nil {
		c.fail(v, err)
	}
}

// cleanupInstance removes an instance the check may have made, if it can.
func (c *checker) cleanupInstance(ctx context.Context, name string) {
	if c.listed[clouddriver.VerbInstanceDelete] {
		_ = c.call(ctx, clouddriver.VerbInstanceDelete, map[string]string{"name": name})
	}
}

// routes lists routes, makes one to the check's own instance (or else to
// the first instance listed), finds it listed, deletes it, and then
// deletes the check's instance.
func (c *checker) routes(ctx context.Context, created string, instances []clouddriver.Instance) {
	list, create, del := clouddriver.VerbRoutesList, clouddriver.VerbRouteCreate, clouddriver.VerbRouteDelete
	defer func() {
		if created != "" {
			c.deleteInstance(ctx, created)
		}
	}()
	listRoutes := func() ([]clouddriver.Route, error) {
		a := c.call(ctx, list, struct{}{})
		if err := expectOK(a); err != nil {
			return nil, err
		}
		objs, err := objects(a.obj, "routes")
		if err != nil {
			return nil, fmt.Errorf("answer %w", err)
		}
		var out []clouddriver.Route
		for i, o := range objs {
			r, err := checkRoute(o)
			if err != nil {
				return nil, fmt.Errorf("routes[%d]: %w", i, err)
			}
			out = append(out, *r)
		}
		return out, nil
	}
	if c.listed[list] {
		routes, err := listRoutes()
		if err != nil {
			c.fail(list, err)
		} else {
			c.pass(list, "%d routes", len(routes))
		}
	}
	if !c.listed[create] {
		if c.listed[del] {
			c.routeDeleteAbsent(ctx)
			c.pass(del, "exit %d for a name no route has; not called on a route, since the check deletes only its own and the driver does not list %q", clouddriver.ExitNotFound, create)
		}
		return
	}
	if !c.listed[del] {
		c.skip(create, fmt.Sprintf("not called: the driver does not list %q, so the check could not remove what it made", del))
		return
	}
	node := created
	if node == "" && len(instances) > 0 {
		node = instances[0].Name
	}
	if node == "" {
		c.skip(create, "not called: no instance to route to (the check made none, and the cloud lists none)")
		if c.listed[del] {
			c.routeDeleteAbsent(ctx)
			c.pass(del, "exit %d for a name no route has; not called on a route, since the check made none", clouddriver.ExitNotFound)
		}
		return
	}
	a := c.call(ctx, create, map[string]string{"nodeName": node, "destinationCIDR": checkRouteCIDR})
	if err := expectOK(a); err != nil {
		c.fail(create, fmt.Errorf("routing %s to %s: %w", checkRouteCIDR, node, err))
		c.cleanupRoute(ctx, node)
		c.skip(del, fmt.Sprintf("not called: %q failed, so the check has no route of its own", create))
		return
	}
	var ro object
	r, err := func() (*clouddriver.Route, error) {
		if _, err := field(a.obj, "route", &ro, true); err != nil {
			return nil, fmt.Errorf("answer %w", err)
		}
		return checkRoute(ro)
	}()
	if err == nil && (r.NodeName != node || r.DestinationCIDR != checkRouteCIDR) {
		err = fmt.Errorf("answered route %s->%s, asked for %s->%s", r.DestinationCIDR, r.NodeName, checkRouteCIDR, node)
	}
	if err != nil {
		c.fail(create, fmt.Errorf("routing %s to %s: %w", checkRouteCIDR, node, err))
		c.cleanupRoute(ctx, node)
		c.skip(del, fmt.Sprintf("not called: %q failed, so the check has no route of its own", create))
		return
	}
	if c.listed[list] {
		if routes, err := listRoutes(); err != nil {
			c.fail(list, err)
		} else if !slices.ContainsFunc(routes, func(x clouddriver.Route) bool { return x.Name == r.Name }) {
			c.fail(list, fmt.Errorf("route %s, just made by %q, is not listed", r.Name, create))
		}
	}
	c.pass(create, "made route %s (%s to %s)", r.Name, checkRouteCIDR, node)
	if err := expectOK(c.call(ctx, del, map[string]string{"name": r.Name})); err != nil {
		c.fail(del, fmt.Errorf("deleting route %s: %w", r.Name, err))
		return
	}
	if err := expectNotFound(c.call(ctx, del, map[string]string{"name": r.Name}), "deleting route "+r.Name+" again"); err != nil {
		c.fail(del, err)
		return
	}
	if c.listed[list] {
		if routes, err := listRoutes(); err != nil {
			c.fail(list, err)
		} else if slices.ContainsFunc(routes, func(x clouddriver.Route) bool { return x.Name == r.Name }) {
			c.fail(del, fmt.Errorf("route %s is still listed after %q", r.Name, del))
			return
		}
	}
	c.pass(del, "deleted route %s; exit %d deleting it again", r.Name, clouddriver.ExitNotFound)
}

func (c *checker) routeDeleteAbsent(ctx context.Context) {
	v := clouddriver.VerbRouteDelete
	absent := c.in.NewName(c.in.NamePrefix + "-absent")
	if err := expectNotFound(c.call(ctx, v, map[string]string{"name": absent}), "deleting route "+absent+", which no route has"); err != nil {
		c.fail(v, err)
	}
}

// cleanupRoute deletes the routes to node of the check's CIDR, where the
// driver can list and delete routes.
func (c *checker) cleanupRoute(ctx context.Context, node string) {
	if !c.listed[clouddriver.VerbRoutesList] || !c.listed[clouddriver.VerbRouteDelete] {
		return
	}
	a := c.call(ctx, clouddriver.VerbRoutesList, struct{}{})
	if expectOK(a) != nil {
		return
	}
	var resp struct {
		Routes []clouddriver.Route `json:"routes"`
	}
	raw, _ := json.Marshal(a.obj)
	if json.Unmarshal(raw, &resp) != nil {
		return
	}
	for _, r := range resp.Routes {
		if r.NodeName == node && r.DestinationCIDR == checkRouteCIDR {
			_ = c.call(ctx, clouddriver.VerbRouteDelete, map[string]string{"name": r.Name})
		}
	}
}

func (c *checker) loadBalancers(ctx context.Context) {
	get, list := clouddriver.VerbLoadBalancerGet, clouddriver.VerbLoadBalancersList
	if c.listed[get] {
		// A Service that does not exist: its load balancer cannot either.
		svc := clouddriver.ServiceRef{Namespace: c.in.NewName(c.in.NamePrefix), Name: "absent", UID: newUID()}
		a := c.call(ctx, get, svc)
		if err := expectOK(a); err != nil {
			c.fail(get, fmt.Errorf("service %s/%s (uid %s, never created): %w", svc.Namespace, svc.Name, svc.UID, err))
		} else {
			var lbo object
			_, err := field(a.obj, "loadBalancer", &lbo, true)
			var lb *clouddriver.LoadBalancer
			if err == nil {
				lb, err = checkLoadBalancer(lbo, false)
			}
			switch {
			case err != nil:
				c.fail(get, fmt.Errorf("service %s/%s: answer %w", svc.Namespace, svc.Name, err))
			case lb.Exists:
				c.fail(get, fmt.Errorf("service %s/%s (uid %s, never created): load balancer %s exists, want exists: false", svc.Namespace, svc.Name, svc.UID, lb.Name))
			default:
				c.pass(get, "exists: false for a Service that was never created")
			}
		}
	}
	if c.listed[list] {
		a := c.call(ctx, list, struct{}{})
		if err := expectOK(a); err != nil {
			c.fail(list, err)
			return
		}
		objs, err := objects(a.obj, "loadBalancers")
		if err != nil {
			c.fail(list, fmt.Errorf("answer %w", err))
			return
		}
		for i, o := range objs {
			if _, err := checkLoadBalancer(o, true); err != nil {
				c.fail(list, fmt.Errorf("loadBalancers[%d]: %w", i, err))
				return
			}
		}
		c.pass(list, "%d load balancers", len(objs))
	}
}

// newUID is a random RFC 4122 version 4 UID, as Kubernetes gives objects.
func newUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// faults injects a fault at rate 0 (no errors, so nothing that uses the
// cloud meanwhile is disturbed) and clears every fault.
func (c *checker) faults(ctx context.Context) {
	inject, clearAll := clouddriver.VerbFaultInject, clouddriver.VerbFaultClear
	if c.listed[inject] {
		a := c.call(ctx, inject, map[string]any{"target": clouddriver.FaultTargetInstances, "errorRate": 0.0})
		if err := expectOK(a); err != nil {
			c.fail(inject, fmt.Errorf("target %s, errorRate 0: %w", clouddriver.FaultTargetInstances, err))
		} else {
			c.pass(inject, "target %s at errorRate 0 (no errors: the check disturbs nothing)", clouddriver.FaultTargetInstances)
		}
	}
	if c.listed[clearAll] {
		if err := expectOK(c.call(ctx, clearAll, struct{}{})); err != nil {
			c.fail(clearAll, err)
		} else {
			c.pass(clearAll, "cleared")
		}
	}
}

func (c *checker) calls(ctx context.Context) {
	v := clouddriver.VerbCallsList
	if !c.listed[v] {
		return
	}
	read := func(req map[string]any) ([]clouddriver.Call, int64, error) {
		a := c.call(ctx, v, req)
		if err := expectOK(a); err != nil {
			return nil, 0, err
		}
		objs, err := objects(a.obj, "calls")
		if err != nil {
			return nil, 0, fmt.Errorf("answer %w", err)
		}
		var last int64
		if _, err := field(a.obj, "last", &last, true); err != nil {
			return nil, 0, fmt.Errorf("answer %w", err)
		}
		var out []clouddriver.Call
		for i, o := range objs {
			call, err := checkCall(o)
			if err != nil {
				return nil, 0, fmt.Errorf("calls[%d]: %w", i, err)
			}
			if call.Seq > last {
				return nil, 0, fmt.Errorf("calls[%d]: seq %d is past \"last\" %d", i, call.Seq, last)
			}
			if i > 0 && call.Seq <= out[i-1].Seq {
				return nil, 0, fmt.Errorf("calls[%d]: seq %d after seq %d; a later call has a larger seq", i, call.Seq, out[i-1].Seq)
			}
			out = append(out, *call)
		}
		return out, last, nil
	}
	all, last, err := read(map[string]any{})
	if err != nil {
		c.fail(v, err)
		return
	}
	if len(all) > 0 {
		after := all[0].Seq
		later, last2, err := read(map[string]any{"after": after})
		if err != nil {
			c.fail(v, fmt.Errorf("after %d: %w", after, err))
			return
		}
		for _, call := range later {
			if call.Seq <= after {
				c.fail(v, fmt.Errorf("after %d: answered call %d", after, call.Seq))
				return
			}
		}
		if last2 < last {
			c.fail(v, fmt.Errorf("after %d: last %d, an earlier answer said %d", after, last2, last))
			return
		}
	}
	op := clouddriver.OpEnsureLoadBalancer
	only, _, err := read(map[string]any{"operations": []string{op}})
	if err != nil {
		c.fail(v, fmt.Errorf("operations [%s]: %w", op, err))
		return
	}
	for _, call := range only {
		if call.Operation != op {
			c.fail(v, fmt.Errorf("operations [%s]: answered call %d of operation %q", op, call.Seq, call.Operation))
			return
		}
	}
	c.pass(v, "%d calls, last %d; \"after\" and \"operations\" filter", len(all), last)
}
