package framework

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// The expectation follows the service controller's stable node set in
// k8s.io/cloud-provider: readiness is no rule, the exclusion label is read
// with strconv.ParseBool, and a label value that does not parse excludes.
func TestEligibleBackends(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name     string
		ready    bool
		labels   map[string]string
		taints   []string
		deleting bool
		want     bool
	}{
		{name: "ready", ready: true, want: true},
		{name: "not ready stays a backend", ready: false, want: true},
		{name: "uninitialized", ready: true, taints: []string{"node.cloudprovider.kubernetes.io/uninitialized"}, want: true},
		{name: "excluded true", ready: true, labels: map[string]string{corev1.LabelNodeExcludeBalancers: "true"}},
		{name: "excluded 1", ready: true, labels: map[string]string{corev1.LabelNodeExcludeBalancers: "1"}},
		{name: "excluded false", ready: true, labels: map[string]string{corev1.LabelNodeExcludeBalancers: "false"}, want: true},
		{name: "excluded FALSE", ready: true, labels: map[string]string{corev1.LabelNodeExcludeBalancers: "FALSE"}, want: true},
		{name: "excluded 0", ready: true, labels: map[string]string{corev1.LabelNodeExcludeBalancers: "0"}, want: true},
		{name: "excluded unparsable", ready: true, labels: map[string]string{corev1.LabelNodeExcludeBalancers: "yes"}},
		{name: "excluded empty", ready: true, labels: map[string]string{corev1.LabelNodeExcludeBalancers: ""}},
		{name: "autoscaler deletes it", ready: true, taints: []string{ToBeDeletedTaint}},
		{name: "being deleted", ready: true, deleting: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := corev1.Node{}
			n.Name = "n"
			n.Labels = tt.labels
			status := corev1.ConditionFalse
			if tt.ready {
				status = corev1.ConditionTrue
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
			for _, k := range tt.taints {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k})
			}
			if tt.deleting {
				n.DeletionTimestamp = &now
			}
			got := len(EligibleBackends([]corev1.Node{n})) == 1
			if got != tt.want {
				t.Errorf("eligible = %v, want %v", got, tt.want)
			}
		})
	}
	if got := fmt.Sprint(EligibleBackends([]corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, {ObjectMeta: metav1.ObjectMeta{Name: "a"}}})); got != "[a b]" {
		t.Errorf("EligibleBackends = %s, want the names sorted", got)
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
