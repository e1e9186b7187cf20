package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccm-conformance/ccm-conformance/framework"
)

func TestLeftovers(t *testing.T) {
	// before: the world as its setup left it.
	before := func() *inventory {
		return &inventory{
			namespaces:    map[string]string{"default": "namespace default", "kube-system": "namespace kube-system"},
			services:      map[string]string{"default/kubernetes": "Service default/kubernetes (type ClusterIP)"},
			nodes:         map[string]string{"ccm-node-1": "node ccm-node-1", "ccm-node-2": "node ccm-node-2"},
			instances:     map[string]string{"ccm-node-1": "cloud instance ccm-node-1", "ccm-node-2": "cloud instance ccm-node-2"},
			loadBalancers: map[string]string{},
			routes:        map[string]string{"r-0001": "cloud route r-0001 (10.244.1.0/24 to node ccm-node-1)"},
			routeNodes:    map[string]string{"r-0001": "ccm-node-1"},
		}
	}
	tests := []struct {
		name   string
		change func(after *inventory)
		want   []string
	}{
		{name: "nothing changed", change: func(*inventory) {}},
		{
			name: "things went away",
			change: func(a *inventory) {
				delete(a.nodes, "ccm-node-2")
				delete(a.instances, "ccm-node-2")
				delete(a.routes, "r-0001")
			},
		},
		{
			name: "a load balancer of a deleted Service stays",
			change: func(a *inventory) {
				a.loadBalancers["a1b2c3"] = "cloud load balancer a1b2c3 (of Service ccm-lb-x/web)"
			},
			want: []string{"cloud load balancer a1b2c3 (of Service ccm-lb-x/web)"},
		},
		{
			// The route goes with its node: only the node is named.
			name: "a spec's namespace, Service and machine stay",
			change: func(a *inventory) {
				a.namespaces["ccm-lb-x"] = "namespace ccm-lb-x"
				a.services["ccm-lb-x/web"] = "Service ccm-lb-x/web (type LoadBalancer)"
				a.nodes["ccm-node-x"] = "node ccm-node-x"
				a.instances["ccm-node-x"] = "cloud instance ccm-node-x"
				a.routes["r-0009"] = "cloud route r-0009 (10.244.9.0/24 to node ccm-node-x)"
				a.routeNodes["r-0009"] = "ccm-node-x"
			},
			want: []string{
				"namespace ccm-lb-x", "Service ccm-lb-x/web (type LoadBalancer)", "node ccm-node-x",
				"cloud instance ccm-node-x",
			},
		},
		{
			name: "a new route of a node of the cluster is the route controller's",
			change: func(a *inventory) {
				a.routes["r-0002"] = "cloud route r-0002 (10.244.2.0/24 to node ccm-node-2)"
				a.routeNodes["r-0002"] = "ccm-node-2"
			},
		},
		{
			name: "a new route of a node that is gone stays",
			change: func(a *inventory) {
				delete(a.nodes, "ccm-node-2")
				a.routes["r-0002"] = "cloud route r-0002 (10.244.2.0/24 to node ccm-node-2)"
				a.routeNodes["r-0002"] = "ccm-node-2"
			},
			want: []string{"cloud route r-0002 (10.244.2.0/24 to node ccm-node-2)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := before()
			tt.change(after)
			got := leftovers(before(), after)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("leftovers %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTakeInventoryOfTheCluster(t *testing.T) {
	deleting := metav1.Now()
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ccm-lb-x", Labels: harnessLabel, DeletionTimestamp: &deleting}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ccm-lb-y", Labels: harnessLabel}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ccm-lb-x", Name: "web", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ccm-node-1"}},
	)
	inv, err := takeInventory(context.Background(), client, nil, inventoryScope{machines: true})
	if err != nil {
		t.Fatal(err)
	}
	empty := &inventory{}
	// Only what the harness made: not the default namespace, nor its
	// Service. Of the namespace being deleted, only its Service, which
	// waits for the CCM: the namespace controller does the rest.
	got := strings.Join(leftovers(empty, inv), "; ")
	want := "namespace ccm-lb-y; Service ccm-lb-x/web (type LoadBalancer, finalizers service.kubernetes.io/load-balancer-cleanup); node ccm-node-1"
	if got != want {
		t.Errorf("inventory %q, want %q", got, want)
	}
	if len(inv.skipped) != 1 || !strings.Contains(inv.skipped[0], "no cloud driver") {
		t.Errorf("skipped %q, want the cloud named", inv.skipped)
	}
}

var harnessLabel = map[string]string{framework.NamespaceLabel: "true"}

// On a cluster of real machines that others use too, what others make
// during the run is not the run's leftover: their namespaces and Services,
// and the cluster's nodes.
func TestInventoryOfASharedCluster(t *testing.T) {
	cluster := func(extra ...runtime.Object) *fake.Clientset {
		return fake.NewClientset(append([]runtime.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-1"}},
		}, extra...)...)
	}
	scope := inventoryScope{machines: false}
	before, err := takeInventory(context.Background(), cluster(), nil, scope)
	if err != nil {
		t.Fatal(err)
	}
	after, err := takeInventory(context.Background(), cluster(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-2-from-the-autoscaler"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ccm-lb-y", Labels: harnessLabel}},
	), nil, scope)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(leftovers(before, after), "; ")
	want := "namespace ccm-lb-y"
	if got != want {
		t.Errorf("leftovers %q, want %q", got, want)
	}
	if !after.othersNamespaces["team-a"] || after.othersNamespaces["ccm-lb-y"] {
		t.Errorf("others' namespaces %v, want team-a and not ccm-lb-y (whose load balancers are the run's)", after.othersNamespaces)
	}
}

func TestLeakErrorNamesEveryLeftover(t *testing.T) {
	err := error(&LeakError{Leftovers: []string{"cloud load balancer a1 (of Service ns/web)", "namespace ns"}, Waited: 30 * time.Second})
	want := "the specs left 2 thing(s) behind, still there 30s after the last spec (timeouts.leftoversGone): cloud load balancer a1 (of Service ns/web); namespace ns"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	for _, e := range []error{err, errors.Join(err, &SetupError{Step: "teardown", Err: errors.New("x")})} {
		if c := ErrorClass(e); c != ClassLeak {
			t.Errorf("ErrorClass(%v) = %q, want %q", e, c, ClassLeak)
		}
	}
}
