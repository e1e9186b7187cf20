package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	cloudproviderapi "k8s.io/cloud-provider/api"
	nodehelpers "k8s.io/cloud-provider/node/helpers"

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

// UninitializedNodes lists the names of the cluster's nodes that carry the
// uninitialized taint, sorted.
func UninitializedNodes(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var names []string
	for i := range list.Items {
		if Uninitialized(&list.Items[i]) {
			names = append(names, list.Items[i].Name)
		}
	}
	slices.Sort(names)
	return names, nil
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
	if node == nil {
		return nil
	}
	v, ok := node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]
	if !ok || v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// ExpectedAddresses is what a conformant CCM puts in a node's
// status.addresses, given the instance's addresses in the cloud and what the
// kubelet registered the node with. It is built as k8s.io/cloud-provider's
// node controller builds it (controllers/node/node_controller.go,
// updateNodeAddress, v0.37.2):
//   - the cloud's addresses;
//   - when the cloud reports no Hostname address, the kubelet's Hostname
//     address is kept (the kubelet with --cloud-provider=external always
//     registers one: its hostname, which is also its kubernetes.io/hostname
//     label, see KubeletHostname);
//   - with node IPs (the alpha.kubernetes.io/provided-node-ip annotation,
//     KEP-3705), what node/helpers.GetNodeAddressesFromNodeIP makes of that
//     list: each node IP (with the type the cloud gives it) first, in the
//     annotation's order, then every address of another type. A node IP the
//     cloud does not report is an error: the CCM must not initialize such a
//     node.
func ExpectedAddresses(cloud []clouddriver.Address, kubelet KubeletRegistration) ([]corev1.NodeAddress, error) {
	out := make([]corev1.NodeAddress, 0, len(cloud)+1)
	hasHostname := false
	for _, a := range cloud {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
		hasHostname = hasHostname || a.Type == string(corev1.NodeHostName)
	}
	if !hasHostname && kubelet.Hostname != "" {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: kubelet.Hostname})
	}
	if len(kubelet.NodeIPs) == 0 {
		return out, nil
	}
	want, err := nodehelpers.GetNodeAddressesFromNodeIP(strings.Join(kubelet.NodeIPs, ","), out)
	if err != nil {
		return nil, fmt.Errorf("node IPs %s against the instance's addresses [%s]: %w", strings.Join(kubelet.NodeIPs, ","), FormatAddresses(cloud), err)
	}
	return want, nil
}

// KubeletRegistration is what a kubelet with --cloud-provider=external puts
// on its Node that the node controller builds the addresses on.
type KubeletRegistration struct {
	// Hostname is the kubelet's Hostname address; "" when it registered
	// none.
	Hostname string
	// NodeIPs are its --node-ip values, from the provided-node-ip
	// annotation; nil without one.
	NodeIPs []string
}

// RegisteredBy returns what the node's kubelet registered it with: its node
// IPs from the annotation and its hostname from the kubernetes.io/hostname
// label. The label, not status.addresses, is read: the kubelet sets the label
// to the hostname it also registers as the Hostname address
// (pkg/kubelet/kubelet_node_status.go, initialNode; nodestatus.NodeAddress),
// and a CCM cannot be judged by addresses it wrote itself.
func RegisteredBy(node *corev1.Node) KubeletRegistration {
	return KubeletRegistration{Hostname: KubeletHostname(node), NodeIPs: ProvidedNodeIPs(node)}
}

