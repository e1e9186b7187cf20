package ccm

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNodeManagerDaemonSetObjects(t *testing.T) {
	n := NodeManagerDaemonSet{Image: "ccm-conformance/reference-node-manager:latest", RunID: "r1",
		Args: []string{"--v=2"}, Env: map[string]string{"REFERENCE_CLOUD_ENDPOINT": "tcp://172.18.0.1:4000"}}
	objs, err := n.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 4 {
		t.Fatalf("%d objects, want ServiceAccount, ClusterRole, ClusterRoleBinding, DaemonSet", len(objs))
	}
	binding := objs[2].(*rbacv1.ClusterRoleBinding)
	if binding.Subjects[0].Kind != rbacv1.ServiceAccountKind || binding.Subjects[0].Name != NodeManagerName || binding.Subjects[0].Namespace != "kube-system" {
		t.Errorf("binding subject %+v, want the node manager's ServiceAccount", binding.Subjects[0])
	}
	for _, r := range objs[1].(*rbacv1.ClusterRole).Rules {
		if slices.Contains(r.Resources, "services") || slices.Contains(r.Verbs, "delete") {
			t.Errorf("rule %+v: the node manager initializes its node and needs no more", r)
		}
	}
	ds := objs[3].(*appsv1.DaemonSet)
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	if !slices.Equal(c.Args, []string{"--v=2", "--node-name=$(NODE_NAME)"}) {
		t.Errorf("args %q: want the profile's and --node-name from the pod's node", c.Args)
	}
	if c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" || c.Env[1].Value != "tcp://172.18.0.1:4000" {
		t.Errorf("env %+v", c.Env)
	}
	if len(pod.Tolerations) != 1 || pod.Tolerations[0].Operator != corev1.TolerationOpExists || pod.Tolerations[0].Key != "" {
		t.Errorf("tolerations %+v: want every taint tolerated (a node waits under the uninitialized one)", pod.Tolerations)
	}
	if !pod.HostNetwork || pod.ServiceAccountName != NodeManagerName || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("host network %v, service account %q, pull policy %s", pod.HostNetwork, pod.ServiceAccountName, c.ImagePullPolicy)
	}
	if sel := ds.Spec.Selector.MatchLabels; sel[LabelName] != NodeManagerName || ds.Spec.Template.Labels[LabelRun] != "r1" {
		t.Errorf("selector %v, template labels %v", sel, ds.Spec.Template.Labels)
	}

	for _, tt := range []struct {
		name string
		n    NodeManagerDaemonSet
		want string
	}{
		{"no image", NodeManagerDaemonSet{RunID: "r"}, "image is required"},
		{"no run", NodeManagerDaemonSet{Image: "i"}, "run ID is required"},
		{"a node name of its own", NodeManagerDaemonSet{Image: "i", RunID: "r", Args: []string{"--node-name=n1"}}, "gives each pod its node's name"},
	} {
		if _, err := tt.n.Objects(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestNodeManagerDaemonSetApplyDelete(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	n := NodeManagerDaemonSet{Image: "i", RunID: "r1"}
	for i := 0; i < 2; i++ {
		if err := n.Apply(ctx, client); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
	}
	if _, err := client.AppsV1().DaemonSets("kube-system").Get(ctx, NodeManagerName, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n.Delete(ctx, client); err != nil {
		t.Fatal(err)
	}
	if err := n.Delete(ctx, client); err != nil {
		t.Errorf("deleting what is gone: %v", err)
	}
	if sas, _ := client.CoreV1().ServiceAccounts("kube-system").List(ctx, metav1.ListOptions{}); len(sas.Items) != 0 {
		t.Errorf("left: %v", sas.Items)
	}
}
