package driver

import (
	"net"
	"reflect"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
)

func TestAddresses(t *testing.T) {
	const internalNet, externalNet = "VM Network", "External Network"
	byName := addressRules{families: []string{"ipv4"}, internalNetwork: internalNet, externalNetwork: externalNet}
	dual := byName
	dual.families = []string{"ipv4", "ipv6"}
	v6first := byName
	v6first.families = []string{"ipv6", "ipv4"}
	plain := addressRules{families: []string{"ipv4"}}
	mustCIDR := func(s string) *net.IPNet {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	subnets := plain
	subnets.internalSubnets = []*net.IPNet{mustCIDR("192.168.0.0/16"), mustCIDR("10.0.0.0/8")}
	subnets.externalSubnets = []*net.IPNet{mustCIDR("203.0.113.0/24")}
	excluded := plain
	excluded.excludeInternal = []*net.IPNet{mustCIDR("10.0.0.0/8")}

	two := func(internal, external []string) []guestNIC {
		return []guestNIC{{network: internalNet, deviceConfigID: 4000, ips: internal}, {network: externalNet, deviceConfigID: 4001, ips: external}}
	}
	for _, tc := range []struct {
		name  string
		rules addressRules
		host  string
		nics  []guestNIC
		want  []driverproto.Address
	}{
		{name: "a new node: one address on each network", rules: byName, host: "n1",
			nics: two([]string{"10.64.0.2"}, []string{"203.0.113.10"}),
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.64.0.2"}, {Type: "ExternalIP", Address: "203.0.113.10"}}},
		{name: "only the first address of a family on a network", rules: byName, host: "n1",
			nics: two([]string{"10.64.0.2", "10.64.0.3"}, []string{"203.0.113.10", "198.51.100.1"}),
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.64.0.2"}, {Type: "ExternalIP", Address: "203.0.113.10"}}},
		{name: "loopback and link-local are no addresses", rules: byName, host: "n1",
			nics: two([]string{"127.66.0.1", "169.254.1.1", "0.0.0.0", "10.64.0.2"}, []string{"fe80::1"}),
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.64.0.2"}}},
		{name: "IPv6 is no address of an ipv4 cloud config", rules: byName, host: "n1",
			nics: two([]string{"fd00:64::2", "10.64.0.2"}, []string{"2001:db8::1"}),
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.64.0.2"}}},
		{name: "dual-stack, in the order of ip-family", rules: dual, host: "n1",
			nics: two([]string{"fd00:64::2", "10.64.0.2"}, []string{"2001:db8::1", "203.0.113.10"}),
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.64.0.2"}, {Type: "ExternalIP", Address: "203.0.113.10"}, {Type: "InternalIP", Address: "fd00:64::2"}, {Type: "ExternalIP", Address: "2001:db8::1"}}},
		{name: "dual-stack, IPv6 first", rules: v6first, host: "n1",
			nics: two([]string{"10.64.0.2", "fd00:64::2"}, nil),
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "fd00:64::2"}, {Type: "InternalIP", Address: "10.64.0.2"}}},
		{name: "only an external address", rules: byName,
			nics: two(nil, []string{"203.0.113.250"}),
			want: []driverproto.Address{{Type: "ExternalIP", Address: "203.0.113.250"}}},
		{name: "on neither network: the first address is both", rules: byName, host: "n1",
			nics: []guestNIC{{network: "Other", ips: []string{"10.1.1.1", "10.1.1.2"}}},
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.1.1.1"}, {Type: "ExternalIP", Address: "10.1.1.1"}}},
		{name: "without network names: the first address is both", rules: plain, host: "n1",
			nics: two([]string{"10.64.0.2"}, []string{"203.0.113.10"}),
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.64.0.2"}, {Type: "ExternalIP", Address: "10.64.0.2"}}},
		{name: "a NIC that is no virtual NIC does not count", rules: plain, host: "n1",
			nics: []guestNIC{{deviceConfigID: -1, ips: []string{"10.9.9.9"}}, {deviceConfigID: 4000, ips: []string{"10.64.0.2"}}},
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.64.0.2"}, {Type: "ExternalIP", Address: "10.64.0.2"}}},
		{name: "subnets in their order, then the first address for the other type", rules: subnets, host: "n1",
			nics: []guestNIC{{ips: []string{"10.0.0.1", "192.168.1.1", "172.16.0.1"}}},
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "192.168.1.1"}}},
		{name: "an excluded subnet never gives the type", rules: excluded, host: "n1",
			nics: []guestNIC{{ips: []string{"10.0.0.1", "172.16.0.1"}}},
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "172.16.0.1"}, {Type: "ExternalIP", Address: "10.0.0.1"}}},
		{name: "a family the CCM does not know matches nothing", rules: addressRules{families: []string{" ipv6"}}, host: "n1",
			nics: []guestNIC{{ips: []string{"fd00::1"}}},
			want: []driverproto.Address{{Type: "Hostname", Address: "n1"}}},
		{name: "no guest information", rules: byName, want: []driverproto.Address{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rules.addresses(tc.host, tc.nics)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("addresses:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestInstanceType(t *testing.T) {
	for _, tc := range []struct {
		cpu, mem int32
		guest    string
		want     string
	}{
		{2, 4096, "otherLinux64Guest", "vsphere-vm.cpu-2.mem-4gb.os-linux"},
		{1, 1536, "otherLinuxGuest", "vsphere-vm.cpu-1.mem-1gb.os-linux"},
		{4, 512, "windows9Guest", "vsphere-vm.cpu-4.mem-0gb.os-unknown"},
	} {
		if got := instanceType(tc.cpu, tc.mem, tc.guest); got != tc.want {
			t.Errorf("instanceType(%d, %d, %s) = %s, want %s", tc.cpu, tc.mem, tc.guest, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in      string
		cpu     int32
		mem     int32
		wantErr bool
	}{
		{in: "vsphere-vm.cpu-2.mem-4gb.os-linux", cpu: 2, mem: 4096},
		{in: "vsphere-vm.cpu-16.mem-64gb.os-linux", cpu: 16, mem: 65536},
		{in: "vsphere-vm.cpu-2.mem-4gb.os-windows", wantErr: true},
		{in: "vsphere-vm.cpu-0.mem-4gb.os-linux", wantErr: true},
		{in: "m5.large", wantErr: true},
	} {
		cpu, mem, guest, err := parseInstanceType(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("parseInstanceType(%s): got %d CPUs, %d MB, want an error", tc.in, cpu, mem)
			}
			continue
		}
		if err != nil || cpu != tc.cpu || mem != tc.mem || instanceType(cpu, mem, guest) != tc.in {
			t.Errorf("parseInstanceType(%s) = %d, %d, %s, %v; want %d, %d and the same type back", tc.in, cpu, mem, guest, err, tc.cpu, tc.mem)
		}
	}
}

func TestProviderID(t *testing.T) {
	if got, want := providerID(" 4223B2C1-0BB5-D7A8-4D1F-7F1CB6D7C0E2 "), "vsphere://4223b2c1-0bb5-d7a8-4d1f-7f1cb6d7c0e2"; got != want {
		t.Errorf("providerID = %s, want %s", got, want)
	}
}

func TestVerbTableMatchesVerbNames(t *testing.T) {
	table := verbTable()
	if len(table) != len(verbNames()) {
		t.Errorf("verbTable has %d verbs, verbNames lists %d", len(table), len(verbNames()))
	}
	for _, v := range verbNames() {
		if table[v].fn == nil {
			t.Errorf("verb %q is listed but not implemented", v)
		}
	}
	without := offered(func(string) string { return "" })
	with := offered(func(k string) string {
		if k == ControlEnv {
			return "/run/vsphere-control.sock"
		}
		return ""
	})
	if len(with) != len(verbNames()) {
		t.Errorf("with a control socket, info offers %v, want every verb", with)
	}
	for _, v := range without {
		if table[v].simulator {
			t.Errorf("without a control socket, info offers the simulator-only verb %q", v)
		}
	}
	if len(without) != 7 {
		t.Errorf("without a control socket, info offers %v, want the 7 real-cloud verbs", without)
	}
}
