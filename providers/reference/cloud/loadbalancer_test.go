package cloud

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

func service(mutate func(*v1.Service)) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427"},
		Spec: v1.ServiceSpec{
			Type:  v1.ServiceTypeLoadBalancer,
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}},
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func nodes(names ...string) []*v1.Node {
	var out []*v1.Node
	for _, n := range names {
		out = append(out, node(n, ""))
	}
	return out
}

func TestEnsureLoadBalancer(t *testing.T) {
	tests := []struct {
		name    string
		defects []Defect
		service *v1.Service
		nodes   []*v1.Node
		// cluster is every Node, as ignore-autoscaler-taint reads them.
		cluster []v1.Node
		want    cloudapi.LoadBalancerSpec
		wantErr string
	}{
		{
			name:    "plain TCP",
			service: service(nil),
			nodes:   nodes("n2", "n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1", "n2"}, SourceRanges: []string{}},
		},
		{
			name: "mixed protocols, source ranges, local traffic",
			service: service(func(s *v1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053})
				s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "127.0.0.1/32"}
				s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
				s.Spec.HealthCheckNodePort = 32000
			}),
			nodes: nodes("n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports:        []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}, {Protocol: "UDP", Port: 53, NodePort: 30053}},
				Backends:     []string{"n1"},
				SourceRanges: []string{"10.0.0.0/8", "127.0.0.1/32"}, HealthCheckNodePort: 32000},
		},
		{
			name: "source ranges from the annotation",
			service: service(func(s *v1.Service) {
				s.Annotations = map[string]string{v1.AnnotationLoadBalancerSourceRangesKey: "192.168.0.0/16, 127.0.0.0/8"}
			}),
			nodes: nodes("n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1"},
				SourceRanges: []string{"127.0.0.0/8", "192.168.0.0/16"}},
		},
		{
			name:    "cluster traffic policy has no health check",
			service: service(func(s *v1.Service) { s.Spec.HealthCheckNodePort = 32000 }),
			nodes:   nodes("n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1"}, SourceRanges: []string{}},
		},
		{
			name:    "backends-all-instances",
			defects: []Defect{DefectBackendsAllInstances},
			service: service(nil),
			nodes:   nodes("n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1", "n2", "n3"}, SourceRanges: []string{}},
		},
		{
			name:    "NotReady nodes stay backends",
			service: service(nil),
			nodes:   []*v1.Node{readyNode("n1", true), readyNode("n2", false)},
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1", "n2"}, SourceRanges: []string{}},
		},
		{
			name:    "drop-notready-backends",
			defects: []Defect{DefectDropNotReadyBackends},
			service: service(nil),
			nodes:   []*v1.Node{readyNode("n1", true), readyNode("n2", false)},
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1"}, SourceRanges: []string{}},
		},
		{
			name:    "ignore-autoscaler-taint",
			defects: []Defect{DefectIgnoreAutoscalerTaint},
			service: service(nil),
			nodes:   nodes("n1"),
			cluster: []v1.Node{*readyNode("n1", true), *readyNode("n2", true), {
				ObjectMeta: metav1.ObjectMeta{Name: "n3"},
				Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "ToBeDeletedByClusterAutoscaler", Effect: v1.TaintEffectNoSchedule}}},
			}},
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1", "n3"}, SourceRanges: []string{}},
		},
		{
			name:    "ignore-source-ranges",
			defects: []Defect{DefectIgnoreSourceRanges},
			service: service(func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }),
			nodes:   nodes("n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1"}, SourceRanges: []string{}},
		},
		{
			name:    "session affinity ClientIP",
			service: service(func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP }),
			nodes:   nodes("n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1"}, SourceRanges: []string{},
				SessionAffinity: cloudapi.SessionAffinityClientIP},
		},
		{
			name:    "session affinity None",
			service: service(func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityNone }),
			nodes:   nodes("n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1"}, SourceRanges: []string{}},
		},
		{
			name:    "ignore-session-affinity",
			defects: []Defect{DefectIgnoreSessionAffinity},
			service: service(func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP }),
			nodes:   nodes("n1"),
			want: cloudapi.LoadBalancerSpec{ServiceNamespace: "ns", ServiceName: "web",
				Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1"}, SourceRanges: []string{}},
		},
		{
			name:    "SCTP is rejected",
			service: service(func(s *v1.Service) { s.Spec.Ports[0].Protocol = v1.ProtocolSCTP }),
			nodes:   nodes("n1"),
			wantErr: "protocol SCTP is not supported",
		},
		{
			name:    "bad source range",
			service: service(func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0"} }),
			nodes:   nodes("n1"),
			wantErr: "LoadBalancerSourceRanges",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, admin, _ := newTestCloud(t, tt.defects...)
			ctx := t.Context()
			for _, n := range []string{"n1", "n2", "n3"} {
				mustCreate(t, admin, cloudapi.CreateInstanceRequest{Name: n})
			}
			if tt.cluster != nil {
				c.loadBalancers.listNodes = func(context.Context) ([]v1.Node, error) { return tt.cluster, nil }
			}
			lbs, _ := c.LoadBalancer()

			status, err := lbs.EnsureLoadBalancer(ctx, "cluster", tt.service, tt.nodes)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("EnsureLoadBalancer: got %v, want an error mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name := cloudprovider.DefaultLoadBalancerName(tt.service)
			lb, err := admin.GetLoadBalancer(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(lb.LoadBalancerSpec, tt.want) {
				t.Errorf("cloud load balancer spec =\n %+v\nwant\n %+v", lb.LoadBalancerSpec, tt.want)
			}
			wantStatus := &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: lb.IngressIP}}}
			if lb.IngressIP == "" || !reflect.DeepEqual(status, wantStatus) {
				t.Errorf("status = %+v, want %+v", status, wantStatus)
			}
		})
	}
}

