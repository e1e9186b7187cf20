package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/cloud"
)

// startCloud runs a simulated vCenter in the test process and returns the
// driver's environment for it.
func startCloud(t *testing.T, opts cloud.Options) (*cloud.Cloud, map[string]string) {
	t.Helper()
	opts.Dir = t.TempDir()
	c, err := cloud.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, map[string]string{
		ConfigEnv:  filepath.Join(opts.Dir, cloud.ConfigFile),
		ControlEnv: filepath.Join(opts.Dir, cloud.ControlSocket),
	}
}

// call runs one verb through Main.
func call(t *testing.T, env map[string]string, verb, request string) (int, []byte, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), strings.Fields(verb), strings.NewReader(request), &stdout, &stderr, func(k string) string { return env[k] })
	if code == driverproto.ExitOK && strings.Count(stdout.String(), "\n") != 1 {
		t.Errorf("%s: stdout is not one JSON line: %q", verb, stdout.String())
	}
	return code, stdout.Bytes(), stderr.String()
}

// must runs a verb that must succeed and decodes its answer.
func must[T any](t *testing.T, env map[string]string, verb, request string) T {
	t.Helper()
	code, out, errOut := call(t, env, verb, request)
	if code != driverproto.ExitOK {
		t.Fatalf("%s %s: exit %d: %s", verb, request, code, errOut)
	}
	var v T
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v: %s", verb, err, out)
	}
	return v
}

// fails runs a verb that must fail with code, mentioning want on stderr.
func fails(t *testing.T, env map[string]string, verb, request string, code int, want string) {
	t.Helper()
	got, out, errOut := call(t, env, verb, request)
	if got != code || !strings.Contains(errOut, want) {
		t.Errorf("%s %s: exit %d, stderr %q, stdout %q; want exit %d mentioning %q", verb, request, got, errOut, out, code, want)
	}
}

type instanceAnswer struct {
	Instance driverproto.Instance `json:"instance"`
}

// ccmClient logs in to the simulated vCenter as the vSphere CCM does
// (pkg/common/vclib/connection.go, NewClient): the config's user, the CA
// file, User-Agent k8s-cloud-provider-vsphere.
func ccmClient(t *testing.T, c *cloud.Cloud, caFile string) *vim25.Client {
	t.Helper()
	sc := soap.NewClient(c.URL(), false)
	if err := sc.SetRootCAs(caFile); err != nil {
		t.Fatal(err)
	}
	vc, err := vim25.NewClient(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	vc.UserAgent = "k8s-cloud-provider-vsphere"
	sm := session.NewManager(vc)
	if err := sm.Login(t.Context(), url.UserPassword("ccm@vsphere.local", "ccm-conformance")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Logout(context.Background()) })
	return vc
}

// guestOf reads a VM's guest information the way the CCM does
// (nodemanager.go, DiscoverNode: the guest, summary and config properties).
func guestOf(t *testing.T, vc *vim25.Client, id string) *types.GuestInfo {
	t.Helper()
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: id}
	var vm mo.VirtualMachine
	if err := object.NewVirtualMachine(vc, ref).Properties(t.Context(), ref, []string{"guest", "summary", "config"}, &vm); err != nil {
		t.Fatal(err)
	}
	return vm.Guest
}

func ipsOn(g *types.GuestInfo, network string) []string {
	for _, n := range g.Net {
		if n.Network == network {
			return n.IpAddress
		}
	}
	return nil
}

