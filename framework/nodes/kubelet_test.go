package nodes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// A Windows node reports what a kubelet on Windows Server does; a Linux
// node, the default, reports Linux; nothing else is an operating system.
func TestNewNodeOperatingSystem(t *testing.T) {
	tests := []struct {
		os                    string
		wantLabel, wantBuild  string
		wantInfoOS, wantImage string
		wantErr               string
	}{
		{os: "", wantLabel: "linux", wantInfoOS: "linux"},
		{os: OSLinux, wantLabel: "linux", wantInfoOS: "linux"},
		{os: OSWindows, wantLabel: "windows", wantBuild: "10.0.20348", wantInfoOS: "windows", wantImage: "Windows Server 2022 Datacenter"},
		{os: "darwin", wantErr: `operating system "darwin"`},
	}
	for _, tt := range tests {
		t.Run(tt.os, func(t *testing.T) {
			node, err := NewNode(Spec{Name: "n1", OS: tt.os}, "v1.37.2", metav1.Now())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := node.Labels[corev1.LabelOSStable]; got != tt.wantLabel {
				t.Errorf("label %s = %q, want %q", corev1.LabelOSStable, got, tt.wantLabel)
			}
			if got := node.Labels[corev1.LabelWindowsBuild]; got != tt.wantBuild {
				t.Errorf("label %s = %q, want %q", corev1.LabelWindowsBuild, got, tt.wantBuild)
			}
			if info := node.Status.NodeInfo; info.OperatingSystem != tt.wantInfoOS || info.OSImage != tt.wantImage {
				t.Errorf("nodeInfo operatingSystem %q, osImage %q; want %q, %q", info.OperatingSystem, info.OSImage, tt.wantInfoOS, tt.wantImage)
			}
			// Whatever its OS, the CCM must initialize it.
			if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != cloudproviderapi.TaintExternalCloudProvider || node.Spec.ProviderID != "" {
				t.Errorf("taints %v, providerID %q: want the uninitialized taint and none", node.Spec.Taints, node.Spec.ProviderID)
			}
		})
	}
}

func TestNewNodeMatchesKubeletWithExternalCloudProvider(t *testing.T) {
	tests := []struct {
		name           string
		nodeIPs        []string
		wantAnnotation string
		wantAddresses  []corev1.NodeAddress
		wantErr        string
	}{
		{
			name:          "no node IP: only the hostname",
			wantAddresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}},
		},
		{
			name:           "IPv4 node IP",
			nodeIPs:        []string{"10.0.0.5"},
			wantAnnotation: "10.0.0.5",
			wantAddresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "n1"}},
		},
		{
			name:           "IPv6 node IP",
			nodeIPs:        []string{"fd00::5"},
			wantAnnotation: "fd00::5",
			wantAddresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "fd00::5"}, {Type: corev1.NodeHostName, Address: "n1"}},
		},
		{
			name:           "dual-stack pair keeps its order",
			nodeIPs:        []string{"fd00::5", "10.0.0.5"},
			wantAnnotation: "fd00::5,10.0.0.5",
			wantAddresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "fd00::5"},
				{Type: corev1.NodeInternalIP, Address: "10.0.0.5"},
				{Type: corev1.NodeHostName, Address: "n1"},
			},
		},
		{name: "same family twice", nodeIPs: []string{"10.0.0.5", "10.0.0.6"}, wantErr: "same family"},
		{name: "not an IP", nodeIPs: []string{"ten"}, wantErr: "not an IP"},
		{name: "three IPs", nodeIPs: []string{"10.0.0.5", "fd00::5", "10.0.0.6"}, wantErr: "at most two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &Kubelet{spec: Spec{Name: "n1", NodeIPs: tt.nodeIPs}, opts: Options{}.withDefaults()}
			node, err := k.newNode(metav1.Now())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]; got != tt.wantAnnotation {
				t.Errorf("annotation = %q, want %q", got, tt.wantAnnotation)
			}
			if fmt.Sprint(node.Status.Addresses) != fmt.Sprint(tt.wantAddresses) {
				t.Errorf("addresses = %v, want %v", node.Status.Addresses, tt.wantAddresses)
			}
			if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != cloudproviderapi.TaintExternalCloudProvider || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
				t.Errorf("taints = %v, want only the uninitialized taint", node.Spec.Taints)
			}
		})
	}
}

