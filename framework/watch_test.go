package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
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

// A View that finds an object absent times the absence by the arrival of
// the object's deletion, not by the newest other object it read: a wait
// for a node's deletion that also reads nodes a kubelet keeps updating
// would otherwise record the time since their last update as its lag.
// Absence it has no deletion for makes the look's arrival unknown.
func TestWatchViewTimesDeletions(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kept", ResourceVersion: "1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "victim", ResourceVersion: "1"}},
	)
	w, err := StartWatch(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	v := &View{w: w}
	if _, err := v.Node("never"); !apierrors.IsNotFound(err) || !v.unknownArrival {
		t.Errorf("Node(never) = %v with unknownArrival %v, want NotFound and true", err, v.unknownArrival)
	}

	// The kept node changes, then the victim is deleted.
	kept := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kept", ResourceVersion: "2", Labels: map[string]string{"x": "y"}}}
	if _, err := client.CoreV1().Nodes().Update(ctx, kept, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.waitSeen(ctx, "Node", kept); err != nil {
		t.Fatal(err)
	}
	beforeDeletion := time.Now()
	if err := client.CoreV1().Nodes().Delete(ctx, "victim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v = &View{w: w}
		_, keptErr := v.Node("kept")
		_, victimErr := v.Node("victim")
		if keptErr != nil {
			t.Fatalf("Node(kept) = %v", keptErr)
		}
		if apierrors.IsNotFound(victimErr) && !v.unknownArrival {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch never delivered the deletion of node victim (Node(victim) = %v, unknownArrival %v)", victimErr, v.unknownArrival)
		}
		time.Sleep(WatchPollInterval)
	}
	if at := v.latest(); at.Before(beforeDeletion) || at.After(time.Now()) {
		t.Errorf("latest arrival read = %s, want the deletion's, between %s and now (the kept node's update came before)", at.Format(time.StampMicro), beforeDeletion.Format(time.StampMicro))
	}
}

// A wait for the watch that gives up says, within the first 140
// characters (what a dashboard cell keeps of a failure), which object it
// waited for, what it expected and what it saw.
func TestWatchWaitErrors(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}})
	w, err := StartWatch(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		wait func(context.Context) error
		want []string
	}{
		{
			name: "a version the harness wrote",
			wait: func(ctx context.Context) error {
				return w.waitSeen(ctx, "Node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7"}})
			},
			want: []string{"Node n1", "expected the watch to deliver version 7", "saw version 1"},
		},
		{
			name: "a Service the watch never saw",
			wait: func(ctx context.Context) error {
				return w.waitSeen(ctx, "Service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "3"}})
			},
			want: []string{"Service ns/web", "version 3", "saw no version of it"},
		},
		{
			name: "a Node that should be registered",
			wait: func(ctx context.Context) error { return w.waitNode(ctx, "n2", true) },
			want: []string{"node n2", "expected the watch to show it registered", "saw no such Node"},
		},
		{
			name: "a Node that should be gone",
			wait: func(ctx context.Context) error { return w.waitNode(ctx, "n1", false) },
			want: []string{"node n1", "expected the watch to show it gone", "saw it still there"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*WatchPollInterval)
			defer cancel()
			err := tt.wait(ctx)
			if err == nil {
				t.Fatal("the wait did not give up")
			}
			head := err.Error()[:min(140, len(err.Error()))]
			for _, want := range tt.want {
				if !strings.Contains(head, want) {
					t.Errorf("the first 140 characters %q do not contain %q", head, want)
				}
			}
			// And so does the failure a spec makes of it.
			failure := FailureMessage(gomegaFailure(t, func(g gomega.Gomega) { g.Expect(err).To(gomega.Succeed()) }))
			if !strings.HasPrefix(failure, err.Error()) {
				t.Errorf("the failure does not start with the error:\n%s", failure)
			}
		})
	}
}
