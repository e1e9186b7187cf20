package framework

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The View reads what the watch delivered, and knows when each version it
// hands out arrived.
func TestWatchView(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}})
	w, err := StartWatch(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	v := &View{w: w}
	if n, err := v.Node("n1"); err != nil || n.Name != "n1" {
		t.Fatalf("Node(n1) = %v, %v", n, err)
	}
	if _, err := v.Node("n2"); !apierrors.IsNotFound(err) {
		t.Errorf("Node(n2) = %v, want NotFound", err)
	}
	if _, err := v.Service("ns", "web"); !apierrors.IsNotFound(err) {
		t.Errorf("Service(ns/web) = %v, want NotFound", err)
	}

	before := time.Now()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "7"}}
	if _, err := client.CoreV1().Services("ns").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v = &View{w: w}
		if s, err := v.Service("ns", "web"); err == nil {
			if s.Name != "web" {
				t.Errorf("Service = %s", s.Name)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch never delivered Service ns/web")
		}
		time.Sleep(WatchPollInterval)
	}
	if at := v.latest(); at.Before(before) || at.After(time.Now()) {
		t.Errorf("arrival of ns/web = %s, want between %s and now", at, before)
	}
	if nodes := (&View{w: w}).Nodes(); len(nodes) != 1 || nodes[0].Name != "n1" {
		t.Errorf("Nodes() = %v", nodes)
	}
}