func TestKubeletHeartbeatsUntilStopped(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	pool := NewPool(client, Options{HeartbeatInterval: 20 * time.Millisecond})
	k, err := pool.Register(ctx, Spec{Name: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	renewed := func() time.Time {
		l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	waitFor(t, func() bool { return !renewed().IsZero() }, "a node lease")
	first := renewed()
	waitFor(t, func() bool { return renewed().After(first) }, "the lease to be renewed")

	k.Stop()
	if k.Running() {
		t.Fatal("kubelet still running after Stop")
	}
	stopped := renewed()
	time.Sleep(100 * time.Millisecond)
	if !renewed().Equal(stopped) {
		t.Error("lease renewed after Stop")
	}
	k.Resume()
	waitFor(t, func() bool { return renewed().After(stopped) }, "the lease to be renewed after Resume")

	if err := pool.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err == nil {
		t.Error("node still exists after Close")
	}
}

// The node's agent runs while its kubelet does: it starts at registration
// and on Resume, stops on Stop and on Remove, and an agent that cannot start
// fails the registration, leaving no kubelet behind.
func TestAgentRunsWhileTheKubeletDoes(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	agent := func(_ context.Context, node string) (func(), error) {
		if node == "broken" {
			return nil, errors.New("no such executable")
		}
		record("start " + node)
		return func() { record("stop " + node) }, nil
	}
	client := fake.NewClientset()
	pool := NewPool(client, Options{HeartbeatInterval: 20 * time.Millisecond, Agent: agent})
	k, err := pool.Register(ctx, Spec{Name: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	k.Stop()
	k.Stop()
	k.Resume()
	k.Resume()
	if err := pool.Remove(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Register(ctx, Spec{Name: "broken"}); err == nil || !strings.Contains(err.Error(), "node broken: starting its agent: no such executable") {
		t.Errorf("Register with a failing agent: err = %v", err)
	}
	if _, ok := pool.Get("broken"); ok {
		t.Error("the kubelet whose agent failed is in the pool")
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "broken", metav1.GetOptions{}); err == nil {
		t.Error("the Node whose agent failed to start is still there")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"start n1", "stop n1", "start n1", "stop n1"}; !slices.Equal(events, want) {
		t.Errorf("agent events %v, want %v", events, want)
	}
}

func TestSimulatedKubeProxyAnswersOnNodePorts(t *testing.T) {
	ctx := context.Background()
	// A free port on a loopback address of its own.
	ip := "127.77.0.9"
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	l.Close()

	client := fake.NewClientset(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{
			{Port: 80, NodePort: port, Protocol: corev1.ProtocolTCP},
			{Port: 53, NodePort: port, Protocol: corev1.ProtocolUDP},
		}},
	})
	pool := NewPool(client, Options{HeartbeatInterval: time.Hour, ServeNodePorts: true, ProxySyncInterval: 20 * time.Millisecond})
	defer pool.Close(ctx)
	// The CCM would set the InternalIP; here the kubelet announces it.
	k, err := pool.Register(ctx, Spec{Name: "n1", NodeIPs: []string{ip}})
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(ip, fmt.Sprint(port))
	var reply string
	waitFor(t, func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer conn.Close()
		reply, _ = bufio.NewReader(conn).ReadString('\n')
		return true
	}, "the TCP node port")
	if reply != "n1 default/s\n" {
		t.Errorf("TCP reply %q, want the node's name and the Service's", reply)
	}
	udp, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	_ = udp.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := udp.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := udp.Read(buf)
	if err != nil || string(buf[:n]) != "n1 default/s\n" {
		t.Errorf("UDP reply %q (%v), want the node's name and the Service's", buf[:n], err)
	}

	// A stopped machine answers nothing.
	k.Stop()
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Error("node port still answers after the kubelet stopped")
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newTestKubelet registers node n1 in a fake clientset without starting
// heartbeats, so that a test calls them one at a time.
func newTestKubelet(t *testing.T) (*Kubelet, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	k := &Kubelet{spec: Spec{Name: "n1"}, client: client, opts: Options{}.withDefaults()}
	node, err := k.newNode(metav1.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	return k, client
}

// actions lists the client's requests as "verb resource[/subresource]".
func actions(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

func TestSyncReadyPostsOnlyWhenChangedOrDue(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		ready    corev1.ConditionStatus
		posted   time.Time
		wantPost bool
	}{
		{name: "first heartbeat after start", ready: corev1.ConditionTrue, wantPost: true},
		{name: "ready and posted a second ago", ready: corev1.ConditionTrue, posted: now.Add(-time.Second), wantPost: false},
		{name: "ready and posted two minutes ago", ready: corev1.ConditionTrue, posted: now.Add(-2 * time.Minute), wantPost: true},
		{name: "marked Unknown by kube-controller-manager", ready: corev1.ConditionUnknown, posted: now.Add(-time.Second), wantPost: true},
		{name: "NotReady", ready: corev1.ConditionFalse, posted: now.Add(-time.Second), wantPost: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			k, client := newTestKubelet(t)
			node, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			old := metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second))
			node.Status.Conditions[0].Status = tt.ready
			node.Status.Conditions[0].LastTransitionTime = old
			if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			client.ClearActions()

			posted, err := k.syncReady(ctx, tt.posted)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"get nodes"}
			if tt.wantPost {
				want = append(want, "patch nodes/status")
			}
			if got := actions(client); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("requests = %v, want %v", got, want)
			}
			if tt.wantPost == posted.Equal(tt.posted) {
				t.Errorf("returned posted = %v (was %v), want a new time: %v", posted, tt.posted, tt.wantPost)
			}
			node, err = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := node.Status.Conditions[0]
			if tt.wantPost && c.Status != corev1.ConditionTrue {
				t.Errorf("Ready = %s after a post, want True", c.Status)
			}
			// A condition that was True keeps its transition time; one that
			// turns True gets a new one.
			if keeps := tt.ready == corev1.ConditionTrue; keeps != c.LastTransitionTime.Equal(&old) {
				t.Errorf("lastTransitionTime = %v (was %v), want kept: %v", c.LastTransitionTime, old, keeps)
			}
		})
	}
}