// KubeletHostname is the hostname the node's kubelet registered with (its
// kubernetes.io/hostname label), or "".
func KubeletHostname(node *corev1.Node) string {
	if node == nil {
		return ""
	}
	return node.Labels[corev1.LabelHostname]
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
// newest Warning event about the node if there is one, otherwise the CCM's
// log lines that give a reason about the node's initialization
// (NodeInitReasons). The upstream node controller emits only a Normal
// "Synced" event on success and logs its failures, so the log is often the
// only place a reason is given.
func (f *Framework) CCMReason(ctx context.Context, nodeName string) string {
	if w := f.LastWarning(ctx, "Node", metav1.NamespaceAll, nodeName); w != "" {
		return w
	}
	if f.CCM == nil {
		return "no Warning event about the node, and the CCM's log is not available"
	}
	log, err := f.CCM.Log(ctx)
	if err != nil {
		return fmt.Sprintf("no Warning event about the node; reading the CCM's log failed: %v", err)
	}
	reasons := NodeInitReasons(log, nodeName)
	if len(reasons) == 0 {
		return "no Warning event about the node, and no line of the CCM's log gives a reason about its initialization"
	}
	return "CCM log: " + strings.Join(reasons, "\n")
}

// maxReasonLines is how many distinct reasons NodeInitReasons returns.
const maxReasonLines = 3

// nodeControllerSource is the file of k8s.io/cloud-provider's cloud node
// controller, which initializes nodes; klog names it in each line's header
// ("node_controller.go:236]").
const nodeControllerSource = "node_controller.go"

var (
	// logSource finds the source file a log line names: klog's header
	// ("I1201 11:41:38.125001   12345 node_controller.go:236] ...") or a
	// JSON logger's caller ("caller":"node/node_controller.go:236").
	logSource = regexp.MustCompile(`([A-Za-z0-9_.-]+\.go):\d+`)
	// klogHeader is the prefix of a klog text line, up to the message.
	klogHeader = regexp.MustCompile(`^([IWEF])\d{4} [0-9:.]+ +\d+ [^ \]]+\] `)
	// failureWords mark a line that says something went wrong or was not done.
	failureWords = regexp.MustCompile(`(?i)\b(error|errors|fail|failed|failure|invalid|not valid|not found|unable|could not|couldn't|cannot|skip|skipping)\b`)
	// nodeIPWords mark a line about the provided node IP
	// (alpha.kubernetes.io/provided-node-ip, the kubelet's --node-ip).
	nodeIPWords = regexp.MustCompile(`(?i)provided[- ]node[- ]ip|node[- ]ip`)
)

// NodeInitReasons returns the lines of a CCM log that give a reason about
// the initialization of node, the most recent distinct ones last: the cloud
// node controller's lines about it that report a failure or a skip (the
// upstream controller logs "error syncing 'NODE': failed to get node
// modifiers from cloud provider: provided node ip for node "NODE" is not
// valid: ..."), and any other warning or failure about its provided node
// IP. Lines that merely name the node (the route controller creating its
// routes, the node controller starting or finishing its initialization)
// are no reason and are left out.
func NodeInitReasons(log, node string) []string {
	lines := strings.Split(log, "\n")
	var out []string
	seen := map[string]bool{} // messages without their header
	// From the newest line back, so that of a message the controller
	// repeats on every retry the newest occurrence is kept.
	for i := len(lines) - 1; i >= 0 && len(out) < maxReasonLines; i-- {
		line := strings.TrimSpace(lines[i])
		if line == "" || !namesNode(line, node) || !initReason(line) {
			continue
		}
		if key := klogHeader.ReplaceAllString(line, ""); !seen[key] {
			seen[key] = true
			out = append(out, line)
		}
	}
	slices.Reverse(out)
	return out
}

// initReason reports whether a log line that names a node gives a reason
// about its initialization.
func initReason(line string) bool {
	source := ""
	if m := logSource.FindStringSubmatch(line); m != nil {
		source = m[1]
	}
	if source == nodeControllerSource {
		return failureWords.MatchString(line)
	}
	if !nodeIPWords.MatchString(line) {
		return false
	}
	if m := klogHeader.FindStringSubmatch(line); m != nil && (m[1] == "W" || m[1] == "E" || m[1] == "F") {
		return true
	}
	return failureWords.MatchString(line)
}

// namesNode reports whether line contains name as a whole node name, not
// as part of a longer one (n1 is not named by "n12" or "n1-b").
func namesNode(line, name string) bool {
	nameChar := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
	}
	for from := 0; ; {
		i := strings.Index(line[from:], name)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(name)
		before := i == 0 || !(nameChar(line[i-1]) || line[i-1] == '.')
		after := end == len(line) || !nameChar(line[end]) &&
			!(line[end] == '.' && end+1 < len(line) && nameChar(line[end+1]))
		if before && after {
			return true
		}
		from = i + 1
	}
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

// SetNodeTaint adds (set true) or removes (set false) the taint with
// taint's key on a Node, and returns once the watch shows the change. The
// taints are one list, so this reads and updates the Node, retrying on
// conflicts with the kubelet's and the controllers' updates.
func (f *Framework) SetNodeTaint(ctx context.Context, node string, taint corev1.Taint, set bool) error {
	var updated *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := f.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == taint.Key })
		if set {
			n.Spec.Taints = append(n.Spec.Taints, taint)
		}
		updated, err = f.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		verb := "removing taint " + taint.Key + " from"
		if set {
			verb = "tainting"
		}
		return fmt.Errorf("%s node %s (%s): %w", verb, node, taint.Key, err)
	}
	return f.NodeWritten(ctx, updated)
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
