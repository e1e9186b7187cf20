package driver

import (
	"testing"

	"github.com/ccm-conformance/ccm-conformance/driversdk"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"slices"
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

// The reference driver implements every verb of the protocol, in the
// SDK's order.
func TestVerbTableCoversTheProtocol(t *testing.T) {
	var got []driversdk.Verb
	for _, v := range verbTable() {
		got = append(got, v.verb)
	}
	if want := driversdk.AllVerbs[1:]; !slices.Equal(got, want) {
		t.Errorf("verbTable lists %v, want every verb but info: %v", got, want)
	}
}
