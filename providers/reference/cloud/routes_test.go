package cloud

import (
	"reflect"
	"testing"

	cloudprovider "k8s.io/cloud-provider"
)

func TestNextBlock(t *testing.T) {
	tests := []struct{ in, want string }{
		{"10.244.1.0/24", "10.244.2.0/24"},
		{"10.244.255.0/24", "10.245.0.0/24"},
		{"10.244.1.7/24", "10.244.2.0/24"},
		{"10.0.0.0/8", "11.0.0.0/8"},
		{"255.255.255.0/24", "0.0.0.0/24"},
		{"fd00:10:244:1::/64", "fd00:10:244:2::/64"},
		{"fd00::/127", "fd00::2/127"},
	}
	for _, tt := range tests {
		if got, err := nextBlock(tt.in); err != nil || got != tt.want {
			t.Errorf("nextBlock(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := nextBlock("10.0.0.0"); err == nil {
		t.Error("nextBlock accepted a CIDR without a length")
	}
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name      string
		defects   []Defect
		wantCIDR  string // of the created route
		wantAfter int    // routes left after DeleteRoute
	}{
		{name: "correct", wantCIDR: "10.244.1.0/24", wantAfter: 0},
		{name: "wrong-route-cidr", defects: []Defect{DefectWrongRouteCIDR}, wantCIDR: "10.244.129.0/24", wantAfter: 0},
		{name: "keep-routes", defects: []Defect{DefectKeepRoutes}, wantCIDR: "10.244.1.0/24", wantAfter: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := newTestCloud(t, tt.defects...)
			ctx := t.Context()
			r, _ := c.Routes()
			if err := r.CreateRoute(ctx, "cluster", "node-uid", &cloudprovider.Route{TargetNode: "n1", DestinationCIDR: "10.244.1.0/24"}); err != nil {
				t.Fatal(err)
			}
			if tt.name == "wrong-route-cidr" {
				// Asked again, it finds its own wrong route and says yes.
				if err := r.CreateRoute(ctx, "cluster", "node-uid", &cloudprovider.Route{TargetNode: "n1", DestinationCIDR: "10.244.1.0/24"}); err != nil {
					t.Errorf("CreateRoute again: %v", err)
				}
			}
			list, err := r.ListRoutes(ctx, "cluster")
			if err != nil {
				t.Fatal(err)
			}
			want := []*cloudprovider.Route{{Name: "r-0001", TargetNode: "n1", DestinationCIDR: tt.wantCIDR}}
			if !reflect.DeepEqual(list, want) {
				t.Errorf("ListRoutes = %+v, want %+v", list, want)
			}
			for range 2 { // deleting twice is fine
				if err := r.DeleteRoute(ctx, "cluster", list[0]); err != nil {
					t.Errorf("DeleteRoute: %v", err)
				}
			}
			if list, err := r.ListRoutes(ctx, "cluster"); err != nil || len(list) != tt.wantAfter {
				t.Errorf("after delete: ListRoutes = %+v, %v; want %d routes", list, err, tt.wantAfter)
			}
		})
	}
}
