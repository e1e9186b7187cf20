package framework

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
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
	// A cloud that reports no Hostname address, as the vSphere CCM's and
	// many others' do: k8s.io/cloud-provider v0.37.2's node controller
	// (controllers/node/node_controller.go, updateNodeAddress) then keeps
	// the kubelet's Hostname address, appended after the cloud's, before
	// the node IPs are applied.
	noHostname := []clouddriver.Address{
		addr("InternalIP", "10.0.0.1"),
		addr("InternalIP", "10.0.0.2"),
		addr("ExternalIP", "203.0.113.1"),
	}
	tests := []struct {
		name    string
		cloud   []clouddriver.Address
		kubelet KubeletRegistration
		want    string
		wantErr string
	}{
		{"no node IP keeps the cloud's list", cloud, KubeletRegistration{}, "InternalIP=10.0.0.1, InternalIP=10.0.0.2, InternalIP=fd00::1, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"secondary IPv4 becomes the only InternalIP", cloud, KubeletRegistration{NodeIPs: []string{"10.0.0.2"}}, "InternalIP=10.0.0.2, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"IPv6", cloud, KubeletRegistration{NodeIPs: []string{"fd00::1"}}, "InternalIP=fd00::1, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"dual-stack keeps the annotation's order", cloud, KubeletRegistration{NodeIPs: []string{"fd00::1", "10.0.0.1"}}, "InternalIP=fd00::1, InternalIP=10.0.0.1, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"external node IP drops the other externals only", cloud, KubeletRegistration{NodeIPs: []string{"203.0.113.1"}}, "ExternalIP=203.0.113.1, InternalIP=10.0.0.1, InternalIP=10.0.0.2, InternalIP=fd00::1, Hostname=n1", ""},
		{"unknown IP is an error", cloud, KubeletRegistration{NodeIPs: []string{"192.0.2.7"}}, "", "192.0.2.7"},
		{"the cloud's Hostname wins over the kubelet's", cloud, KubeletRegistration{Hostname: "kubelet-name"}, "InternalIP=10.0.0.1, InternalIP=10.0.0.2, InternalIP=fd00::1, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"without a cloud Hostname the kubelet's is kept, last", noHostname, KubeletRegistration{Hostname: "n1"}, "InternalIP=10.0.0.1, InternalIP=10.0.0.2, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"the kept Hostname follows the node IPs", noHostname, KubeletRegistration{Hostname: "n1", NodeIPs: []string{"10.0.0.2"}}, "InternalIP=10.0.0.2, ExternalIP=203.0.113.1, Hostname=n1", ""},
		{"no Hostname anywhere adds none", noHostname, KubeletRegistration{}, "InternalIP=10.0.0.1, InternalIP=10.0.0.2, ExternalIP=203.0.113.1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExpectedAddresses(tt.cloud, tt.kubelet)
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

func TestRegisteredBy(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "n1",
		Labels:      map[string]string{corev1.LabelHostname: "n1.example"},
		Annotations: map[string]string{"alpha.kubernetes.io/provided-node-ip": "10.0.0.2,fd00::2"},
	}}
	got := RegisteredBy(n)
	if got.Hostname != "n1.example" || fmt.Sprint(got.NodeIPs) != "[10.0.0.2 fd00::2]" {
		t.Errorf("RegisteredBy = %+v, want the hostname label and both node IPs", got)
	}
	if got := RegisteredBy(nil); got.Hostname != "" || got.NodeIPs != nil {
		t.Errorf("RegisteredBy(nil) = %+v, want nothing", got)
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
		if _, err := ExpectedAddresses(cloud, KubeletRegistration{NodeIPs: []string{"10.0.0.15"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// The lines are shaped as k8s.io/cloud-provider v0.37.2's controllers and
// klog write them.
func TestNodeInitReasons(t *testing.T) {
	const node = "ccm-node-b4x7q"
	const (
		initializing = `I1201 11:41:38.123456   12345 node_controller.go:432] Initializing node ccm-node-b4x7q with cloud provider`
		syncError    = `I1201 11:41:38.125001   12345 node_controller.go:236] error syncing 'ccm-node-b4x7q': failed to get node modifiers from cloud provider: provided node ip for node "ccm-node-b4x7q" is not valid: failed to get node address from cloud provider that matches ip: 192.0.2.77, requeuing`
		unhandled    = `E1201 11:41:38.125100   12345 node_controller.go:247] "Unhandled Error" err="error syncing 'ccm-node-b4x7q': failed to get node modifiers from cloud provider: provided node ip for node \"ccm-node-b4x7q\" is not valid: failed to get node address from cloud provider that matches ip: 192.0.2.77, requeuing" logger="UnhandledError"`
		syncErrorOld = `I1201 11:41:37.901000   12345 node_controller.go:236] error syncing 'ccm-node-b4x7q': failed to get node modifiers from cloud provider: provided node ip for node "ccm-node-b4x7q" is not valid: failed to get node address from cloud provider that matches ip: 192.0.2.77, requeuing`
		metadataErr  = `E1201 11:41:39.000000   12345 node_controller.go:288] Error getting instance metadata for node addresses: instance named ccm-node-b4x7q: injected fault: instance.list`
		initialized  = `I1201 11:41:38.300000   12345 node_controller.go:477] Successfully initialized node ccm-node-b4x7q with cloud provider`
		labels       = `I1201 11:41:38.200000   12345 node_controller.go:515] Adding node label from cloud provider: beta.kubernetes.io/instance-type=ref.small`
		routeAction  = `I1201 11:41:39.100000   12345 route_controller.go:361] action for Node "ccm-node-b4x7q" with CIDR "10.244.3.0/24": "add"`
		routeCreate  = `I1201 11:41:39.100500   12345 route_controller.go:451] Creating route for node ccm-node-b4x7q 10.244.3.0/24 with hint 5f0c6a2e-9d1b-4c55-8f0e-1a2b3c4d5e6f, throttled 12.5µs`
		routeFailed  = `E1201 11:41:39.101000   12345 route_controller.go:481] Could not create route 5f0c6a2e-9d1b-4c55-8f0e-1a2b3c4d5e6f 10.244.3.0/24 for node ccm-node-b4x7q: injected fault: route.create`
		routeNoRoute = `I1201 11:41:39.102000   12345 route_controller.go:500] node ccm-node-b4x7q has no routes assigned to it. NodeNetworkUnavailable will be set to true`
		lifecycle    = `E1201 11:41:45.000000   12345 node_lifecycle_controller.go:175] error checking if node ccm-node-b4x7q exists: injected fault: instance.list`
		metadata     = `I1201 11:41:38.124000   12345 instances.go:140] "Instance metadata" node="ccm-node-b4x7q" providerID="reference://zone-a/i-0007" zone="zone-a"`
		providerIP   = `W1201 11:41:38.124500   12345 instances.go:151] "Provided node IP is not an address of the instance" node="ccm-node-b4x7q" nodeIP="192.0.2.77"`
		otherNode    = `I1201 11:41:38.126000   12345 node_controller.go:236] error syncing 'ccm-node-b4x7q2': failed to get node modifiers from cloud provider: provided node ip for node "ccm-node-b4x7q2" is not valid: failed to get node address from cloud provider that matches ip: 192.0.2.78, requeuing`
		jsonLine     = `{"ts":1733053298125.1,"caller":"node/node_controller.go:236","msg":"error syncing 'ccm-node-b4x7q': failed to get node modifiers from cloud provider: provided node ip for node \"ccm-node-b4x7q\" is not valid","v":0}`
	)
	lines := func(l ...string) string { return strings.Join(l, "\n") + "\n" }
	tests := []struct {
		name string
		log  string
		want []string
	}{
		{
			name: "the node controller's failure is the reason; the route controller's lines are not",
			log:  lines(initializing, syncError, routeAction, routeCreate, routeNoRoute),
			want: []string{syncError},
		},
		{
			name: "only route controller lines name the node",
			log:  lines(routeAction, routeCreate, routeFailed, routeNoRoute),
			want: nil,
		},
		{
			name: "start and success of the initialization are no reason",
			log:  lines(initializing, labels, metadata, initialized),
			want: nil,
		},
		{
			name: "a retry repeats the reason: the newest occurrence is kept once",
			log:  lines(syncErrorOld, initializing, syncError, unhandled),
			want: []string{syncError, unhandled},
		},
		{
			name: "at most three, the newest last",
			log:  lines(providerIP, syncError, unhandled, routeFailed, metadataErr),
			want: []string{syncError, unhandled, metadataErr},
		},
		{
			name: "a provider's own warning about the provided node IP counts",
			log:  lines(metadata, providerIP, routeCreate),
			want: []string{providerIP},
		},
		{
			name: "the lifecycle controller's errors are not about initialization",
			log:  lines(lifecycle, routeFailed),
			want: nil,
		},
		{
			name: "a node whose name extends this one's is another node",
			log:  lines(otherNode),
			want: nil,
		},
		{
			name: "a JSON logger's caller field names the source",
			log:  lines(routeCreate, jsonLine),
			want: []string{jsonLine},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NodeInitReasons(tt.log, node)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// A cloud may register a subset of the eligible nodes when its profile
// says so, never an excluded node or one the cluster lacks, and never none
// while a node is eligible (upstream passes the stable node set; what a
// cloud makes of it is the provider's).
func TestCheckBackends(t *testing.T) {
	node := func(name string, labels map[string]string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	excluded := map[string]string{corev1.LabelNodeExcludeBalancers: "true"}
	nodes := []corev1.Node{node("a", nil), node("b", nil), node("x", excluded)}
	tests := []struct {
		name  string
		mode  string
		nodes []corev1.Node
		got   []string
		want  string // substring of the error; "" for none
	}{
		{"all: every eligible node", profile.BackendsAll, nodes, []string{"b", "a"}, ""},
		{"all: one missing", profile.BackendsAll, nodes, []string{"a"}, "expected the eligible nodes [a b] as backends, saw [a]"},
		{"all: an excluded node", profile.BackendsAll, nodes, []string{"a", "b", "x"}, "x (labelled node.kubernetes.io/exclude-from-external-load-balancers=\"true\")"},
		{"all: an unknown node", profile.BackendsAll, nodes, []string{"a", "b", "ghost"}, "ghost (no such node)"},
		{"all: no node, no backend", profile.BackendsAll, nil, nil, ""},
		{"subset: one eligible node", profile.BackendsSubset, nodes, []string{"b"}, ""},
		{"subset: every eligible node", profile.BackendsSubset, nodes, []string{"a", "b"}, ""},
		{"subset: none, though nodes are eligible", profile.BackendsSubset, nodes, nil, "expected at least one of the eligible nodes [a b] as a backend"},
		{"subset: an excluded node", profile.BackendsSubset, nodes, []string{"x"}, "x (labelled"},
		{"subset: only excluded nodes in the cluster", profile.BackendsSubset, []corev1.Node{node("x", excluded)}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBackends(tt.mode, tt.nodes, tt.got)
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckBackends = %v, want %q", err, tt.want)
			}
		})
	}
}
