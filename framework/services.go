package framework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// LoadBalancerCleanupFinalizer is the finalizer the service controller puts
// on a Service whose cloud load balancer it owns.
const LoadBalancerCleanupFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// NamespaceLabel marks namespaces the harness made, so that leftovers of an
// interrupted run can be found.
const NamespaceLabel = "ccm-conformance.dev/namespace"

// CreateNamespace makes a namespace with a unique name for one spec. The
// caller deletes it with DeleteNamespace (usually through DeferCleanup).
func (f *Framework) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   UniqueName("ccm-" + prefix),
		Labels: map[string]string{NamespaceLabel: "true"},
	}}
	created, err := f.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	return created.Name, nil
}

// DeleteNamespace deletes a namespace; a namespace already gone is fine.
func (f *Framework) DeleteNamespace(ctx context.Context, name string) error {
	err := f.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	return nil
}

// DeleteService deletes a Service; one already gone is fine. Specs pass it
// to DeferCleanup right after creating a Service.
func (f *Framework) DeleteService(ctx context.Context, namespace, name string) error {
	err := f.Client.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Service %s/%s: %w", namespace, name, err)
	}
	return nil
}

// LoadBalancerService returns a Service of type LoadBalancer with one TCP
// port 80, for a spec to adjust before creating it.
func LoadBalancerService(namespace, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080),
			}},
		},
	}
}

// LoadBalancerService returns LoadBalancerService's template with the
// profile's loadBalancer.serviceAnnotations: the Service every spec that
// wants a cloud load balancer starts from.
func (f *Framework) LoadBalancerService(namespace, name string) *corev1.Service {
	svc := LoadBalancerService(namespace, name)
	if a := f.Profile.LoadBalancer.ServiceAnnotations; len(a) > 0 {
		svc.Annotations = maps.Clone(a)
	}
	return svc
}

// ServiceRef names a Service for the cloud driver.
func ServiceRef(svc *corev1.Service) clouddriver.ServiceRef {
	return clouddriver.ServiceRef{Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID)}
}

