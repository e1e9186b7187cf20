package ccm

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Where a static pod CCM finds what it needs on the control-plane node.
const (
	// ControllerManagerKubeconfig is kube-controller-manager's kubeconfig
	// on a kubeadm (and kind) control-plane node. The static pod CCM uses
	// it, as the control plane's own static pods use theirs: its user,
	// system:kube-controller-manager, gets the CCM's rules by a binding.
	ControllerManagerKubeconfig = "/etc/kubernetes/controller-manager.conf"
	// controllerManagerUser is the user of ControllerManagerKubeconfig.
	controllerManagerUser = "system:kube-controller-manager"
	// StaticPodFilesRoot holds, on the node, one directory per run with
	// the files of ccm.image.files.
	StaticPodFilesRoot = "/etc/ccm-conformance"
)

// StaticPod is the CCM as a static pod of the control-plane node's kubelet,
// beside kube-controller-manager: a manifest in the kubelet's static pod
// directory (/etc/kubernetes/manifests on kubeadm and kind), the topology of
// control planes that run the CCM with the other control-plane components
// (OpenShift's, a kubeadm cluster's that adds it there). A static pod can
// use no ServiceAccount, ConfigMap or Secret, so the CCM runs with
// kube-controller-manager's kubeconfig from the node, as root (the file is
// root's alone, as for kube-controller-manager itself), and its files are
// files on the node, mounted from there. docs/ccm-deployment.md describes it.
type StaticPod struct {
	// Name of the pod (the kubelet names the mirror pod Name-<node>), its
	// container, the ClusterRole and ClusterRoleBinding, and the value of
	// LabelName; default StandardName.
	Name string
	// Image the container runs, never pulled. Required.
	Image string
	// Args as for StandardDeployment; the kubeconfig flags are set to
	// ControllerManagerKubeconfig.
	Args []string
	// Env of the container.
	Env map[string]string
	// Files are written to the node by the caller (NodeFiles) and mounted
	// read-only from there.
	Files []File
	// RunID labels the pod and the RBAC objects. Required.
	RunID string
}

// NodeFile is a file a static pod CCM needs on its node.
type NodeFile struct {
	Path    string
	Content string
	// Mode is the file's permission bits: 0600 for a secret.
	Mode uint32
}

func (s StaticPod) deployment() StandardDeployment {
	return StandardDeployment{Name: s.Name, Namespace: metav1.NamespaceSystem, Image: s.Image, Args: s.Args, Env: s.Env, Files: s.Files, RunID: s.RunID}.withDefaults()
}

// Selector is the label selector of the mirror pod, for Deployed.
func (s StaticPod) Selector() string { return s.deployment().Selector() }

// Deployed reads the CCM of this static pod through client.
func (s StaticPod) Deployed(client kubernetes.Interface) *Deployed {
	return s.deployment().Deployed(client)
}

// FilesDir is the directory on the node that holds the pod's files.
func (s StaticPod) FilesDir() string { return path.Join(StaticPodFilesRoot, s.RunID) }

// ManifestName is the file name of the manifest in the static pod
// directory.
func (s StaticPod) ManifestName() string { return s.deployment().Name + ".yaml" }

// ContainerArgs are the container's args: StandardDeployment's, with
// --kubeconfig, --authentication-kubeconfig and --authorization-kubeconfig
// set to ControllerManagerKubeconfig.
func (s StaticPod) ContainerArgs() []string {
	args := s.deployment().ContainerArgs()
	for _, name := range argsDropped {
		args = append(args, "--"+name+"="+ControllerManagerKubeconfig)
	}
	return args
}

// NodeFiles are the files to write on the node before the manifest: the
// files of s, in FilesDir, secrets readable by root alone.
func (s StaticPod) NodeFiles() []NodeFile {
	var out []NodeFile
	for i, f := range s.Files {
		mode := uint32(0o644)
		if f.Secret {
			mode = 0o600
		}
		out = append(out, NodeFile{Path: path.Join(s.FilesDir(), fileKey(i)), Content: f.Content, Mode: mode})
	}
	return out
}

// Manifest is the static pod's manifest (YAML) for the kubelet's static
// pod directory.
func (s StaticPod) Manifest() ([]byte, error) {
	pod, err := s.pod()
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(pod)
}

