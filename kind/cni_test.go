package kind

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestCNIConfig(t *testing.T) {
	data, err := cniConfig([]string{"10.244.1.0/24", "fd00:10:244:1::/64"})
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		CNIVersion string
		Name       string
		Plugins    []struct {
			Type   string
			IPMasq bool
			IPAM   struct {
				Type   string
				Ranges [][]struct{ Subnet string }
				Routes []struct{ Dst string }
			}
		}
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	if len(conf.Plugins) != 2 || conf.Plugins[0].Type != "ptp" || conf.Plugins[1].Type != "portmap" {
		t.Fatalf("plugins %+v", conf.Plugins)
	}
	ipam := conf.Plugins[0].IPAM
	if ipam.Type != "host-local" || len(ipam.Ranges) != 2 || ipam.Ranges[0][0].Subnet != "10.244.1.0/24" || ipam.Ranges[1][0].Subnet != "fd00:10:244:1::/64" {
		t.Errorf("ipam %+v", ipam)
	}
	if len(ipam.Routes) != 2 || ipam.Routes[0].Dst != "0.0.0.0/0" || ipam.Routes[1].Dst != "::/0" {
		t.Errorf("routes %+v", ipam.Routes)
	}
	if conf.Plugins[0].IPMasq {
		t.Error("pod traffic is masqueraded")
	}
	for _, bad := range [][]string{nil, {"10.244.1.0"}} {
		if _, err := cniConfig(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestNodeRoutes(t *testing.T) {
	nodes := []routedNode{
		{Name: "cp", PodCIDRs: []string{"10.244.0.0/24", "fd00:10:244::/64"}, IPs: []string{"172.18.0.2", "fc00:f853:ccd:e793::2"}},
		{Name: "w1", PodCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, IPs: []string{"172.18.0.3", "fc00:f853:ccd:e793::3"}},
	}
	got, err := nodeRoutes(nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]string{
		"cp": {{"ip", "-4", "route", "replace", "10.244.1.0/24", "via", "172.18.0.3"}, {"ip", "-6", "route", "replace", "fd00:10:244:1::/64", "via", "fc00:f853:ccd:e793::3"}},
		"w1": {{"ip", "-4", "route", "replace", "10.244.0.0/24", "via", "172.18.0.2"}, {"ip", "-6", "route", "replace", "fd00:10:244::/64", "via", "fc00:f853:ccd:e793::2"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("routes:\n got %v\nwant %v", got, want)
	}
	nodes[1].IPs = []string{"172.18.0.3"}
	if _, err := nodeRoutes(nodes); err == nil {
		t.Error("a node without an IPv6 address got an IPv6 route")
	}
}