// EligibleBackends returns the names of the nodes the service controller
// of k8s.io/cloud-provider hands to the cloud as a load balancer's
// backends, by the rules of its stable node set: the node is not being
// deleted, not excluded (the label
// node.kubernetes.io/exclude-from-external-load-balancers, read with
// strconv.ParseBool: a value that does not parse excludes too), and not
// tainted ToBeDeletedByClusterAutoscaler. Readiness is not a rule: a
// NotReady node stays a backend.
//
// The rules are mirrored, not called: in k8s.io/cloud-provider v0.37.2
// they are the unexported predicates of controllers/service
// (nodeNotDeletedPredicate, nodeIncludedPredicate, nodeUnTaintedPredicate
// in stableNodeSetPredicates), and nothing exported applies them to a
// node. TestEligibleBackends pins each case to what those predicates do.
func EligibleBackends(nodes []corev1.Node) []string {
	var out []string
	for i := range nodes {
		if notBackend(&nodes[i]) == "" {
			out = append(out, nodes[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

// CheckBackends says what is wrong with a cloud load balancer's backends
// got, given the cluster's nodes and how the provider declares its load
// balancers pick backends (profile loadBalancer.backends), or returns nil.
// Either way no backend may be a node the service controller leaves out
// (excluded, autoscaler-tainted, being deleted) or a node the cluster does
// not have, and a load balancer with an eligible node to take must have a
// backend: an empty list is no subset. With BackendsAll every eligible
// node must be there. A cluster with no eligible node checks only that
// none is registered; a spec that needs a backend to judge calls
// RequireBackendNodes first.
func CheckBackends(mode string, nodes []corev1.Node, got []string) error {
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	var wrong []string
	for _, b := range got {
		n, ok := byName[b]
		switch {
		case !ok:
			wrong = append(wrong, b+" (no such node)")
		case notBackend(n) != "":
			wrong = append(wrong, b+" ("+notBackend(n)+")")
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("expected no backend that the service controller leaves out, saw %s", strings.Join(wrong, ", "))
	}
	eligible := EligibleBackends(nodes)
	switch {
	case mode == profile.BackendsSubset && len(eligible) > 0 && len(got) == 0:
		return fmt.Errorf("expected at least one of the eligible nodes %v as a backend (the profile declares a subset), saw none", eligible)
	case mode != profile.BackendsSubset && !slices.Equal(Sorted(got), eligible):
		return fmt.Errorf("expected the eligible nodes %v as backends, saw %v", eligible, Sorted(got))
	}
	return nil
}

// ToBeDeletedTaint is the taint the cluster autoscaler puts on a node it is
// about to delete; the service controller drops such nodes from backends.
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// notBackend says why the service controller leaves the node out of load
// balancer backends, or returns "" when it is one (EligibleBackends).
func notBackend(n *corev1.Node) string {
	if !n.DeletionTimestamp.IsZero() {
		return "being deleted"
	}
	if HasTaint(n, ToBeDeletedTaint) {
		return "tainted " + ToBeDeletedTaint
	}
	if v, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok {
		if excluded, err := strconv.ParseBool(v); err != nil || excluded {
			return fmt.Sprintf("labelled %s=%q", corev1.LabelNodeExcludeBalancers, v)
		}
	}
	return ""
}

// NoBackendsReason says why no node of nodes can be a load balancer
// backend, or returns "" when at least one can. A spec that needs traffic
// to reach a backend, or a backend to take away, skips with it: on a
// cluster without such a node it can show nothing about the CCM.
func NoBackendsReason(nodes []corev1.Node) string {
	if len(nodes) == 0 {
		return "the cluster has no nodes, so no load balancer can have a backend"
	}
	if len(EligibleBackends(nodes)) > 0 {
		return ""
	}
	const shown = 3
	var why []string
	for i := range nodes {
		if len(why) == shown {
			why = append(why, fmt.Sprintf("%d more", len(nodes)-shown))
			break
		}
		why = append(why, nodes[i].Name+" "+notBackend(&nodes[i]))
	}
	return fmt.Sprintf("none of the cluster's %d nodes can be a load balancer backend (%s)", len(nodes), strings.Join(why, "; "))
}

// RequireBackendNodes skips the current spec, saying why, unless at least
// one node of the cluster can be a load balancer backend.
func (f *Framework) RequireBackendNodes() {
	if reason := NoBackendsReason(f.View().Nodes()); reason != "" {
		skip(reason + "; the spec needs at least one")
	}
}

// ExpectedPorts is what the cloud load balancer of svc must listen on.
func ExpectedPorts(svc *corev1.Service) []clouddriver.Port {
	out := make([]clouddriver.Port, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		out = append(out, clouddriver.Port{Protocol: proto, Port: p.Port, NodePort: p.NodePort})
	}
	return SortPorts(out)
}

// SortPorts orders ports by port, then protocol, for comparison.
func SortPorts(ports []clouddriver.Port) []clouddriver.Port {
	out := append([]clouddriver.Port(nil), ports...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out
}

// FormatPorts renders ports as "TCP 80->30080, UDP 53->30053".
func FormatPorts(ports []clouddriver.Port) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s %d->%d", p.Protocol, p.Port, p.NodePort)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// Sorted returns a sorted copy.
func Sorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

// ServiceEventReasons lists the reasons of the events about a Service.
func (f *Framework) ServiceEventReasons(ctx context.Context, svc *corev1.Service) ([]string, error) {
	events, err := f.Client.CoreV1().Events(svc.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "Service"),
			fields.OneTermEqualSelector("involvedObject.name", svc.Name),
		).String(),
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Reason)
	}
	return out, nil
}

// LastWarning quotes the newest Warning event about an object ("Warning
// SyncLoadBalancerFailed from service-controller: ..."), or returns "" when
// there is none or the events cannot be read: the controller's reason for
// not doing what a spec waits for.
func (f *Framework) LastWarning(ctx context.Context, kind, namespace, name string) string {
	events, err := f.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", kind),
			fields.OneTermEqualSelector("involvedObject.name", name),
			fields.OneTermEqualSelector("type", corev1.EventTypeWarning),
		).String(),
	})
	if err != nil || len(events.Items) == 0 {
		return ""
	}
	newest := slices.MaxFunc(events.Items, func(a, b corev1.Event) int {
		return a.LastTimestamp.Compare(b.LastTimestamp.Time)
	})
	return fmt.Sprintf("Warning %s from %s: %s", newest.Reason, newest.Source.Component, strings.TrimSpace(newest.Message))
}

// IngressAddresses renders a Service's load balancer ingress.
func IngressAddresses(svc *corev1.Service) string {
	var parts []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			parts = append(parts, in.IP)
		}
		if in.Hostname != "" {
			parts = append(parts, in.Hostname)
		}
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// HasFinalizer reports whether the object has the finalizer.
func HasFinalizer(meta metav1.Object, finalizer string) bool {
	for _, f := range meta.GetFinalizers() {
		if f == finalizer {
			return true
		}
	}
	return false
}
