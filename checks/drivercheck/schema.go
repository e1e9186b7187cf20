package drivercheck

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// The protocol's objects, checked field by field against the tables of
// docs/cloud-driver.md. Fields the protocol does not name are ignored, as
// it says both sides must.

// object is one JSON object, by field.
type object = map[string]json.RawMessage

// field decodes a field of o into v; required says a missing field (or
// null) is an error.
func field(o object, name string, v any, required bool) (bool, error) {
	raw, ok := o[name]
	if !ok || string(raw) == "null" {
		if required {
			return false, fmt.Errorf("has no %q", name)
		}
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("%q: %v", name, typeError(err))
	}
	return true, nil
}

// typeError shortens encoding/json's type errors.
func typeError(err error) string {
	var te *json.UnmarshalTypeError
	if e, ok := err.(*json.UnmarshalTypeError); ok {
		te = e
		return fmt.Sprintf("is a JSON %s, want %s", te.Value, te.Type)
	}
	return err.Error()
}

// objects decodes a required field of o that is a list of objects.
func objects(o object, name string) ([]object, error) {
	var list []object
	_, err := field(o, name, &list, true)
	return list, err
}

// nonEmpty checks required non-empty string fields.
func nonEmpty(o object, names ...string) error {
	for _, n := range names {
		var s string
		if _, err := field(o, n, &s, true); err != nil {
			return err
		}
		if s == "" {
			return fmt.Errorf("has an empty %q", n)
		}
	}
	return nil
}

// optionalStrings checks that fields, where present, are strings.
func optionalStrings(o object, names ...string) error {
	for _, n := range names {
		var s string
		if _, err := field(o, n, &s, false); err != nil {
			return err
		}
	}
	return nil
}

var addressTypes = []string{"InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS"}

// checkInstance checks an Instance and returns it decoded.
func checkInstance(o object) (*clouddriver.Instance, error) {
	if err := nonEmpty(o, "id", "name", "providerID", "state"); err != nil {
		return nil, fmt.Errorf("instance %w", err)
	}
	if err := optionalStrings(o, "zone", "region", "instanceType"); err != nil {
		return nil, fmt.Errorf("instance %w", err)
	}
	var in clouddriver.Instance
	raw, _ := json.Marshal(o)
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("instance: %v", typeError(err))
	}
	if in.State != clouddriver.StateRunning && in.State != clouddriver.StateStopped {
		return nil, fmt.Errorf("instance %s: state %q, want %q or %q", in.Name, in.State, clouddriver.StateRunning, clouddriver.StateStopped)
	}
	addrs, err := objects(o, "addresses")
	if err != nil {
		return nil, fmt.Errorf("instance %s %w", in.Name, err)
	}
	for i, a := range addrs {
		if err := nonEmpty(a, "type", "address"); err != nil {
			return nil, fmt.Errorf("instance %s: addresses[%d] %w", in.Name, i, err)
		}
		if !slices.Contains(addressTypes, in.Addresses[i].Type) {
			return nil, fmt.Errorf("instance %s: addresses[%d]: type %q is no Kubernetes NodeAddressType (%v)", in.Name, i, in.Addresses[i].Type, addressTypes)
		}
	}
	return &in, nil
}

// checkInstanceField checks the "instance" field of an answer.
func checkInstanceField(o object) (*clouddriver.Instance, error) {
	var inst object
	if _, err := field(o, "instance", &inst, true); err != nil {
		return nil, fmt.Errorf("answer %w", err)
	}
	return checkInstance(inst)
}

// checkLoadBalancer checks a LoadBalancer; listed says it comes from
// `loadbalancers list`, where each must exist.
func checkLoadBalancer(o object, listed bool) (*clouddriver.LoadBalancer, error) {
	var exists bool
	if _, err := field(o, "exists", &exists, true); err != nil {
		return nil, fmt.Errorf("load balancer %w", err)
	}
	if listed && !exists {
		return nil, fmt.Errorf(`load balancer in "loadBalancers" with "exists": false; the list holds only load balancers that exist`)
	}
	if exists {
		if err := nonEmpty(o, "name"); err != nil {
			return nil, fmt.Errorf("load balancer %w", err)
		}
	}
	if err := optionalStrings(o, "name", "serviceNamespace", "serviceName"); err != nil {
		return nil, fmt.Errorf("load balancer %w", err)
	}
	var lb clouddriver.LoadBalancer
	raw, _ := json.Marshal(o)
	if err := json.Unmarshal(raw, &lb); err != nil {
		return nil, fmt.Errorf("load balancer %s: %v", lb.Name, typeError(err))
	}
	for i, p := range lb.Ports {
		if p.Protocol == "" || p.Port <= 0 {
			return nil, fmt.Errorf("load balancer %s: ports[%d] = %+v, want a protocol and a port", lb.Name, i, p)
		}
	}
	for _, cidr := range lb.SourceRanges {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return nil, fmt.Errorf("load balancer %s: sourceRanges: %q is no CIDR", lb.Name, cidr)
		}
	}
	return &lb, nil
}

// checkRoute checks a Route.
func checkRoute(o object) (*clouddriver.Route, error) {
	if err := nonEmpty(o, "name", "nodeName", "destinationCIDR"); err != nil {
		return nil, fmt.Errorf("route %w", err)
	}
	var r clouddriver.Route
	raw, _ := json.Marshal(o)
	_ = json.Unmarshal(raw, &r) // the fields are strings, checked above
	if _, _, err := net.ParseCIDR(r.DestinationCIDR); err != nil {
		return nil, fmt.Errorf("route %s: destinationCIDR %q is no CIDR", r.Name, r.DestinationCIDR)
	}
	return &r, nil
}

// checkCall checks a Call.
func checkCall(o object) (*clouddriver.Call, error) {
	var seq int64
	if _, err := field(o, "seq", &seq, true); err != nil {
		return nil, fmt.Errorf("call %w", err)
	}
	var ts string
	if _, err := field(o, "time", &ts, true); err != nil {
		return nil, fmt.Errorf("call %d %w", seq, err)
	}
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		return nil, fmt.Errorf("call %d: time %q is no RFC 3339 time", seq, ts)
	}
	if err := nonEmpty(o, "operation", "caller"); err != nil {
		return nil, fmt.Errorf("call %d %w", seq, err)
	}
	if err := optionalStrings(o, "resource", "error"); err != nil {
		return nil, fmt.Errorf("call %d %w", seq, err)
	}
	var c clouddriver.Call
	raw, _ := json.Marshal(o)
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("call %d: %v", seq, typeError(err))
	}
	return &c, nil
}

// checkEmpty checks an answer that must be an object, `{}` in the
// protocol's tables: any object will do, as unknown fields are ignored.
func checkEmpty(object) error { return nil }
