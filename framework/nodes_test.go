package framework

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

func addr(t, a string) clouddriver.Address { return clouddriver.Address{Type: t, Address: a} }

func TestExpectedAddresses(t *testing.T) {
	cloud := []clouddriver.Address{
		addr("InternalIP", "10.0.0.1"),
		addr("InternalIP", "10.0.0.2"),
		addr("InternalIP", "fd00::1"),
		addr("ExternalIP", "203.0.113.1"),
		addr("Hostname", "n1"),
	}
	tests := []struct {
		name     string
		provided []string
		want     string
		wantErr  string
	}{
		{"no node IP keeps the cloud's list", nil, "InternalIP=10.0.0.1, InternalIP=10.0.0.2, InternalIP=fd00::1, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"secondary IPv4 becomes the only InternalIP", []string{"10.0.0.2"}, "InternalIP=10.0.0.2, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"IPv6", []string{"fd00::1"}, "InternalIP=fd00::1, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"dual-stack keeps the annotation's order", []string{"fd00::1", "10.0.0.1"}, "InternalIP=fd00::1, InternalIP=10.0.0.1, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"external node IP drops the other externals only", []string{"203.0.113.1"}, "ExternalIP=203.0.113.1, InternalIP=10.0.0.1, InternalIP=10.0.0.2, InternalIP=fd00::1, Hostname=n1", ""},
		{"unknown IP is an error", []string{"192.0.2.7"}, "", "192.0.2.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExpectedAddresses(cloud, tt.provided)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := FormatAddresses(got); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

func TestSameAddressSet(t *testing.T) {
	a := []corev1.NodeAddress{{Type: "InternalIP", Address: "10.0.0.1"}, {Type: "Hostname", Address: "n1"}}
	b := []corev1.NodeAddress{{Type: "Hostname", Address: "n1"}, {Type: "InternalIP", Address: "10.0.0.1"}}
	c := []corev1.NodeAddress{{Type: "ExternalIP", Address: "10.0.0.1"}, {Type: "Hostname", Address: "n1"}}
	if !SameAddressSet(a, b) {
		t.Error("same pairs in another order are not the same set")
	}
	if SameAddressSet(a, c) {
		t.Error("a changed type is the same set")
	}
}

func TestEligibleBackends(t *testing.T) {
	node := func(name string, ready bool, labels map[string]string, taints ...string) corev1.Node {
		n := corev1.Node{}
		n.Name = name
		n.Labels = labels
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
		for _, k := range taints {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k})
		}
		return n
	}
	nodes := []corev1.Node{
		node("b", true, nil),
		node("a", true, map[string]string{corev1.LabelNodeExcludeBalancers: "false"}),
		node("excluded", true, map[string]string{corev1.LabelNodeExcludeBalancers: "true"}),
		node("notready", false, nil),
		node("autoscaled", true, nil, "ToBeDeletedByClusterAutoscaler"),
		node("uninitialized", true, nil, "node.cloudprovider.kubernetes.io/uninitialized"),
	}
	got := fmt.Sprint(EligibleBackends(nodes))
	if want := "[a b uninitialized]"; got != want {
		t.Errorf("EligibleBackends = %s, want %s", got, want)
	}
}

func BenchmarkExpectedAddresses(b *testing.B) {
	var cloud []clouddriver.Address
	for i := 0; i < 16; i++ {
		cloud = append(cloud, addr("InternalIP", fmt.Sprintf("10.0.0.%d", i)))
	}
	cloud = append(cloud, addr("Hostname", "n1"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ExpectedAddresses(cloud, []string{"10.0.0.15"}); err != nil {
			b.Fatal(err)
		}
	}
}
