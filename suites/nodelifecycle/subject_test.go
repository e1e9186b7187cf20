package nodelifecycle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// node is a Ready, initialized worker; opts spoil it.
func node(name string, opts ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec:       corev1.NodeSpec{ProviderID: "cloud://" + name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func controlPlane(n *corev1.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" }
func master(n *corev1.Node)       { n.Labels["node-role.kubernetes.io/master"] = "" }
func notReady(n *corev1.Node)     { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func noProviderID(n *corev1.Node) { n.Spec.ProviderID = "" }
func deleting(n *corev1.Node)     { now := metav1.Now(); n.DeletionTimestamp = &now }
func uninitialized(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: corev1.TaintEffectNoSchedule})
}
func shutDown(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule})
}

func TestPlanSubject(t *testing.T) {
	driver := func(verbs ...clouddriver.Verb) *clouddriver.Driver {
		return clouddriver.FromInfo(clouddriver.Info{ProtocolVersion: "v1", Verbs: verbs})
	}
	realVerbs := driver(clouddriver.VerbInstancesList, clouddriver.VerbInstanceGet, clouddriver.VerbInstanceDelete,
		clouddriver.VerbInstanceStop, clouddriver.VerbInstanceStart)
	del := []clouddriver.Verb{clouddriver.VerbInstanceDelete}
	stopStart := []clouddriver.Verb{clouddriver.VerbInstanceStop, clouddriver.VerbInstanceStart}
	kind := []corev1.Node{node("kind-control-plane", controlPlane), node("kind-worker"), node("kind-worker2")}

	tests := []struct {
		name string
		in   subjectInput
		want subjectPlan
		// skipHas are substrings of the skip reason, when want.Skip is "*".
		skipHas []string
	}{
		{name: "no driver", in: subjectInput{Need: del, Nodes: kind},
			want: subjectPlan{Skip: `the profile has no cloud driver; this spec needs "instance delete"`}},
		{name: "real nodes, driver without instance delete", in: subjectInput{Driver: driver(clouddriver.VerbInstancesList), Need: del, Nodes: kind},
			want: subjectPlan{Skip: `cloud driver does not implement "instance delete"`}},
		{name: "real nodes, driver without instance start", in: subjectInput{Driver: driver(clouddriver.VerbInstanceStop), Need: stopStart, Nodes: kind},
			want: subjectPlan{Skip: `cloud driver does not implement "instance start"`}},
		{name: "simulated, driver without instance stop", in: subjectInput{Driver: driver(clouddriver.VerbInstanceCreate, clouddriver.VerbInstanceDelete), Need: stopStart, Simulated: true},
			want: subjectPlan{Skip: `cloud driver does not implement "instance stop"`}},
		// The path of the local backend, as before: a machine of the
		// spec's own, whatever nodes there are.
		{name: "simulated nodes", in: subjectInput{Driver: realVerbs, Need: del, Simulated: true, Nodes: kind},
			want: subjectPlan{Simulated: true}},
		{name: "real nodes: the first worker by name", in: subjectInput{Driver: realVerbs, Need: del, Nodes: []corev1.Node{node("w-b"), node("cp", controlPlane), node("w-a")}},
			want: subjectPlan{Node: "w-a"}},
		{name: "real nodes: stop on kind", in: subjectInput{Driver: realVerbs, Need: stopStart, Nodes: kind},
			want: subjectPlan{Node: "kind-worker"}},
		{name: "real nodes: a managed cluster without control-plane Nodes", in: subjectInput{Driver: realVerbs, Need: del, Nodes: []corev1.Node{node("n2"), node("n1")}},
			want: subjectPlan{Node: "n1"}},
		{name: "real nodes: spoiled workers are passed over", in: subjectInput{Driver: realVerbs, Need: del, Nodes: []corev1.Node{
			node("a", notReady), node("b", uninitialized), node("c", noProviderID), node("d", shutDown), node("e", deleting), node("f", master), node("g"),
		}}, want: subjectPlan{Node: "g"}},
		{name: "real nodes: only control-plane nodes", in: subjectInput{Driver: realVerbs, Need: del, Nodes: []corev1.Node{node("cp1", controlPlane), node("cp2", master)}},
			want: subjectPlan{Skip: "*"}, skipHas: []string{"cp1 (control plane)", "cp2 (control plane)", "worker node"}},
		{name: "real nodes: the only Ready node", in: subjectInput{Driver: realVerbs, Need: del, Nodes: []corev1.Node{node("w1"), node("w2", notReady)}},
			want: subjectPlan{Skip: "*"}, skipHas: []string{"w1 (the only Ready node)", "w2 (NotReady)", "another Ready node"}},
		{name: "real nodes: a control-plane node is the other Ready node", in: subjectInput{Driver: realVerbs, Need: del, Nodes: []corev1.Node{node("cp", controlPlane), node("w1")}},
			want: subjectPlan{Node: "w1"}},
		{name: "real nodes: none", in: subjectInput{Driver: realVerbs, Need: del},
			want: subjectPlan{Skip: "*"}, skipHas: []string{"no nodes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planSubject(tt.in)
			if tt.want.Skip == "*" {
				if got.Skip == "" || got.Simulated || got.Node != "" || !got.NoNode {
					t.Fatalf("planSubject = %+v, want a skip for want of a node", got)
				}
				for _, s := range tt.skipHas {
					if !strings.Contains(got.Skip, s) {
						t.Errorf("skip reason %q, want it to contain %q", got.Skip, s)
					}
				}
				return
			}
			if got != tt.want {
				t.Errorf("planSubject = %+v, want %+v", got, tt.want)
			}
		})
	}
}