func TestSyncReadyFailsWithoutNode(t *testing.T) {
	k, client := newTestKubelet(t)
	if err := client.CoreV1().Nodes().Delete(context.Background(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.syncReady(context.Background(), time.Time{}); err == nil {
		t.Error("syncReady of a deleted node returned no error")
	}
}

func TestRenewLeaseReadsOnlyWhenItHasNoLease(t *testing.T) {
	ctx := context.Background()
	k, client := newTestKubelet(t)

	lease, err := k.renewLease(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := actions(client), []string{"get leases", "get nodes", "create leases"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first heartbeat: requests = %v, want %v", got, want)
	}
	if lease == nil || len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].Name != "n1" {
		t.Fatalf("created lease = %v, want one owned by node n1", lease)
	}

	client.ClearActions()
	first := lease.Spec.RenewTime.Time
	time.Sleep(time.Millisecond) // so that the renew time can differ
	lease, err = k.renewLease(ctx, lease)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := actions(client), []string{"update leases"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("next heartbeat: requests = %v, want %v", got, want)
	}
	if !lease.Spec.RenewTime.After(first) {
		t.Errorf("renew time %v not after %v", lease.Spec.RenewTime, first)
	}

	// The garbage collector deleted the Lease: the kubelet makes a new one.
	if err := client.CoordinationV1().Leases(LeaseNamespace).Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	if _, err := k.renewLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if got, want := actions(client), []string{"update leases", "get leases", "get nodes", "create leases"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the lease was deleted: requests = %v, want %v", got, want)
	}
}

func TestParseProxyAnswer(t *testing.T) {
	tests := []struct {
		answer, node, service string
		ok                    bool
	}{
		{ProxyAnswer("n1", "ns/web"), "n1", "ns/web", true},
		{"n1 ns/web\n", "n1", "ns/web", true},
		{"n1", "", "", false},
		{"n1 ", "", "", false},
		{"n1 web", "", "", false},
		{" ns/web", "", "", false},
	}
	for _, tt := range tests {
		node, service, ok := ParseProxyAnswer(tt.answer)
		if ok != tt.ok || ok && (node != tt.node || service != tt.service) {
			t.Errorf("ParseProxyAnswer(%q) = %q, %q, %v; want %q, %q, %v", tt.answer, node, service, ok, tt.node, tt.service, tt.ok)
		}
	}
}