func (s StaticPod) pod() (*corev1.Pod, error) {
	d := s.deployment()
	if err := d.validate(); err != nil {
		return nil, fmt.Errorf("static pod of the CCM: %w", err)
	}
	hostFile := func(name, p string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: ptr.To(corev1.HostPathFile)}}}
	}
	volumes := []corev1.Volume{
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		hostFile("kubeconfig", ControllerManagerKubeconfig),
	}
	mounts := []corev1.VolumeMount{{Name: "kubeconfig", MountPath: ControllerManagerKubeconfig, ReadOnly: true}}
	for i, f := range s.NodeFiles() {
		name := fmt.Sprintf("file-%d", i)
		volumes = append(volumes, hostFile(name, f.Path))
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: s.Files[i].Path, ReadOnly: true})
	}
	c, err := ccmContainer(d.Name, d.Image, s.ContainerArgs(), d.Env, mounts)
	if err != nil {
		return nil, fmt.Errorf("static pod of the CCM: %w", err)
	}
	// kube-controller-manager's kubeconfig is root's alone (0600).
	c.SecurityContext.RunAsUser = ptr.To[int64](0)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: d.meta(d.Name, d.Namespace),
		Spec: corev1.PodSpec{
			HostNetwork:       true,
			PriorityClassName: "system-node-critical",
			SecurityContext:   &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers:        []corev1.Container{c},
			Volumes:           volumes,
		},
	}, nil
}

// RBAC are the objects that give kube-controller-manager's user the CCM's
// rules (StandardRules): a ClusterRole and its ClusterRoleBinding. That
// user already reads extension-apiserver-authentication (Kubernetes binds
// it so), which delegated authentication needs.
func (s StaticPod) RBAC() []runtime.Object {
	return s.deployment().clusterRole(StandardRules(), rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllerManagerUser})
}

// ApplyRBAC creates or updates the RBAC objects.
func (s StaticPod) ApplyRBAC(ctx context.Context, client kubernetes.Interface) error {
	return applyObjects(ctx, client, s.RBAC())
}

// DeleteRBAC removes the RBAC objects; what is gone already is no error.
func (s StaticPod) DeleteRBAC(ctx context.Context, client kubernetes.Interface) error {
	name := s.deployment().Name
	var errs []error
	if err := client.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting ClusterRoleBinding %s: %w", name, err))
	}
	if err := client.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting ClusterRole %s: %w", name, err))
	}
	return errors.Join(errs...)
}

// MirrorPodName is the name of the mirror pod the kubelet of node makes.
func (s StaticPod) MirrorPodName(node string) string { return s.deployment().Name + "-" + node }

// WaitReady waits until the mirror pod on node is Ready, at most timeout.
// Where the image is not in the node it says so at once. On timeout the
// error says what the pod shows.
func (s StaticPod) WaitReady(ctx context.Context, client kubernetes.Interface, node string, timeout time.Duration) error {
	name := s.MirrorPodName(node)
	last := "no mirror pod yet (the kubelet has not read the manifest)"
	switch poll(ctx, timeout, func(ctx context.Context) (done, hopeless bool) {
		pod, err := client.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			last = describePod(*pod, s.deployment().Name)
			return PodReady(pod), waitsForever(*pod)
		case !apierrors.IsNotFound(err) && ctx.Err() == nil:
			last = err.Error()
		}
		return false, false
	}) {
	case pollDone:
		return nil
	case pollHopeless:
		return fmt.Errorf("static pod %s/%s cannot start: %s", metav1.NamespaceSystem, name, last)
	case pollCancelled:
		return fmt.Errorf("waiting for static pod %s/%s: %w", metav1.NamespaceSystem, name, ctx.Err())
	}
	return fmt.Errorf("static pod %s/%s not ready within %s: %s", metav1.NamespaceSystem, name, timeout, last)
}

// WaitGone waits until the mirror pod on node is gone (its manifest
// removed), at most timeout.
func (s StaticPod) WaitGone(ctx context.Context, client kubernetes.Interface, node string, timeout time.Duration) error {
	name := s.MirrorPodName(node)
	switch poll(ctx, timeout, func(ctx context.Context) (done, hopeless bool) {
		_, err := client.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), false
	}) {
	case pollDone:
		return nil
	case pollCancelled:
		return fmt.Errorf("waiting for static pod %s/%s to go: %w", metav1.NamespaceSystem, name, ctx.Err())
	}
	return fmt.Errorf("static pod %s/%s still there %s after its manifest was removed", metav1.NamespaceSystem, name, timeout)
}

// PodReady says whether p's Ready condition is true.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
