package cloud

import (
	"errors"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// newTestCloud serves a simulated cloud (without a data path) and returns
// a provider with the given defects, an admin client of the same cloud,
// and the cloud's endpoint.
func newTestCloud(t *testing.T, defects ...Defect) (*Cloud, *cloudapi.Client, string) {
	t.Helper()
	srv := cloudapi.NewServer(cloudapi.Options{DisableDataPath: true})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	admin, err := cloudapi.NewClient(ts.URL, "admin")
	if err != nil {
		t.Fatal(err)
	}
	set := Defects{}
	for _, d := range defects {
		set[d] = true
	}
	c, err := New(strings.NewReader("endpoint: "+ts.URL), Options{Identity: "ccm-test", Defects: set})
	if err != nil {
		t.Fatal(err)
	}
	return c, admin, ts.URL
}

func mustCreate(t *testing.T, admin *cloudapi.Client, req cloudapi.CreateInstanceRequest) *cloudapi.Instance {
	t.Helper()
	in, err := admin.CreateInstance(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		config  string // "" means no --cloud-config
		env     string
		wantErr string
	}{
		{name: "endpoint in the config", config: "endpoint: unix:///tmp/cloud.sock\n"},
		{name: "endpoint from the environment", env: "tcp://127.0.0.1:1234"},
		{name: "config without endpoint falls back to the environment", config: "{}\n", env: "unix:///tmp/x.sock"},
		{name: "no endpoint at all", wantErr: "no cloud API endpoint"},
		{name: "bad endpoint", config: "endpoint: /tmp/cloud.sock\n", wantErr: "endpoint"},
		{name: "unknown field", config: "endpoint: unix:///x\nregion: r\n", wantErr: "region"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EndpointEnv, tt.env)
			var config io.Reader // nil: no --cloud-config
			if tt.config != "" {
				config = strings.NewReader(tt.config)
			}
			_, err := New(config, *NewOptions())
			if tt.wantErr == "" && err != nil {
				t.Errorf("New: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("New: got error %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestDefectsFlag(t *testing.T) {
	tests := []struct {
		values  []string
		want    string
		wantErr bool
	}{
		{values: []string{""}, want: ""},
		{values: []string{"wrong-zone"}, want: "wrong-zone"},
		{values: []string{"no-shutdown, wrong-zone", "keep-routes"}, want: "keep-routes,no-shutdown,wrong-zone"},
		{values: []string{"wrong-zone,not-a-defect"}, wantErr: true},
	}
	for _, tt := range tests {
		var d Defects
		var err error
		for _, v := range tt.values {
			if err = d.Set(v); err != nil {
				break
			}
		}
		if (err != nil) != tt.wantErr {
			t.Errorf("Set(%q) error = %v, wantErr %v", tt.values, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && d.String() != tt.want {
			t.Errorf("Set(%q) gave %q, want %q", tt.values, d.String(), tt.want)
		}
	}
	// Every known defect is accepted, and is documented in the flag help.
	opts := NewOptions()
	for _, d := range KnownDefects() {
		if err := opts.Defects.Set(string(d)); err != nil {
			t.Errorf("known defect %s rejected: %v", d, err)
		}
	}
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func TestInstanceExistsAndShutdown(t *testing.T) {
	tests := []struct {
		name            string
		defects         []Defect
		node            *v1.Node
		zone            string // of the instance n1
		stop            bool
		fault           bool
		wantExists      bool
		wantExistsErr   bool
		wantShutdown    bool
		wantShutdownErr bool
	}{
		{name: "by name", node: node("n1", ""), wantExists: true},
		{name: "by providerID", node: node("other-name", "reference://zone-a/i-0001"), wantExists: true},
		{name: "stopped", node: node("n1", ""), stop: true, wantExists: true, wantShutdown: true},
		{name: "unknown name", node: node("n9", ""), wantShutdownErr: true},
		{name: "unknown providerID", node: node("n1", "reference://zone-a/i-0009"), wantShutdownErr: true},
		{name: "foreign providerID", node: node("n1", "kind://n1"), wantExistsErr: true, wantShutdownErr: true},
		{name: "cloud error", node: node("n1", ""), fault: true, wantExistsErr: true, wantShutdownErr: true},
		{name: "instance-exists-always", defects: []Defect{DefectInstanceExistsAlways}, node: node("n9", ""), wantExists: true, wantShutdownErr: true},
		{name: "no-shutdown", defects: []Defect{DefectNoShutdown}, node: node("n1", ""), stop: true, wantExists: true},
		{name: "stopped-instance-gone", defects: []Defect{DefectStoppedInstanceGone}, node: node("n1", ""), stop: true, wantShutdown: true},
		{name: "stopped-instance-gone, running", defects: []Defect{DefectStoppedInstanceGone}, node: node("n1", ""), wantExists: true},
		{name: "instances-gone-in-zone-c", defects: []Defect{DefectZoneCGone}, node: node("n1", ""), zone: "zone-c"},
		{name: "instances-gone-in-zone-c, zone-a", defects: []Defect{DefectZoneCGone}, node: node("n1", ""), zone: "zone-a", wantExists: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, admin, _ := newTestCloud(t, tt.defects...)
			ctx := t.Context()
			in := mustCreate(t, admin, cloudapi.CreateInstanceRequest{Name: "n1", Zone: tt.zone})
			if tt.stop {
				if _, err := admin.StopInstance(ctx, in.ID); err != nil {
					t.Fatal(err)
				}
			}
			if tt.fault {
				if _, err := admin.AddFault(ctx, cloudapi.Fault{Operation: "*", ErrorRate: 1}); err != nil {
					t.Fatal(err)
				}
			}
			i, _ := c.InstancesV2()

			exists, err := i.InstanceExists(ctx, tt.node)
			if (err != nil) != tt.wantExistsErr || exists != tt.wantExists {
				t.Errorf("InstanceExists = %v, %v; want %v, error %v", exists, err, tt.wantExists, tt.wantExistsErr)
			}
			// A cloud that errs must not look like a missing instance:
			// the lifecycle controller would delete the node.
			if tt.fault && errors.Is(err, cloudprovider.InstanceNotFound) {
				t.Errorf("InstanceExists: a cloud error came back as InstanceNotFound: %v", err)
			}

			shutdown, err := i.InstanceShutdown(ctx, tt.node)
			if (err != nil) != tt.wantShutdownErr || shutdown != tt.wantShutdown {
				t.Errorf("InstanceShutdown = %v, %v; want %v, error %v", shutdown, err, tt.wantShutdown, tt.wantShutdownErr)
			}
		})
	}
}

func TestInstanceMetadata(t *testing.T) {
	dualStack := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "127.64.0.1"}, {Type: v1.NodeInternalIP, Address: "fd00:64::1"},
		{Type: v1.NodeExternalIP, Address: "203.0.113.1"}, {Type: v1.NodeExternalIP, Address: "2001:db8::1"},
		{Type: v1.NodeHostName, Address: "n1"},
	}
	changed := []cloudapi.Address{{Type: cloudapi.AddressInternalIP, Address: "127.64.9.9"}}
	tests := []struct {
		name    string
		defects []Defect
		node    *v1.Node
		// change replaces the instance's addresses after the first call;
		// want is what the second call returns.
		change []cloudapi.Address
		want   cloudprovider.InstanceMetadata
	}{
		{
			name: "by name",
			node: node("n1", ""),
			want: cloudprovider.InstanceMetadata{ProviderID: "reference://zone-a/i-0001", InstanceType: "ref.small", NodeAddresses: dualStack, Zone: "zone-a", Region: "region-1"},
		},
		{
			name: "by providerID, addresses follow the cloud",
			node: node("n1", "reference://zone-a/i-0001"), change: changed,
			want: cloudprovider.InstanceMetadata{ProviderID: "reference://zone-a/i-0001", InstanceType: "ref.small",
				NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.64.9.9"}}, Zone: "zone-a", Region: "region-1"},
		},
		{
			name: "wrong-zone", defects: []Defect{DefectWrongZone},
			node: node("n1", ""),
			want: cloudprovider.InstanceMetadata{ProviderID: "reference://zone-a/i-0001", InstanceType: "ref.small", NodeAddresses: dualStack, Zone: "zone-a-wrong", Region: "region-1"},
		},
		{
			name: "no-ipv6", defects: []Defect{DefectNoIPv6},
			node: node("n1", ""),
			want: cloudprovider.InstanceMetadata{ProviderID: "reference://zone-a/i-0001", InstanceType: "ref.small",
				NodeAddresses: []v1.NodeAddress{dualStack[0], dualStack[2], dualStack[4]}, Zone: "zone-a", Region: "region-1"},
		},
		{
			name: "stale-addresses", defects: []Defect{DefectStaleAddresses},
			node: node("n1", ""), change: changed,
			want: cloudprovider.InstanceMetadata{ProviderID: "reference://zone-a/i-0001", InstanceType: "ref.small", NodeAddresses: dualStack, Zone: "zone-a", Region: "region-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, admin, _ := newTestCloud(t, tt.defects...)
			ctx := t.Context()
			in := mustCreate(t, admin, cloudapi.CreateInstanceRequest{Name: "n1", IPFamilies: []string{cloudapi.IPv4, cloudapi.IPv6}})
			i, _ := c.InstancesV2()
			if _, err := i.InstanceMetadata(ctx, tt.node); err != nil {
				t.Fatal(err)
			}
			if tt.change != nil {
				if _, err := admin.SetAddresses(ctx, in.ID, tt.change); err != nil {
					t.Fatal(err)
				}
			}
			got, err := i.InstanceMetadata(ctx, tt.node)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("InstanceMetadata =\n %+v\nwant\n %+v", *got, tt.want)
			}
		})
	}

	t.Run("missing instance", func(t *testing.T) {
		c, _, _ := newTestCloud(t)
		i, _ := c.InstancesV2()
		if _, err := i.InstanceMetadata(t.Context(), node("n9", "")); !errors.Is(err, cloudprovider.InstanceNotFound) {
			t.Errorf("InstanceMetadata of a missing instance: got %v, want InstanceNotFound", err)
		}
	})
}

func TestZones(t *testing.T) {
	for _, defects := range [][]Defect{nil, {DefectWrongZone}} {
		c, admin, _ := newTestCloud(t, defects...)
		ctx := t.Context()
		mustCreate(t, admin, cloudapi.CreateInstanceRequest{Name: "n1", Zone: "zone-q"})
		want := cloudprovider.Zone{FailureDomain: "zone-q", Region: "region-1"}
		if len(defects) > 0 {
			want.FailureDomain += "-wrong"
		}
		z, _ := c.Zones()
		if got, err := z.GetZoneByNodeName(ctx, types.NodeName("n1")); err != nil || got != want {
			t.Errorf("defects %v: GetZoneByNodeName = %+v, %v; want %+v", defects, got, err, want)
		}
		if got, err := z.GetZoneByProviderID(ctx, "reference://zone-q/i-0001"); err != nil || got != want {
			t.Errorf("defects %v: GetZoneByProviderID = %+v, %v; want %+v", defects, got, err, want)
		}
		if _, err := z.GetZone(ctx); !errors.Is(err, cloudprovider.NotImplemented) {
			t.Errorf("GetZone: got %v, want NotImplemented", err)
		}
	}
}

func TestCallerIdentity(t *testing.T) {
	c, admin, _ := newTestCloud(t)
	ctx := t.Context()
	mustCreate(t, admin, cloudapi.CreateInstanceRequest{Name: "n1"})
	i, _ := c.InstancesV2()
	if _, err := i.InstanceExists(ctx, node("n1", "")); err != nil {
		t.Fatal(err)
	}
	calls, err := admin.Calls(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"instance.create/admin", "instance.list/ccm-test"}
	var got []string
	for _, call := range calls {
		got = append(got, call.Operation+"/"+call.Caller)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}
