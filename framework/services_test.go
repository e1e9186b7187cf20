package framework

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// A spec that needs a load balancer backend runs when one node can be one,
// and otherwise skips with a reason that names the nodes and why each is
// left out.
func TestNoBackendsReason(t *testing.T) {
	now := metav1.Now()
	node := func(name string, mutate func(*corev1.Node)) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if mutate != nil {
			mutate(&n)
		}
		return n
	}
	excluded := func(v string) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Labels = map[string]string{corev1.LabelNodeExcludeBalancers: v} }
	}
	notReady := func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	}
	tests := []struct {
		name  string
		nodes []corev1.Node
		want  []string // all in the reason; nil: the spec runs
	}{
		{name: "no nodes", want: []string{"the cluster has no nodes"}},
		{name: "one eligible node", nodes: []corev1.Node{node("n1", nil)}},
		{name: "a NotReady node is still a backend", nodes: []corev1.Node{node("n1", notReady)}},
		{name: "one of two excluded", nodes: []corev1.Node{node("n1", excluded("true")), node("n2", nil)}},
		{name: "excluded false is a backend", nodes: []corev1.Node{node("n1", excluded("false"))}},
		{
			name:  "every node left out",
			nodes: []corev1.Node{node("n1", excluded("true")), node("n2", excluded("yes")), node("n3", func(n *corev1.Node) { n.DeletionTimestamp = &now })},
			want: []string{
				"none of the cluster's 3 nodes",
				`n1 labelled node.kubernetes.io/exclude-from-external-load-balancers="true"`,
				`n2 labelled node.kubernetes.io/exclude-from-external-load-balancers="yes"`,
				"n3 being deleted",
			},
		},
		{
			name: "many nodes left out",
			nodes: []corev1.Node{
				node("n1", excluded("1")), node("n2", excluded("1")), node("n3", excluded("1")),
				node("n4", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: ToBeDeletedTaint}} }),
				node("n5", excluded("1")),
			},
			want: []string{"none of the cluster's 5 nodes", "n3 labelled", "2 more"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NoBackendsReason(tt.nodes)
			if tt.want == nil {
				if got != "" {
					t.Errorf("reason %q, want none: the spec must run", got)
				}
				return
			}
			if got == "" {
				t.Fatal("no reason: the spec would run without a backend")
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("reason %q does not say %q", got, w)
				}
			}
		})
	}
}

// TestLoadBalancerServiceCarriesTheProfilesAnnotations: every Service a
// spec makes from the framework's template carries the profile's
// loadBalancer.serviceAnnotations, as a copy that a spec may change
// without touching the profile or the next Service.
func TestLoadBalancerServiceCarriesTheProfilesAnnotations(t *testing.T) {
	const nlb = "service.beta.kubernetes.io/aws-load-balancer-type"
	for _, tt := range []struct {
		name        string
		annotations map[string]string
	}{
		{"none", nil},
		{"one", map[string]string{nlb: "nlb"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &Framework{Profile: &profile.Profile{LoadBalancer: profile.LoadBalancerOptions{ServiceAnnotations: tt.annotations}}}
			svc := f.LoadBalancerService("ns", "web")
			if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Namespace != "ns" || svc.Name != "web" {
				t.Fatalf("template = %+v", svc)
			}
			if !maps.Equal(svc.Annotations, tt.annotations) {
				t.Errorf("annotations = %v, want %v", svc.Annotations, tt.annotations)
			}
			if len(tt.annotations) > 0 {
				svc.Annotations[nlb] = "changed"
				if f.Profile.LoadBalancer.ServiceAnnotations[nlb] != "nlb" || f.LoadBalancerService("ns", "b").Annotations[nlb] == "changed" {
					t.Error("a spec's change to one Service's annotations reached the profile")
				}
			}
		})
	}
}
