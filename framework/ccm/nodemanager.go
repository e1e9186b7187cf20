package ccm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// NodeManagerName is the default name of a node manager DaemonSet's
// objects (Azure names its own cloud-node-manager too).
const NodeManagerName = "cloud-node-manager"

// NodeManagerDaemonSet is a provider's cloud node manager as it runs in a
// cluster: a DaemonSet with a pod on every node, each initializing its own
// node (the --node-name the harness gives it from the pod's node), while
// the CCM runs the other controllers. Azure's cloud-node-manager runs so.
// It has a ServiceAccount and the rules of node initialization alone.
// docs/ccm-deployment.md describes each object.
type NodeManagerDaemonSet struct {
	// Name of the ServiceAccount, ClusterRole, ClusterRoleBinding,
	// DaemonSet and container; default NodeManagerName.
	Name string
	// Namespace of the ServiceAccount and DaemonSet; default kube-system.
	Namespace string
	// Image the container runs, never pulled. Required.
	Image string
	// Args, already expanded; --node-name=$(NODE_NAME) is added.
	Args []string
	// Env of the container; NODE_NAME is the pod's node.
	Env map[string]string
	// RunID labels every object. Required.
	RunID string
}

// withDefaults fills Name and Namespace.
func (n NodeManagerDaemonSet) withDefaults() NodeManagerDaemonSet {
	d := n.deployment()
	n.Name, n.Namespace = d.Name, d.Namespace
	return n
}

// deployment gives the labels, meta and validation it shares with the
// CCM's Deployment.
func (n NodeManagerDaemonSet) deployment() StandardDeployment {
	return StandardDeployment{Name: cmp.Or(n.Name, NodeManagerName), Namespace: n.Namespace, Image: n.Image, Env: n.Env, RunID: n.RunID}.withDefaults()
}

// Selector is the label selector of the node manager's pods.
func (n NodeManagerDaemonSet) Selector() string { return n.deployment().Selector() }

// Deployed reads the node manager's pods and logs through client.
func (n NodeManagerDaemonSet) Deployed(client kubernetes.Interface) *Deployed {
	return n.deployment().Deployed(client)
}

// NodeManagerRules are the ClusterRole's rules: what k8s.io/cloud-provider's
// cloud node controller does with the API for its node.
func NodeManagerRules() []rbacv1.PolicyRule {
	core := []string{""}
	return []rbacv1.PolicyRule{
		// It reads its Node, sets its providerID, labels and taints.
		{APIGroups: core, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		// ... and its addresses.
		{APIGroups: core, Resources: []string{"nodes/status"}, Verbs: []string{"patch", "update"}},
		{APIGroups: core, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
	}
}

// Objects are what Apply creates, in that order: ServiceAccount,
// ClusterRole, ClusterRoleBinding, DaemonSet.
func (n NodeManagerDaemonSet) Objects() ([]runtime.Object, error) {
	n = n.withDefaults()
	d := n.deployment()
	var errs []error
	for _, msg := range validation.IsDNS1123Label(n.Name) {
		errs = append(errs, fmt.Errorf("name %q: %s", n.Name, msg))
	}
	if n.Image == "" {
		errs = append(errs, errors.New("image is required"))
	}
	if n.RunID == "" {
		errs = append(errs, errors.New("run ID is required"))
	}
	for _, a := range n.Args {
		if name, _ := flagName(a); name == "node-name" {
			errs = append(errs, fmt.Errorf("args: %s: the DaemonSet gives each pod its node's name", a))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("node manager DaemonSet: %w", err)
	}
	args := append(append([]string(nil), n.Args...), "--node-name=$(NODE_NAME)")
	env := []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	for _, k := range sortedKeys(n.Env) {
		if k != "NODE_NAME" {
			env = append(env, corev1.EnvVar{Name: k, Value: n.Env[k]})
		}
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: n.Name, Namespace: n.Namespace}
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "DaemonSet"},
		ObjectMeta: d.meta(n.Name, n.Namespace),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: d.selectorLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: d.labels()},
				Spec: corev1.PodSpec{
					ServiceAccountName: n.Name,
					// It initializes its node, so it runs before the node
					// has a pod network and whatever its taints.
					HostNetwork:       true,
					PriorityClassName: "system-node-critical",
					Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					NodeSelector:      map[string]string{corev1.LabelOSStable: "linux"},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            n.Name,
						Image:           n.Image,
						ImagePullPolicy: corev1.PullNever,
						Args:            args,
						Env:             env,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("20m"),
							corev1.ResourceMemory: resource.MustParse("32Mi"),
						}},
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot:             ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
	objs := append([]runtime.Object{d.serviceAccount()}, d.clusterRole(NodeManagerRules(), subject)...)
	return append(objs, ds), nil
}

// Apply creates each object, or updates it where it exists.
func (n NodeManagerDaemonSet) Apply(ctx context.Context, client kubernetes.Interface) error {
	objs, err := n.Objects()
	if err != nil {
		return err
	}
	return applyObjects(ctx, client, objs)
}

// Delete removes every object Apply makes, the DaemonSet first (its pods
// with it); what is gone already is no error. It does not wait.
func (n NodeManagerDaemonSet) Delete(ctx context.Context, client kubernetes.Interface) error {
	n = n.withDefaults()
	background := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	var errs []error
	for _, x := range []struct {
		what string
		del  func() error
	}{
		{"DaemonSet", func() error { return client.AppsV1().DaemonSets(n.Namespace).Delete(ctx, n.Name, background) }},
		{"ClusterRoleBinding", func() error { return client.RbacV1().ClusterRoleBindings().Delete(ctx, n.Name, metav1.DeleteOptions{}) }},
		{"ClusterRole", func() error { return client.RbacV1().ClusterRoles().Delete(ctx, n.Name, metav1.DeleteOptions{}) }},
		{"ServiceAccount", func() error {
			return client.CoreV1().ServiceAccounts(n.Namespace).Delete(ctx, n.Name, metav1.DeleteOptions{})
		}},
	} {
		if err := x.del(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", x.what, n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// WaitRunning waits until the DaemonSet's current generation has a running
// pod on every node it schedules to, at most timeout. A pod whose image is
// not in its node ends the wait at once.
func (n NodeManagerDaemonSet) WaitRunning(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	n = n.withDefaults()
	last, stuck := "no DaemonSet status yet", ""
	switch poll(ctx, timeout, func(ctx context.Context) (done, hopeless bool) {
		ds, err := client.AppsV1().DaemonSets(n.Namespace).Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, false
		}
		s := ds.Status
		last = fmt.Sprintf("%d of %d pods scheduled, %d updated, %d available", s.CurrentNumberScheduled, s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberAvailable)
		if s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
			s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled {
			return true, false
		}
		pods, err := client.CoreV1().Pods(n.Namespace).List(ctx, metav1.ListOptions{LabelSelector: n.Selector()})
		if err != nil {
			return false, false
		}
		for _, p := range pods.Items {
			if waitsForever(p) {
				stuck = describePod(p, n.Name)
				return false, true
			}
		}
		return false, false
	}) {
	case pollDone:
		return nil
	case pollHopeless:
		return fmt.Errorf("node manager DaemonSet %s/%s cannot run: %s", n.Namespace, n.Name, stuck)
	case pollCancelled:
		return fmt.Errorf("waiting for node manager DaemonSet %s/%s: %w", n.Namespace, n.Name, ctx.Err())
	}
	return fmt.Errorf("node manager DaemonSet %s/%s not running on every node within %s: %s", n.Namespace, n.Name, timeout, last)
}