func datacenter(t *testing.T, vc *vim25.Client) *object.Datacenter {
	t.Helper()
	dc, err := find.NewFinder(vc).DefaultDatacenter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// TestIntegrationDriver drives every verb through Main against a simulated
// vCenter in the test process, and checks what a CCM would see.
func TestIntegrationDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a simulated vCenter")
	}
	logTime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c, env := startCloud(t, cloud.Options{Now: func() time.Time { return logTime }})
	caFile := filepath.Join(filepath.Dir(env[ConfigEnv]), cloud.CAFile)
	ccm := ccmClient(t, c, caFile)

	info := must[driverproto.Info](t, env, "info", "")
	if info.ProtocolVersion != "v1" || info.Provider != "vsphere" || !slices.Equal(info.Verbs, verbNames()) {
		t.Errorf("info = %+v", info)
	}
	if l := must[struct{ Instances []driverproto.Instance }](t, env, "instances list", "{}"); len(l.Instances) != 0 {
		t.Errorf("a new cloud lists instances %v, want none", l.Instances)
	}
	fails(t, env, "instance get", `{"name":"n1"}`, driverproto.ExitNotFound, "not found")

	// create waits until the guest reports its host name and addresses:
	// a read right after it, as the CCM makes, sees them.
	n1 := must[instanceAnswer](t, env, "instance create", `{"name":"n1","zone":"","instanceType":"","ipFamilies":["IPv4"],"futureField":1}`).Instance
	if n1.Name != "n1" || n1.State != "running" || n1.Region != "region-1" || n1.Zone == "" ||
		n1.InstanceType != "vsphere-vm.cpu-2.mem-4gb.os-linux" || !strings.HasPrefix(n1.ProviderID, "vsphere://") ||
		n1.ProviderID != strings.ToLower(n1.ProviderID) || len(n1.ProviderID) != len("vsphere://")+36 {
		t.Errorf("instance create n1 = %+v", n1)
	}
	g := guestOf(t, ccm, n1.ID)
	if g.HostName != "n1" || len(ipsOn(g, "VM Network")) != 1 || len(ipsOn(g, "External Network")) != 1 {
		t.Fatalf("guest of n1 right after create: host name %q, net %+v", g.HostName, g.Net)
	}
	wantAddrs := []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: ipsOn(g, "VM Network")[0]}, {Type: "ExternalIP", Address: ipsOn(g, "External Network")[0]}}
	if !slices.Equal(n1.Addresses, wantAddrs) {
		t.Errorf("n1's addresses = %v, want %v (its guest.net: %+v)", n1.Addresses, wantAddrs, g.Net)
	}
	fails(t, env, "instance create", `{"name":"n1"}`, driverproto.ExitFailure, "already exists")
	fails(t, env, "instance create", `{"name":"nx","zone":"zone-q"}`, driverproto.ExitFailure, `zone "zone-q"`)
	fails(t, env, "instance create", `{"name":"nx","instanceType":"m5.large"}`, driverproto.ExitFailure, "instance type")
	fails(t, env, "instance create", `{"name":"nx","ipFamilies":["IPv5"]}`, driverproto.ExitFailure, "ipFamilies")

	// An IPv6 address is held by the cloud (guest.net) but is no address
	// of a node under an ipv4 cloud config.
	n2 := must[instanceAnswer](t, env, "instance create", `{"name":"n2","zone":"zone-c","instanceType":"vsphere-vm.cpu-4.mem-8gb.os-linux","ipFamilies":["IPv4","IPv6"]}`).Instance
	g2 := guestOf(t, ccm, n2.ID)
	if n2.Zone != "zone-c" || n2.InstanceType != "vsphere-vm.cpu-4.mem-8gb.os-linux" || len(ipsOn(g2, "VM Network")) != 2 || len(n2.Addresses) != 3 {
		t.Errorf("instance create n2 = %+v; guest.net %+v", n2, g2.Net)
	}
	n3 := must[instanceAnswer](t, env, "instance create", `{"name":"n3"}`).Instance
	if n3.Zone == n1.Zone || n3.Zone == n2.Zone {
		t.Errorf("n3 went to zone %s, which n1 (%s) or n2 (%s) has; want the zone with the fewest VMs", n3.Zone, n1.Zone, n2.Zone)
	}

	list := must[struct{ Instances []driverproto.Instance }](t, env, "instances list", "{}")
	if len(list.Instances) != 3 || list.Instances[0].Name != "n1" || list.Instances[0].ProviderID != n1.ProviderID {
		t.Errorf("instances list = %+v", list.Instances)
	}
	if got := must[instanceAnswer](t, env, "instance get", `{"name":"n1"}`).Instance; !equalInstances(got, n1) {
		t.Errorf("instance get n1 = %+v, want %+v", got, n1)
	}

	must[struct{}](t, env, "instance stop", `{"name":"n1"}`)
	must[struct{}](t, env, "instance stop", `{"name":"n1"}`) // stopped already
	if got := must[instanceAnswer](t, env, "instance get", `{"name":"n1"}`).Instance; got.State != "stopped" {
		t.Errorf("n1 after stop: state %s", got.State)
	}
	must[struct{}](t, env, "instance start", `{"name":"n1"}`)
	if got := must[instanceAnswer](t, env, "instance get", `{"name":"n1"}`).Instance; got.State != "running" || !slices.Equal(got.Addresses, n1.Addresses) {
		t.Errorf("n1 after start: %+v", got)
	}

	// set-addresses: the guest reports them, in order, on the NIC of each
	// type's network; the answer is what the CCM makes of them.
	set := must[instanceAnswer](t, env, "instance set-addresses", `{"name":"n1","addresses":[
		{"type":"Hostname","address":"n1"},
		{"type":"InternalIP","address":"10.1.2.3"},{"type":"InternalIP","address":"10.1.2.4"},{"type":"InternalIP","address":"fd00::5"},
		{"type":"ExternalIP","address":"198.51.100.9"}]}`).Instance
	if want := []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.1.2.3"}, {Type: "ExternalIP", Address: "198.51.100.9"}}; !slices.Equal(set.Addresses, want) {
		t.Errorf("set-addresses answered %v, want %v", set.Addresses, want)
	}
	g = guestOf(t, ccm, n1.ID)
	if g.HostName != "n1" || !slices.Equal(ipsOn(g, "VM Network"), []string{"10.1.2.3", "10.1.2.4", "fd00::5"}) ||
		!slices.Equal(ipsOn(g, "External Network"), []string{"198.51.100.9"}) || g.IpAddress != "10.1.2.3" {
		t.Errorf("guest of n1 after set-addresses: host name %q, ipAddress %q, net %+v", g.HostName, g.IpAddress, g.Net)
	}
	// What validate-driver sets: exactly that list comes back.
	if got := must[instanceAnswer](t, env, "instance set-addresses", `{"name":"n3","addresses":[{"type":"ExternalIP","address":"203.0.113.250"}]}`).Instance; !slices.Equal(got.Addresses, []driverproto.Address{{Type: "ExternalIP", Address: "203.0.113.250"}}) {
		t.Errorf("set-addresses of one ExternalIP answered %v", got.Addresses)
	}
	fails(t, env, "instance set-addresses", `{"name":"n1","addresses":[{"type":"InternalDNS","address":"n1.local"}]}`, driverproto.ExitFailure, "InternalDNS")
	fails(t, env, "instance set-addresses", `{"name":"n1","addresses":[{"type":"InternalIP","address":"not-an-ip"}]}`, driverproto.ExitFailure, "not-an-ip")
	fails(t, env, "instance set-addresses", `{"name":"zz","addresses":[]}`, driverproto.ExitNotFound, "not found")

	// Faults hit the CCM's lookups, not the driver.
	si := object.NewSearchIndex(ccm)
	dc := datacenter(t, ccm)
	uuid := strings.TrimPrefix(n1.ProviderID, "vsphere://")
	if ref, err := si.FindByUuid(t.Context(), dc, uuid, true, nil); err != nil || ref == nil {
		t.Fatalf("the CCM's FindByUuid before the fault: %v, %v", ref, err)
	}
	mark := must[struct{ Last int64 }](t, env, "calls list", "{}").Last
	must[struct{}](t, env, "fault inject", `{"target":"instances","errorRate":1.0}`)
	for name, lookup := range map[string]func() error{
		"FindByUuid":       func() error { _, err := si.FindByUuid(t.Context(), dc, uuid, true, nil); return err },
		"FindAllByDnsName": func() error { _, err := si.FindAllByDnsName(t.Context(), dc, "n1", true); return err },
		"FindByIp":         func() error { _, err := si.FindByIp(t.Context(), dc, "10.1.2.3", true); return err },
	} {
		if err := lookup(); err == nil || !strings.Contains(err.Error(), "injected fault") {
			t.Errorf("the CCM's %s during the fault: %v, want an injected fault", name, err)
		}
	}
	if got := must[instanceAnswer](t, env, "instance get", `{"name":"n1"}`).Instance; got.ProviderID != n1.ProviderID {
		t.Errorf("the driver's instance get during the fault = %+v", got)
	}
	must[struct{ Instances []driverproto.Instance }](t, env, "instances list", "{}")
	fails(t, env, "fault inject", `{"target":"routes","errorRate":1}`, driverproto.ExitFailure, "unknown fault target")
	fails(t, env, "fault inject", `{"target":"instances","errorRate":1.5}`, driverproto.ExitFailure, "errorRate")

	// The call log: the CCM's failed lookups, by the VM's name; none of the
	// driver's calls.
	type callsAnswer struct {
		Calls []driverproto.Call `json:"calls"`
		Last  int64              `json:"last"`
	}
	calls := must[callsAnswer](t, env, "calls list", fmt.Sprintf(`{"after":%d}`, mark))
	var ops []string
	for _, c := range calls.Calls {
		ops = append(ops, c.Operation)
		if c.Seq <= mark || c.Seq > calls.Last {
			t.Errorf("call %+v outside (%d, %d]", c, mark, calls.Last)
		}
		if strings.Contains(c.Caller, UserAgent) {
			t.Errorf("the driver's own call is listed: %+v", c)
		}
		if !strings.HasPrefix(c.Caller, "k8s-cloud-provider-vsphere ccm@vsphere.local session ") {
			t.Errorf("call %+v: caller %q, want the CCM's user agent, user and session", c, c.Caller)
		}
		if !c.Time.Equal(logTime) {
			t.Errorf("call %+v: time %v, want the cloud's clock %v", c, c.Time, logTime)
		}
	}
	for _, want := range []driverproto.Call{
		{Operation: "FindByUuid", Resource: "n1", Error: "ccm-conformance: injected fault on instances"},
		{Operation: "FindAllByDnsName", Resource: "n1", Error: "ccm-conformance: injected fault on instances"},
		{Operation: "FindByIp", Resource: "n1", Error: "ccm-conformance: injected fault on instances"},
	} {
		if !slices.ContainsFunc(calls.Calls, func(c driverproto.Call) bool {
			return c.Operation == want.Operation && c.Resource == want.Resource && c.Error == want.Error
		}) {
			t.Errorf("calls list after %d: no %+v in %v", mark, want, ops)
		}
	}
	only := must[callsAnswer](t, env, "calls list", fmt.Sprintf(`{"after":%d,"operations":["FindByUuid"]}`, mark))
	if len(only.Calls) != 1 || only.Calls[0].Operation != "FindByUuid" || only.Last != calls.Last {
		t.Errorf("calls list of FindByUuid = %+v", only)
	}
	if none := must[callsAnswer](t, env, "calls list", fmt.Sprintf(`{"after":%d}`, calls.Last)); len(none.Calls) != 0 || none.Last != calls.Last {
		t.Errorf("calls list after the last = %+v", none)
	}
	fails(t, env, "calls list", `{"after":-1}`, driverproto.ExitFailure, "after -1")

	must[struct{}](t, env, "fault clear", "{}")
	if ref, err := si.FindByUuid(t.Context(), dc, uuid, true, nil); err != nil || ref == nil || ref.Reference().Value != n1.ID {
		t.Errorf("the CCM's FindByUuid after fault clear: %v, %v", ref, err)
	}
	must[struct{}](t, env, "fault inject", `{"target":"instances","errorRate":0}`)
	if _, err := si.FindByUuid(t.Context(), dc, uuid, true, nil); err != nil {
		t.Errorf("the CCM's FindByUuid at error rate 0: %v", err)
	}

	// Two CCM processes with the same user and user agent are two callers.
	other := ccmClient(t, c, caFile)
	mark = must[callsAnswer](t, env, "calls list", "{}").Last
	for _, vc := range []*vim25.Client{ccm, other} {
		if _, err := object.NewSearchIndex(vc).FindByUuid(t.Context(), dc, uuid, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	two := must[callsAnswer](t, env, "calls list", fmt.Sprintf(`{"after":%d,"operations":["FindByUuid"]}`, mark))
	if len(two.Calls) != 2 || two.Calls[0].Caller == two.Calls[1].Caller {
		t.Errorf("two CCM sessions' calls: %+v, want two with different callers", two.Calls)
	}

	must[struct{}](t, env, "instance delete", `{"name":"n1"}`)
	fails(t, env, "instance delete", `{"name":"n1"}`, driverproto.ExitNotFound, "not found")
	fails(t, env, "instance get", `{"name":"n1"}`, driverproto.ExitNotFound, "not found")
	fails(t, env, "instance stop", `{"name":"n1"}`, driverproto.ExitNotFound, "not found")
	fails(t, env, "instance start", `{"name":"n1"}`, driverproto.ExitNotFound, "not found")
	if ref, err := si.FindByUuid(t.Context(), dc, uuid, true, nil); err != nil || ref != nil {
		t.Errorf("the CCM's FindByUuid of the deleted VM: %v, %v; want none", ref, err)
	}
	// Its addresses went back to the pools: a new VM may get them.
	n4 := must[instanceAnswer](t, env, "instance create", `{"name":"n4"}`).Instance
	if len(n4.Addresses) != 3 {
		t.Errorf("n4 = %+v", n4)
	}

	fails(t, env, "instance reboot", `{}`, driverproto.ExitFailure, "unknown verb")
	fails(t, env, "instance get", `{"name":`, driverproto.ExitFailure, "decoding the request")
	fails(t, map[string]string{}, "instances list", `{}`, driverproto.ExitFailure, ConfigEnv)
	noControl := map[string]string{ConfigEnv: env[ConfigEnv]}
	fails(t, noControl, "calls list", `{}`, driverproto.ExitFailure, "unknown verb")
	fails(t, noControl, "instance create", `{"name":"n5","ipFamilies":["IPv6"]}`, driverproto.ExitFailure, ControlEnv)
	if got := must[struct{ Instances []driverproto.Instance }](t, noControl, "instances list", "{}"); len(got.Instances) != 3 {
		t.Errorf("instances list without a control channel: %+v", got.Instances)
	}
}

// TestIntegrationDualStack: under ip-family ipv4,ipv6 the CCM makes an
// InternalIP and an ExternalIP of each family.
func TestIntegrationDualStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a simulated vCenter")
	}
	_, env := startCloud(t, cloud.Options{IPFamily: "ipv4,ipv6", Zones: []string{"z1"}, HostsPerCluster: 1})
	in := must[instanceAnswer](t, env, "instance create", `{"name":"d1","ipFamilies":["IPv6","IPv4"]}`).Instance
	var types []string
	for _, a := range in.Addresses {
		fam := "4"
		if strings.Contains(a.Address, ":") {
			fam = "6"
		}
		types = append(types, a.Type+fam)
	}
	if want := []string{"Hostname4", "InternalIP4", "ExternalIP4", "InternalIP6", "ExternalIP6"}; !slices.Equal(types, want) {
		t.Errorf("a dual-stack instance's addresses %v: types %v, want %v", in.Addresses, types, want)
	}
	if in.Zone != "z1" {
		t.Errorf("zone %q, want z1", in.Zone)
	}
}

func equalInstances(a, b driverproto.Instance) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