func TestLoadBalancerLifecycle(t *testing.T) {
	for _, keep := range []bool{false, true} {
		var defects []Defect
		if keep {
			defects = append(defects, DefectKeepLBOnDelete)
		}
		c, admin, _ := newTestCloud(t, defects...)
		ctx := t.Context()
		lbs, _ := c.LoadBalancer()
		svc := service(nil)

		if got := lbs.GetLoadBalancerName(ctx, "cluster", svc); got != "a1b4e28ba2fa111d2883f0016d3cca42" {
			t.Errorf("GetLoadBalancerName = %q", got)
		}
		if _, exists, err := lbs.GetLoadBalancer(ctx, "cluster", svc); err != nil || exists {
			t.Errorf("before ensure: GetLoadBalancer exists=%v, %v", exists, err)
		}
		first, err := lbs.EnsureLoadBalancer(ctx, "cluster", svc, nodes("n1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := lbs.UpdateLoadBalancer(ctx, "cluster", svc, nodes("n1", "n2")); err != nil {
			t.Fatal(err)
		}
		status, exists, err := lbs.GetLoadBalancer(ctx, "cluster", svc)
		if err != nil || !exists || !reflect.DeepEqual(status, first) {
			t.Errorf("after update: GetLoadBalancer = %+v, %v, %v; want the first status %+v", status, exists, err, first)
		}
		lb, err := admin.GetLoadBalancer(ctx, lbs.GetLoadBalancerName(ctx, "cluster", svc))
		if err != nil || !reflect.DeepEqual(lb.Backends, []string{"n1", "n2"}) {
			t.Errorf("after update: cloud load balancer %+v, %v; want backends n1, n2", lb, err)
		}

		for range 2 { // deleting twice is fine
			if err := lbs.EnsureLoadBalancerDeleted(ctx, "cluster", svc); err != nil {
				t.Errorf("EnsureLoadBalancerDeleted: %v", err)
			}
		}
		_, exists, err = lbs.GetLoadBalancer(ctx, "cluster", svc)
		if err != nil || exists != keep {
			t.Errorf("keep-lb-on-delete=%v: after delete, exists=%v, %v", keep, exists, err)
		}
		if keep {
			continue
		}
		// The service controller's node sync may update a Service whose
		// deletion has just removed the load balancer: the update fails
		// and creates nothing.
		if err := lbs.UpdateLoadBalancer(ctx, "cluster", svc, nodes("n1", "n2", "n3")); err == nil || !cloudapi.IsNotFound(err) {
			t.Errorf("UpdateLoadBalancer after delete: %v, want a not-found error", err)
		}
		if _, exists, err := lbs.GetLoadBalancer(ctx, "cluster", svc); err != nil || exists {
			t.Errorf("after an update of a deleted load balancer: exists=%v, %v; want it still gone", exists, err)
		}
	}
}

func readyNode(name string, ready bool) *v1.Node {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: status}}}}
}
