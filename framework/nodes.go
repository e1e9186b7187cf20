package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// Uninitialized reports whether the node still carries the taint a kubelet
// with --cloud-provider=external registers it with.
func Uninitialized(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return true
		}
	}
	return false
}

// HasTaint reports whether the node has a taint with key.
func HasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// Ready reports whether the node's Ready condition is True.
func Ready(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ProvidedNodeIPs returns the IPs of the alpha.kubernetes.io/provided-node-ip
// annotation, or nil.
func ProvidedNodeIPs(node *corev1.Node) []string {
	v, ok := node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]
	if !ok || v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// ExpectedAddresses is what a conformant CCM puts in a node's
// status.addresses, given the instance's addresses in the cloud and the
// kubelet's provided node IPs (KEP-3705): without node IPs, the cloud's
// list; with them, each node IP (with the type the cloud gives it) first,
// in the annotation's order, then every cloud address of another type.
// Addresses of the node IPs' types that are not node IPs are dropped. A node
// IP the cloud does not report is an error: the CCM must not initialize
// such a node.
func ExpectedAddresses(cloud []clouddriver.Address, provided []string) ([]corev1.NodeAddress, error) {
	if len(provided) == 0 {
		out := make([]corev1.NodeAddress, len(cloud))
		for i, a := range cloud {
			out[i] = corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address}
		}
		return out, nil
	}
	var out []corev1.NodeAddress
	usedTypes := map[string]bool{}
	for _, p := range provided {
		ip := net.ParseIP(p)
		matched := false
		for _, a := range cloud {
			if cip := net.ParseIP(a.Address); cip != nil && ip != nil && cip.Equal(ip) {
				out = append(out, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
				usedTypes[a.Type] = true
				matched = true
			}
		}
		if !matched {
			return nil, fmt.Errorf("node IP %s is not among the instance's addresses", p)
		}
	}
	for _, a := range cloud {
		if !usedTypes[a.Type] {
			out = append(out, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
		}
	}
	return out, nil
}

// FormatAddresses renders addresses as "InternalIP=10.0.0.1, Hostname=n1".
func FormatAddresses[T corev1.NodeAddress | clouddriver.Address](addrs []T) string {
	parts := make([]string, 0, len(addrs))
	for _, a := range addrs {
		switch a := any(a).(type) {
		case corev1.NodeAddress:
			parts = append(parts, string(a.Type)+"="+a.Address)
		case clouddriver.Address:
			parts = append(parts, a.Type+"="+a.Address)
		}
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// SameAddressSet reports whether two address lists hold the same
// (type, address) pairs, in any order.
func SameAddressSet(a, b []corev1.NodeAddress) bool {
	key := func(l []corev1.NodeAddress) []string {
		out := make([]string, len(l))
		for i, x := range l {
			out[i] = string(x.Type) + "=" + x.Address
		}
		sort.Strings(out)
		return out
	}
	ka, kb := key(a), key(b)
	if len(ka) != len(kb) {
		return false
	}
	for i := range ka {
		if ka[i] != kb[i] {
			return false
		}
	}
	return true
}

// CCMReason finds why the CCM did something to a node (or refused to): the
// newest Warning event about the node if there is one, otherwise the last
// lines of the CCM's log that mention the node. The upstream node
// controller emits only a Normal "Synced" event on success and logs its
// failures, so the log is often the only place a reason is given.
func (f *Framework) CCMReason(ctx context.Context, nodeName string) string {
	events, err := f.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "Node"),
			fields.OneTermEqualSelector("involvedObject.name", nodeName),
			fields.OneTermEqualSelector("type", corev1.EventTypeWarning),
		).String(),
	})
	if err == nil && len(events.Items) > 0 {
		sort.Slice(events.Items, func(i, j int) bool {
			return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp)
		})
		e := events.Items[len(events.Items)-1]
		return fmt.Sprintf("event %s from %s: %s", e.Reason, e.Source.Component, e.Message)
	}
	if f.CCM == nil {
		return "no Warning event about the node, and the CCM's log is not available"
	}
	log, err := f.CCM.Log(ctx)
	if err != nil {
		return fmt.Sprintf("no Warning event about the node; reading the CCM's log failed: %v", err)
	}
	var hits []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, nodeName) && !strings.Contains(line, "Initializing node") {
			hits = append(hits, strings.TrimSpace(line))
		}
	}
	if len(hits) == 0 {
		return "no Warning event about the node and no line of the CCM's log names it"
	}
	if len(hits) > 3 {
		hits = hits[len(hits)-3:]
	}
	return "CCM log: " + strings.Join(hits, "\n")
}

// SetNodeLabel sets (set true) or removes (set false) one label of a Node
// with a merge patch, which does not conflict with the kubelet's and the
// controllers' concurrent updates of the Node, and returns once the watch
// shows the change.
func (f *Framework) SetNodeLabel(ctx context.Context, node, key string, set bool, value string) error {
	var v any // JSON null removes the key
	if set {
		v = value
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	if err != nil {
		return err
	}
	patched, err := f.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("labelling node %s %s=%v: %w", node, key, v, err)
	}
	return f.NodeWritten(ctx, patched)
}

// FormatTaints renders taints as "key=value:Effect, key:Effect".
func FormatTaints(taints []corev1.Taint) string {
	parts := make([]string, len(taints))
	for i, t := range taints {
		parts[i] = t.Key
		if t.Value != "" {
			parts[i] += "=" + t.Value
		}
		parts[i] += ":" + string(t.Effect)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
