package sweep

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccm-conformance/ccm-conformance/framework"
)

func TestIsHarnessNamespace(t *testing.T) {
	for name, want := range map[string]bool{
		framework.UniqueName("ccm-lb"):        true,
		framework.UniqueName("ccm-lb-udp"):    true,
		"ccm-lb-abcde":                        false, // a, e: not UniqueName's letters
		"kube-system":                         false,
		"default":                             false,
		"ccm-" + framework.UniqueName("")[1:]: false, // no spec prefix
		framework.UniqueName("my-app"):        false,
		"":                                    false,
	} {
		if got := isHarnessNamespace(name); got != want {
			t.Errorf("isHarnessNamespace(%q) = %v, want %v", name, got, want)
		}
	}
}

// A cluster-only sweep removes the labelled namespaces and the harness's
// Nodes, and nothing else; a dry run removes nothing and says the same.
func TestRunOnACluster(t *testing.T) {
	join := framework.UniqueName("ccm-join")
	ns := framework.UniqueName("ccm-lb")
	objects := func() *fake.Clientset {
		return fake.NewClientset(
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{framework.NamespaceLabel: "true"}}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ccm-lb-mine"}}, // a user's, unlabelled
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: join}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ccm-node-1"}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-7"}},
		)
	}
	want := []string{"namespace " + ns, "Node " + join}

	for _, dry := range []bool{true, false} {
		client := objects()
		var out strings.Builder
		rep, err := Run(context.Background(), Options{Client: client, DryRun: dry, Out: &out, Poll: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Removed, want) || len(rep.Left) != 0 {
			t.Errorf("dry run %v: removed %v, left %v; want %v", dry, rep.Removed, rep.Left, want)
		}
		verb := "removed "
		if dry {
			verb = "would remove "
		}
		if !strings.Contains(out.String(), verb+"Node "+join) {
			t.Errorf("dry run %v: output %q", dry, out.String())
		}
		nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		namespaces, _ := client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
		wantNodes, wantNamespaces := 2, 1
		if dry {
			wantNodes, wantNamespaces = 3, 2
		}
		if len(nodes.Items) != wantNodes || len(namespaces.Items) != wantNamespaces {
			t.Errorf("dry run %v: %d Nodes and %d namespaces remain, want %d and %d", dry, len(nodes.Items), len(namespaces.Items), wantNodes, wantNamespaces)
		}
	}
}
