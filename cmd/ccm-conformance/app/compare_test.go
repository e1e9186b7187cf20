package app

import (
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccm-conformance/ccm-conformance/checks/upstreame2e"
)

func TestOursFrom(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	spec := func(state types.SpecState, start, end int, msg string) types.SpecReport {
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, State: state,
			StartTime: t0.Add(time.Duration(start) * time.Second), EndTime: t0.Add(time.Duration(end) * time.Second),
			Failure: types.Failure{Message: msg}}
	}
	r := types.Report{SpecReports: types.SpecReports{
		spec(types.SpecStatePassed, 2, 5, ""),
		spec(types.SpecStateFailed, 5, 9, "boom"),
		spec(types.SpecStateSkipped, 9, 9, "the profile does not claim DataPath"),
		spec(types.SpecStateSkipped, 0, 0, ""), // not selected: no message, and no time either
		spec(types.SpecStatePassed, 9, 12, ""),
		{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStatePassed, StartTime: t0, EndTime: t0.Add(time.Minute)},
	}}
	got := oursFrom(r, "LoadBalancer")
	if got.Passed != 2 || got.Failed != 1 || got.Skipped != 1 || got.WallSeconds != 10 {
		t.Errorf("oursFrom = %+v, want 2 passed, 1 failed, 1 skipped, 10 s from the first selected spec to the last", got)
	}
	if got := oursFrom(types.Report{}, "x"); got.WallSeconds != 0 || got.Passed != 0 {
		t.Errorf("oursFrom of no spec = %+v", got)
	}
}

func TestSchedulable(t *testing.T) {
	tests := []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"plain", corev1.Node{}, true},
		{"control plane", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}}}, false},
		{"prefer not", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}}}}, true},
		{"cordoned", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}}, false},
		{"not ready", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute}}}}, false},
	}
	for _, tt := range tests {
		if got := schedulable(tt.node); got != tt.want {
			t.Errorf("%s: schedulable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPrintComparison(t *testing.T) {
	var b strings.Builder
	printComparison(&b, Comparison{
		Backend: "kind", KubernetesVersion: "v1.37.2",
		Ours:     SideResult{What: "ccm-conformance --label-filter 'LoadBalancer'", Passed: 14, Skipped: 3, WallSeconds: 41.26},
		Upstream: SideResult{What: "[sig-network] LoadBalancers (upstream e2e, v1.37.2)", Passed: 8, Failed: 1, WallSeconds: 612.04},
		NotRun:   []upstreame2e.Spec{{Name: "should work from pods", Reason: "its client is a pod"}},
	}, "/r/artifacts/upstream-comparison.json")
	out := b.String()
	for _, want := range []string{
		"side by side on one kind cluster (Kubernetes v1.37.2), same CCM:",
		"  ccm-conformance --label-filter 'LoadBalancer'        14      0       3        41.3s\n",
		"  [sig-network] LoadBalancers (upstream e2e, v1.37.2)  8       1       0        612.0s\n",
		"upstream specs left out (1):\n  should work from pods: its client is a pod\n",
		"comparison: /r/artifacts/upstream-comparison.json\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
