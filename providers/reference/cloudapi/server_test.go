package cloudapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// newTestCloud serves a simulator on httptest and returns it with a client
// whose caller is "test".
func newTestCloud(t *testing.T, opts Options) (*Server, *Client) {
	t.Helper()
	s := NewServer(opts)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close()
	})
	c, err := NewClient(ts.URL, "test")
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func TestNthIPv4(t *testing.T) {
	tests := []struct {
		prefix  string
		n       int
		want    string
		wantErr bool
	}{
		{"127.64.0.0/16", 1, "127.64.0.1", false},
		{"127.64.0.0/16", 254, "127.64.0.254", false},
		{"127.64.0.0/16", 255, "127.64.1.1", false},
		{"127.64.0.0/16", 509, "127.64.2.1", false},
		{"127.65.3.0/24", 2, "127.65.3.2", false},
		{"127.65.3.0/24", 255, "", true},
		{"127.65.3.0/24", 0, "", true},
		{"fd00::/64", 1, "", true},
	}
	for _, tt := range tests {
		got, err := nthIPv4(netip.MustParsePrefix(tt.prefix), tt.n)
		if (err != nil) != tt.wantErr {
			t.Errorf("nthIPv4(%s, %d) error = %v, wantErr %v", tt.prefix, tt.n, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && got.String() != tt.want {
			t.Errorf("nthIPv4(%s, %d) = %s, want %s", tt.prefix, tt.n, got, tt.want)
		}
	}
}

func TestAllocateAddresses(t *testing.T) {
	nodes := netip.MustParsePrefix("127.64.0.0/16")
	tests := []struct {
		name     string
		n        int
		families []string
		want     []Address
	}{
		{
			name:     "IPv4",
			n:        1,
			families: []string{IPv4},
			want: []Address{
				{AddressInternalIP, "127.64.0.1"}, {AddressExternalIP, "203.0.113.1"}, {AddressHostname, "n1"},
			},
		},
		{
			name:     "dual stack",
			n:        3,
			families: []string{IPv4, IPv6},
			want: []Address{
				{AddressInternalIP, "127.64.0.3"}, {AddressInternalIP, "fd00:64::3"},
				{AddressExternalIP, "203.0.113.3"}, {AddressExternalIP, "2001:db8::3"},
				{AddressHostname, "n1"},
			},
		},
		{
			name:     "IPv6 first",
			n:        2,
			families: []string{IPv6, IPv4},
			want: []Address{
				{AddressInternalIP, "fd00:64::2"}, {AddressInternalIP, "127.64.0.2"},
				{AddressExternalIP, "2001:db8::2"}, {AddressExternalIP, "203.0.113.2"},
				{AddressHostname, "n1"},
			},
		},
		{
			name:     "second external pool",
			n:        255,
			families: []string{IPv4},
			want: []Address{
				{AddressInternalIP, "127.64.1.1"}, {AddressExternalIP, "198.51.100.1"}, {AddressHostname, "n1"},
			},
		},
		{
			name:     "past the documentation ranges, a thousand instances",
			n:        1000,
			families: []string{IPv4},
			want: []Address{
				// 762 from RFC 5737's three /24s, then the 238th of RFC 2544's.
				{AddressInternalIP, "127.64.3.238"}, {AddressExternalIP, "198.18.0.238"}, {AddressHostname, "n1"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := allocateAddresses(nodes, tt.n, "n1", tt.families)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseProviderID(t *testing.T) {
	tests := []struct {
		in       string
		zone, id string
		wantErr  bool
	}{
		{"reference://zone-a/i-0001", "zone-a", "i-0001", false},
		{"reference:///i-0001", "", "i-0001", false},
		{"aws:///us-east-1a/i-123", "", "", true},
		{"reference://zone-a", "", "", true},
		{"reference://zone-a/", "", "", true},
		{"reference://a/b/c", "", "", true},
	}
	for _, tt := range tests {
		zone, id, err := ParseProviderID(tt.in)
		if (err != nil) != tt.wantErr || zone != tt.zone || id != tt.id {
			t.Errorf("ParseProviderID(%q) = %q, %q, %v; want %q, %q, error %v", tt.in, zone, id, err, tt.zone, tt.id, tt.wantErr)
		}
	}
}

func TestInstanceLifecycle(t *testing.T) {
	_, c := newTestCloud(t, Options{DisableDataPath: true})
	ctx := t.Context()

	// Defaults: IDs in order, zones round-robin, one region, IPv4.
	for i, want := range []Instance{
		{ID: "i-0001", Name: "n1", ProviderID: "reference://zone-a/i-0001", Zone: "zone-a", Region: "region-1", InstanceType: "ref.small", State: StateRunning,
			Addresses: []Address{{AddressInternalIP, "127.64.0.1"}, {AddressExternalIP, "203.0.113.1"}, {AddressHostname, "n1"}}},
		{ID: "i-0002", Name: "n2", ProviderID: "reference://zone-b/i-0002", Zone: "zone-b", Region: "region-1", InstanceType: "ref.small", State: StateRunning,
			Addresses: []Address{{AddressInternalIP, "127.64.0.2"}, {AddressExternalIP, "203.0.113.2"}, {AddressHostname, "n2"}}},
		{ID: "i-0003", Name: "n3", ProviderID: "reference://zone-x/i-0003", Zone: "zone-x", Region: "region-1", InstanceType: "ref.large", State: StateRunning,
			Addresses: []Address{{AddressInternalIP, "fd00:64::3"}, {AddressExternalIP, "2001:db8::3"}, {AddressHostname, "n3"}}},
		{ID: "i-0004", Name: "n4", ProviderID: "reference://zone-c/i-0004", Zone: "zone-c", Region: "region-1", InstanceType: "ref.small", State: StateRunning,
			Addresses: []Address{{AddressInternalIP, "127.64.0.4"}, {AddressExternalIP, "203.0.113.4"}, {AddressHostname, "n4"}}},
	} {
		req := CreateInstanceRequest{Name: want.Name}
		if i == 2 {
			req = CreateInstanceRequest{Name: want.Name, Zone: "zone-x", InstanceType: "ref.large", IPFamilies: []string{IPv6}}
		}
		got, err := c.CreateInstance(ctx, req)
		if err != nil {
			t.Fatalf("creating %s: %v", want.Name, err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("created\n %+v\nwant\n %+v", *got, want)
		}
	}

	if _, err := c.CreateInstance(ctx, CreateInstanceRequest{Name: "n1"}); !IsConflict(err) {
		t.Errorf("creating n1 twice: got %v, want a conflict", err)
	}

	got, err := c.InstanceByName(ctx, "n2")
	if err != nil || got.ID != "i-0002" {
		t.Errorf("InstanceByName(n2) = %+v, %v", got, err)
	}
	if _, err := c.InstanceByName(ctx, "nope"); !IsNotFound(err) {
		t.Errorf("InstanceByName(nope): got %v, want not found", err)
	}

	if in, err := c.StopInstance(ctx, "i-0001"); err != nil || in.State != StateStopped {
		t.Errorf("StopInstance = %+v, %v", in, err)
	}
	if in, err := c.GetInstance(ctx, "i-0001"); err != nil || in.State != StateStopped {
		t.Errorf("after stop, GetInstance = %+v, %v", in, err)
	}
	if in, err := c.StartInstance(ctx, "i-0001"); err != nil || in.State != StateRunning {
		t.Errorf("StartInstance = %+v, %v", in, err)
	}

	addrs := []Address{{AddressExternalIP, "203.0.113.99"}}
	if in, err := c.SetAddresses(ctx, "i-0001", addrs); err != nil || !reflect.DeepEqual(in.Addresses, addrs) {
		t.Errorf("SetAddresses = %+v, %v", in, err)
	}

	if err := c.DeleteInstance(ctx, "i-0002"); err != nil {
		t.Errorf("DeleteInstance: %v", err)
	}
	if _, err := c.GetInstance(ctx, "i-0002"); !IsNotFound(err) {
		t.Errorf("GetInstance after delete: got %v, want not found", err)
	}
	if err := c.DeleteInstance(ctx, "i-0002"); !IsNotFound(err) {
		t.Errorf("DeleteInstance twice: got %v, want not found", err)
	}
	list, err := c.ListInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range list {
		ids = append(ids, in.ID)
	}
	if want := []string{"i-0001", "i-0003", "i-0004"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ListInstances IDs = %v, want %v", ids, want)
	}
}

// rawCall sends a request with a raw body and returns the status and body.
func rawCall(t *testing.T, s *Server, method, path, body string) (int, string) {
	t.Helper()
	return rawCallAs(t, s, "", method, path, body)
}

// rawCallAs is rawCall with an X-Reference-Caller header (when not empty).
func rawCallAs(t *testing.T, s *Server, caller, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if caller != "" {
		req.Header.Set(CallerHeader, caller)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// A cloud of bare instances reports no Hostname address and no instance
// type, unless one is asked for.
func TestBareInstances(t *testing.T) {
	_, c := newTestCloud(t, Options{DisableDataPath: true, BareInstances: true})
	ctx := t.Context()
	for _, tt := range []struct {
		req  CreateInstanceRequest
		want Instance
	}{
		{CreateInstanceRequest{Name: "n1"}, Instance{ID: "i-0001", Name: "n1", ProviderID: "reference://zone-a/i-0001", Zone: "zone-a", Region: "region-1", State: StateRunning,
			Addresses: []Address{{AddressInternalIP, "127.64.0.1"}, {AddressExternalIP, "203.0.113.1"}}}},
		{CreateInstanceRequest{Name: "n2", InstanceType: "ref.large"}, Instance{ID: "i-0002", Name: "n2", ProviderID: "reference://zone-b/i-0002", Zone: "zone-b", Region: "region-1", InstanceType: "ref.large", State: StateRunning,
			Addresses: []Address{{AddressInternalIP, "127.64.0.2"}, {AddressExternalIP, "203.0.113.2"}}}},
	} {
		got, err := c.CreateInstance(ctx, tt.req)
		if err != nil {
			t.Fatalf("creating %s: %v", tt.req.Name, err)
		}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("created\n %+v\nwant\n %+v", *got, tt.want)
		}
	}
}

func TestValidation(t *testing.T) {
	s := NewServer(Options{DisableDataPath: true})
	tests := []struct {
		name         string
		method, path string
		body         string
		wantStatus   int
		wantInError  string
	}{
		{"no name", "POST", "/v1/instances", `{}`, 400, "instance name"},
		{"slash in name", "POST", "/v1/instances", `{"name":"a/b"}`, 400, "instance name"},
		{"unknown family", "POST", "/v1/instances", `{"name":"a","ipFamilies":["IPv5"]}`, 400, "IPv5"},
		{"same family twice", "POST", "/v1/instances", `{"name":"a","ipFamilies":["IPv4","IPv4"]}`, 400, "ipFamilies"},
		{"bad JSON", "POST", "/v1/instances", `{`, 400, "decoding"},
		{"unknown instance", "GET", "/v1/instances/i-9999", ``, 404, "i-9999"},
		{"stop unknown", "POST", "/v1/instances/i-9999/stop", ``, 404, "i-9999"},
		{"bad address type", "PUT", "/v1/instances/i-9999/addresses", `{"addresses":[{"type":"Public","address":"1.2.3.4"}]}`, 400, "Public"},
		{"bad address", "PUT", "/v1/instances/i-9999/addresses", `{"addresses":[{"type":"InternalIP","address":"x"}]}`, 400, "x"},
		{"SCTP", "PUT", "/v1/loadbalancers/lb1", `{"ports":[{"protocol":"SCTP","port":80,"nodePort":30000}]}`, 400, "SCTP"},
		{"port 0", "PUT", "/v1/loadbalancers/lb1", `{"ports":[{"protocol":"TCP","port":0,"nodePort":30000}]}`, 400, "out of range"},
		{"port twice", "PUT", "/v1/loadbalancers/lb1", `{"ports":[{"protocol":"TCP","port":80},{"protocol":"TCP","port":80}]}`, 400, "twice"},
		{"bad source range", "PUT", "/v1/loadbalancers/lb1", `{"sourceRanges":["10.0.0.0"]}`, 400, "10.0.0.0"},
		{"unknown session affinity", "PUT", "/v1/loadbalancers/lb1", `{"sessionAffinity":"clientip"}`, 400, "clientip"},
		{"unknown load balancer", "GET", "/v1/loadbalancers/nope", ``, 404, "nope"},
		{"delete unknown load balancer", "DELETE", "/v1/loadbalancers/nope", ``, 404, "nope"},
		{"route without node", "POST", "/v1/routes", `{"destinationCIDR":"10.244.0.0/24"}`, 400, "nodeName"},
		{"route with bad CIDR", "POST", "/v1/routes", `{"nodeName":"n1","destinationCIDR":"10.244.0.0"}`, 400, "destinationCIDR"},
		{"delete unknown route", "DELETE", "/v1/routes/nope", ``, 404, "nope"},
		{"fault without operation", "POST", "/v1/faults", `{"failTimes":1}`, 400, "operation"},
		{"fault with bad rate", "POST", "/v1/faults", `{"operation":"*","errorRate":2}`, 400, "errorRate"},
		{"fault with bad latency", "POST", "/v1/faults", `{"operation":"*","latency":"soon"}`, 400, "latency"},
		{"calls with bad since", "GET", "/v1/calls?since=x", ``, 400, "since"},
		{"unknown path", "GET", "/v2/things", ``, 404, "no such endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := rawCall(t, s, tt.method, tt.path, tt.body)
			if status != tt.wantStatus || !strings.Contains(body, `"error"`) || !strings.Contains(body, tt.wantInError) {
				t.Errorf("%s %s: got %d %s, want %d with an error mentioning %q", tt.method, tt.path, status, body, tt.wantStatus, tt.wantInError)
			}
		})
	}
}

func TestLoadBalancerRecords(t *testing.T) {
	_, c := newTestCloud(t, Options{DisableDataPath: true})
	ctx := t.Context()

	spec := LoadBalancerSpec{
		ServiceNamespace: "ns", ServiceName: "svc",
		Ports:        []Port{{ProtocolTCP, 80, 30080}, {ProtocolUDP, 53, 30053}},
		Backends:     []string{"n2", "n1", "n2"},
		SourceRanges: []string{"10.0.0.0/8"},
	}
	lb, err := c.EnsureLoadBalancer(ctx, "lb1", spec)
	if err != nil {
		t.Fatal(err)
	}
	if lb.IngressIP != "127.65.0.1" || !reflect.DeepEqual(lb.Backends, []string{"n1", "n2"}) || lb.ServiceName != "svc" {
		t.Errorf("created %+v", lb)
	}
	lb2, err := c.EnsureLoadBalancer(ctx, "lb2", LoadBalancerSpec{})
	if err != nil || lb2.IngressIP != "127.65.0.2" || lb2.Ports == nil || lb2.Backends == nil || lb2.SourceRanges == nil {
		t.Errorf("second load balancer = %+v, %v; want ingress 127.65.0.2 and empty, non-nil lists", lb2, err)
	}

	// An update keeps the ingress IP and replaces the spec.
	spec.Backends = []string{"n3"}
	spec.HealthCheckNodePort = 32000
	lb, err = c.EnsureLoadBalancer(ctx, "lb1", spec)
	if err != nil || lb.IngressIP != "127.65.0.1" || !reflect.DeepEqual(lb.Backends, []string{"n3"}) || lb.HealthCheckNodePort != 32000 {
		t.Errorf("updated = %+v, %v", lb, err)
	}
	got, err := c.GetLoadBalancer(ctx, "lb1")
	if err != nil || !reflect.DeepEqual(got, lb) {
		t.Errorf("GetLoadBalancer = %+v, %v; want %+v", got, err, lb)
	}
	list, err := c.ListLoadBalancers(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "lb1" || list[1].Name != "lb2" {
		t.Errorf("ListLoadBalancers = %+v, %v", list, err)
	}
	if err := c.DeleteLoadBalancer(ctx, "lb1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetLoadBalancer(ctx, "lb1"); !IsNotFound(err) {
		t.Errorf("GetLoadBalancer after delete: got %v, want not found", err)
	}
	// A new load balancer never reuses an ingress IP.
	if lb, err := c.EnsureLoadBalancer(ctx, "lb1", LoadBalancerSpec{}); err != nil || lb.IngressIP != "127.65.0.3" {
		t.Errorf("recreated = %+v, %v; want ingress 127.65.0.3", lb, err)
	}
}

// With a backend limit, a load balancer registers the first nodes by
// name, and all of them when it is given fewer.
func TestBackendLimit(t *testing.T) {
	_, c := newTestCloud(t, Options{DisableDataPath: true, BackendLimit: 2})
	for _, tt := range []struct{ given, want []string }{
		{[]string{"n3", "n1", "n2"}, []string{"n1", "n2"}},
		{[]string{"n4"}, []string{"n4"}},
		{nil, []string{}},
	} {
		lb, err := c.EnsureLoadBalancer(t.Context(), "lb1", LoadBalancerSpec{Backends: tt.given})
		if err != nil || !reflect.DeepEqual(lb.Backends, tt.want) {
			t.Errorf("given %v: backends %v, %v; want %v", tt.given, lb.Backends, err, tt.want)
		}
	}
}

func TestRoutes(t *testing.T) {
	_, c := newTestCloud(t, Options{DisableDataPath: true})
	ctx := t.Context()

	r1, err := c.CreateRoute(ctx, CreateRouteRequest{NodeName: "n1", DestinationCIDR: "10.244.1.0/24"})
	if err != nil || *r1 != (Route{Name: "r-0001", NodeName: "n1", DestinationCIDR: "10.244.1.0/24"}) {
		t.Errorf("CreateRoute = %+v, %v", r1, err)
	}
	r2, err := c.CreateRoute(ctx, CreateRouteRequest{Name: "mine", NodeName: "n2", DestinationCIDR: "10.244.2.7/24"})
	if err != nil || *r2 != (Route{Name: "mine", NodeName: "n2", DestinationCIDR: "10.244.2.0/24"}) {
		t.Errorf("CreateRoute with a name = %+v, %v", r2, err)
	}
	if _, err := c.CreateRoute(ctx, CreateRouteRequest{NodeName: "n3", DestinationCIDR: "10.244.1.0/24"}); !IsConflict(err) {
		t.Errorf("CreateRoute with a taken CIDR: got %v, want a conflict", err)
	}
	if _, err := c.CreateRoute(ctx, CreateRouteRequest{Name: "mine", NodeName: "n3", DestinationCIDR: "10.244.3.0/24"}); !IsConflict(err) {
		t.Errorf("CreateRoute with a taken name: got %v, want a conflict", err)
	}
	if err := c.DeleteRoute(ctx, "r-0001"); err != nil {
		t.Fatal(err)
	}
	routes, err := c.ListRoutes(ctx)
	if err != nil || !reflect.DeepEqual(routes, []Route{*r2}) {
		t.Errorf("ListRoutes = %+v, %v; want only %+v", routes, err, *r2)
	}
}

func TestCallLog(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, c := newTestCloud(t, Options{DisableDataPath: true, Now: func() time.Time { return clock }})
	ctx := t.Context()

	n1, _ := c.CreateInstance(ctx, CreateInstanceRequest{Name: "n1"})
	_, _ = c.GetInstance(ctx, "i-0009")
	rawCall(t, s, "GET", "/v1/routes", "") // no caller header
	_, _ = c.Faults(ctx)                   // not a cloud operation: not logged

	calls, err := c.Calls(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Call{
		{Seq: 1, Time: clock, Operation: OpInstanceCreate, Caller: "test"},
		// An ID no instance has is logged as given.
		{Seq: 2, Time: clock, Operation: OpInstanceGet, Caller: "test", Resource: "i-0009", Error: `instance "i-0009" not found`},
		{Seq: 3, Time: clock, Operation: OpRouteList},
	}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("Calls(0) =\n %+v\nwant\n %+v", calls, want)
	}
	if calls, err := c.Calls(ctx, 2); err != nil || !reflect.DeepEqual(calls, want[2:]) {
		t.Errorf("Calls(2) = %+v, %v; want %+v", calls, err, want[2:])
	}
	if calls, err := c.Calls(ctx, 3); err != nil || len(calls) != 0 {
		t.Errorf("Calls(3) = %+v, %v; want none", calls, err)
	}
	// A call that gives an instance's ID is logged with its name.
	_, _ = c.GetInstance(ctx, n1.ID)
	if calls, err := c.Calls(ctx, 3); err != nil || len(calls) != 1 || calls[0].Resource != "n1" {
		t.Errorf("Calls(3) after getting n1 by ID = %+v, %v; want one call about n1", calls, err)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		// caller is the X-Reference-Caller of the calls.
		caller string
		// calls lists operations to call in order; wantFail says which fail.
		calls    []string
		wantFail []bool
	}{
		{
			name:     "fail twice",
			fault:    Fault{Operation: OpInstanceList, FailTimes: 2},
			calls:    []string{OpInstanceList, OpRouteList, OpInstanceList, OpInstanceList},
			wantFail: []bool{true, false, true, false},
		},
		{
			name:     "every operation",
			fault:    Fault{Operation: "*", FailTimes: 2},
			calls:    []string{OpRouteList, OpLoadBalancerList, OpInstanceList},
			wantFail: []bool{true, true, false},
		},
		{
			name:     "always",
			fault:    Fault{Operation: OpRouteList, ErrorRate: 1},
			calls:    []string{OpRouteList, OpRouteList, OpInstanceList},
			wantFail: []bool{true, true, false},
		},
		{
			name:     "another caller is exempt",
			fault:    Fault{Operation: OpRouteList, ErrorRate: 1, ExceptCaller: "driver"},
			caller:   "driver",
			calls:    []string{OpRouteList, OpRouteList},
			wantFail: []bool{false, false},
		},
		{
			name:     "never",
			fault:    Fault{Operation: OpRouteList, ErrorRate: 0.0000001},
			calls:    []string{OpRouteList, OpRouteList},
			wantFail: []bool{false, false},
		},
	}
	paths := map[string]string{OpInstanceList: "/v1/instances", OpRouteList: "/v1/routes", OpLoadBalancerList: "/v1/loadbalancers"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := newTestCloud(t, Options{DisableDataPath: true})
			if _, err := c.AddFault(t.Context(), tt.fault); err != nil {
				t.Fatal(err)
			}
			for i, op := range tt.calls {
				status, body := rawCallAs(t, s, tt.caller, "GET", paths[op], "")
				if failed := status == http.StatusInternalServerError; failed != tt.wantFail[i] {
					t.Errorf("call %d (%s): got %d %s, want failure %v", i, op, status, body, tt.wantFail[i])
				}
				if tt.wantFail[i] && !strings.Contains(body, "injected fault: "+op) {
					t.Errorf("call %d (%s): body %s does not name the injected fault", i, op, body)
				}
			}
		})
	}
}

func TestFaultLatencyAndClear(t *testing.T) {
	_, c := newTestCloud(t, Options{DisableDataPath: true})
	ctx := t.Context()
	faults, err := c.AddFault(ctx, Fault{Operation: OpRouteList, Latency: "150ms"})
	if err != nil || len(faults) != 1 {
		t.Fatalf("AddFault = %+v, %v", faults, err)
	}
	start := time.Now()
	if _, err := c.ListRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("ListRoutes took %s, want at least the injected 150ms", d)
	}
	// A caller that gives up does not wait for the whole latency.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.ListRoutes(short); err == nil {
		t.Error("ListRoutes with a 20ms deadline succeeded despite 150ms latency")
	}

	if _, err := c.AddFault(ctx, Fault{Operation: OpInstanceGet, FailTimes: 1}); err != nil {
		t.Fatal(err)
	}
	if faults, err := c.Faults(ctx); err != nil || len(faults) != 2 {
		t.Errorf("Faults = %+v, %v; want 2", faults, err)
	}
	if err := c.ClearFaults(ctx); err != nil {
		t.Fatal(err)
	}
	if faults, err := c.Faults(ctx); err != nil || len(faults) != 0 {
		t.Errorf("Faults after clear = %+v, %v; want none", faults, err)
	}
}

func TestListenUnix(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cloud.sock")
	l, err := Listen("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Options{DisableDataPath: true})
	srv := &http.Server{Handler: s.Handler()}
	go func() { _ = srv.Serve(l) }()

	c, err := NewClient("unix://"+sock, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListInstances(t.Context()); err != nil {
		t.Fatalf("over the unix socket: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(sock), "*")); len(matches) != 0 {
		t.Errorf("after close, the socket directory still holds %v", matches)
	}
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in               string
		network, address string
		wantErr          bool
	}{
		{"unix:///run/cloud.sock", "unix", "/run/cloud.sock", false},
		{"tcp://127.0.0.1:8080", "tcp", "127.0.0.1:8080", false},
		{"http://127.0.0.1:8080", "tcp", "127.0.0.1:8080", false},
		{"tcp://127.0.0.1", "", "", true},
		{"/run/cloud.sock", "", "", true},
		{"ftp://x:1", "", "", true},
	}
	for _, tt := range tests {
		network, address, err := ParseEndpoint(tt.in)
		if (err != nil) != tt.wantErr || network != tt.network || address != tt.address {
			t.Errorf("ParseEndpoint(%q) = %q, %q, %v", tt.in, network, address, err)
		}
	}
}
