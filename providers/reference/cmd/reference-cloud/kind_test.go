package main

import (
	"reflect"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

func TestMachineFromInspect(t *testing.T) {
	ip := func(a string) cloudapi.Address { return cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: a} }
	host := cloudapi.Address{Type: cloudapi.AddressHostname, Address: "ccmc-1-worker"}
	tests := []struct {
		name, json string
		want       []cloudapi.Address
		wantErr    bool
	}{
		{"IPv4", `{"ccmc-1":{"IPAddress":"172.18.0.3","GlobalIPv6Address":""}}`, []cloudapi.Address{ip("172.18.0.3"), host}, false},
		{"dual-stack, IPv4 first", `{"ccmc-1":{"IPAddress":"172.18.0.3","GlobalIPv6Address":"fc00:f853:ccd:e793::3"}}`,
			[]cloudapi.Address{ip("172.18.0.3"), ip("fc00:f853:ccd:e793::3"), host}, false},
		{"IPv6 only", `{"ccmc-1":{"IPAddress":"","GlobalIPv6Address":"fc00::3"}}`, []cloudapi.Address{ip("fc00::3"), host}, false},
		{"no address", `{"ccmc-1":{"IPAddress":"","GlobalIPv6Address":""}}`, nil, true},
		{"not JSON", `<no value>`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := machineFromInspect("ccmc-1-worker", tt.json)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && (m.Name != "ccmc-1-worker" || !reflect.DeepEqual(m.Addresses, tt.want)) {
				t.Errorf("got %+v, want addresses %+v", m, tt.want)
			}
		})
	}
}
