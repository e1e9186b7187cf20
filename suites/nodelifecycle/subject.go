package nodelifecycle

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// controlPlaneLabels mark the nodes a spec never takes down: the cluster
// (and often the CCM) runs on them.
var controlPlaneLabels = []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}

// subjectInput is what decides which node a spec that deletes or stops an
// instance acts on.
type subjectInput struct {
	// Driver is the run's cloud driver; nil when the profile has none.
	Driver *clouddriver.Driver
	// Need are the verbs the spec calls on the node's instance.
	Need []clouddriver.Verb
	// Simulated: the harness adds machines to this cluster (the local
	// backend), so the spec makes one of its own.
	Simulated bool
	// Nodes are the cluster's Nodes; read only when the nodes are real.
	Nodes []corev1.Node
}

// subjectPlan is the decision: skip, make a simulated machine, or act on a
// real node.
type subjectPlan struct {
	// Skip, when set, is why the spec cannot run here.
	Skip string
	// Simulated: the spec adds a machine of its own.
	Simulated bool
	// Node is the real node whose instance the spec deletes or stops.
	Node string
	// NoNode: the skip is for want of a node that fits, which a CCM still
	// initializing the cluster's nodes may yet give.
	NoNode bool
}

// planSubject decides on which node a spec that deletes or stops an
// instance acts. Without the verbs it skips naming the first one missing.
// Where the harness simulates nodes the spec makes a machine, as it always
// did. On a cluster of real nodes it takes one of them, by name, among
// those that may go down for a while: Ready, initialized by the CCM (a
// providerID, no uninitialized taint), not shut down, not being deleted,
// not a control-plane node; and at least one other Ready node must remain
// to run the cluster meanwhile. With none, it skips saying why each node
// was passed over.
func planSubject(in subjectInput) subjectPlan {
	if in.Driver == nil {
		return subjectPlan{Skip: "the profile has no cloud driver; this spec needs " + quoteVerbs(in.Need)}
	}
	for _, v := range in.Need {
		if !in.Driver.Supports(v) {
			return subjectPlan{Skip: (&clouddriver.UnsupportedError{Verb: v}).Error()}
		}
	}
	if in.Simulated {
		return subjectPlan{Simulated: true}
	}
	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	ready := 0
	for i := range nodes {
		if framework.Ready(&nodes[i]) && nodes[i].DeletionTimestamp == nil {
			ready++
		}
	}
	var passed []string
	for i := range nodes {
		n := &nodes[i]
		if why := notASubject(n); why != "" {
			passed = append(passed, fmt.Sprintf("%s (%s)", n.Name, why))
			continue
		}
		if ready < 2 {
			passed = append(passed, fmt.Sprintf("%s (the only Ready node)", n.Name))
			continue
		}
		return subjectPlan{Node: n.Name}
	}
	if len(passed) == 0 {
		return subjectPlan{Skip: "the cluster has no nodes whose instance the spec could take down", NoNode: true}
	}
	return subjectPlan{NoNode: true, Skip: "no node of this cluster of real machines may have its instance taken down: " +
		strings.Join(passed, ", ") + "; the spec needs a Ready, initialized worker node and another Ready node besides"}
}

// notASubject says why a real node must not be taken down, or "".
func notASubject(n *corev1.Node) string {
	for _, l := range controlPlaneLabels {
		if _, ok := n.Labels[l]; ok {
			return "control plane"
		}
	}
	switch {
	case n.DeletionTimestamp != nil:
		return "being deleted"
	case !framework.Ready(n):
		return "NotReady"
	case framework.Uninitialized(n):
		return "uninitialized"
	case n.Spec.ProviderID == "":
		return "no providerID"
	case framework.HasTaint(n, cloudproviderapi.TaintNodeShutdown):
		return "shut down"
	}
	return ""
}

func quoteVerbs(verbs []clouddriver.Verb) string {
	q := make([]string, len(verbs))
	for i, v := range verbs {
		q[i] = fmt.Sprintf("%q", string(v))
	}
	return strings.Join(q, ", ")
}
