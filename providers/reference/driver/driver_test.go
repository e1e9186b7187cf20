package driver

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// The driver must find a Service's load balancer under the name the CCM
// gave it, without linking the CCM: check the two rules agree.
func TestLoadBalancerNameMatchesTheCCM(t *testing.T) {
	for _, uid := range []string{
		"1b4e28ba-2fa1-11d2-883f-0016d3cca427",
		"short",
		"",
		"0123456789abcdef0123456789abcdef0123",
		"a-b-c-d",
	} {
		svc := &v1.Service{}
		svc.UID = types.UID(uid)
		if got, want := loadBalancerName(uid), cloudprovider.DefaultLoadBalancerName(svc); got != want {
			t.Errorf("loadBalancerName(%q) = %q, cloudprovider.DefaultLoadBalancerName = %q", uid, got, want)
		}
	}
}

func TestVerbTableMatchesVerbNames(t *testing.T) {
	table := verbTable()
	if len(table) != len(verbNames()) {
		t.Errorf("verbTable has %d verbs, verbNames lists %d", len(table), len(verbNames()))
	}
	for _, v := range verbNames() {
		if table[v] == nil {
			t.Errorf("verb %q is listed but not implemented", v)
		}
	}
}
