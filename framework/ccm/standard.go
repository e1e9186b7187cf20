package ccm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Defaults and bounds of the standard deployment.
const (
	// StandardName is the default name of every object of the deployment.
	StandardName = "cloud-controller-manager"
	// StandardNamespace is the default namespace of the ServiceAccount and
	// the Deployment.
	StandardNamespace = "kube-system"
	// DefaultSecurePort is where a cloud-controller-manager serves HTTPS
	// /healthz when its args do not set --secure-port.
	DefaultSecurePort = 10258

	// LabelName and LabelManagedBy are the recommended labels
	// (app.kubernetes.io/...) every object of the deployment carries.
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "ccm-conformance"

	// authReaderRole is the built-in Role in kube-system that reads the
	// extension-apiserver-authentication ConfigMap (delegated authn).
	authReaderRole = "extension-apiserver-authentication-reader"

	// deploymentPoll is how often WaitAvailable asks; the wait as a whole
	// is bounded by the caller.
	deploymentPoll = time.Second
	// logRequestTimeout bounds the log read that a WaitAvailable error
	// quotes.
	logRequestTimeout = 10 * time.Second
	// logTailLines is how many of a pod's last log lines that error quotes.
	logTailLines = 15
)

// argsDropped are the flags the standard deployment removes from the
// profile's args: they name files on the harness's host, which the pod does
// not have; in the cluster the CCM uses its ServiceAccount (in-cluster
// config) for all three.
var argsDropped = []string{"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"}

// StandardDeployment is the CCM as the harness deploys it into a cluster
// whose nodes already have its image (kind's `load docker-image`): a
// ServiceAccount, its RBAC, and a one-replica Deployment on the
// control-plane node. docs/ccm-deployment.md describes each object.
type StandardDeployment struct {
	// Name of the ServiceAccount, ClusterRole, ClusterRoleBinding,
	// Deployment and container, and the value of LabelName; default
	// StandardName.
	Name string
	// Namespace of the ServiceAccount and Deployment; default
	// StandardNamespace. It must exist. The RoleBinding to
	// extension-apiserver-authentication-reader is always in kube-system,
	// where that Role is.
	Namespace string
	// Image the container runs, never pulled (imagePullPolicy Never): it
	// must be loaded into the nodes first. Required.
	Image string
	// Args from the profile, already expanded; they must set
	// --cloud-provider. Leader election is forced on and the kubeconfig
	// flags are dropped (see ContainerArgs).
	Args []string
	// Env of the container, in the order of its names.
	Env map[string]string
	// Files are mounted into the container read-only, each at its Path:
	// from a ConfigMap, or from a Secret for those marked Secret (both
	// named FilesName(Name)).
	Files []File
	// RunID is the value of LabelRun on every object, so that what a run
	// leaves can be found: kubectl get all,sa,configmap,secret,clusterrole,clusterrolebinding,rolebinding -A -l ccm-conformance.run=ID.
	// Required.
	RunID string
}

// File is a file the CCM's container sees at Path, with Content (a cloud
// configuration, credentials).
type File struct {
	Path    string
	Content string
	// Secret keeps the content in a Secret rather than a ConfigMap.
	Secret bool
}

// FilesName names the ConfigMap and the Secret that hold a deployment's
// files.
func FilesName(name string) string { return name + "-files" }

// fileKey is the key of the i-th file in its ConfigMap or Secret.
func fileKey(i int) string { return fmt.Sprintf("file-%d", i) }

// withDefaults fills Name and Namespace.
func (d StandardDeployment) withDefaults() StandardDeployment {
	if d.Name == "" {
		d.Name = StandardName
	}
	if d.Namespace == "" {
		d.Namespace = StandardNamespace
	}
	return d
}

// validate checks the fields after withDefaults; the caller names what
// they describe.
func (d StandardDeployment) validate() error {
	var errs []error
	for _, f := range []struct{ field, value string }{{"name", d.Name}, {"namespace", d.Namespace}} {
		for _, msg := range validation.IsDNS1123Label(f.value) {
			errs = append(errs, fmt.Errorf("%s %q: %s", f.field, f.value, msg))
		}
	}
	if d.Image == "" {
		errs = append(errs, errors.New("image is required"))
	}
	if d.RunID == "" {
		errs = append(errs, errors.New("run ID is required"))
	}
	for _, msg := range validation.IsValidLabelValue(d.RunID) {
		errs = append(errs, fmt.Errorf("run ID %q: %s", d.RunID, msg))
	}
	for _, k := range sortedKeys(d.Env) {
		for _, msg := range validation.IsEnvVarName(k) {
			errs = append(errs, fmt.Errorf("env %q: %s", k, msg))
		}
	}
	paths := map[string]bool{}
	for _, f := range d.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" || f.Path == "/tmp" || strings.HasPrefix(f.Path, "/tmp/") {
			errs = append(errs, fmt.Errorf("file %q: want a clean absolute path to a file outside /tmp", f.Path))
		}
		if paths[f.Path] {
			errs = append(errs, fmt.Errorf("file %q: given twice", f.Path))
		}
		paths[f.Path] = true
	}
	if v, ok := FlagValue(d.Args, "cloud-provider"); !ok || v == "" || strings.HasPrefix(v, "-") {
		errs = append(errs, errors.New("args: --cloud-provider=NAME is missing (the standard deployment runs the CCM with the profile's args, and a CCM needs its provider's name)"))
	}
	return errors.Join(errs...)
}

// ContainerArgs are the container's args: the profile's, with every
// --leader-elect (=false, =true, " false", bare) replaced by a single
// --leader-elect=true, added if absent, and --kubeconfig,
// --authentication-kubeconfig and --authorization-kubeconfig removed.
func (d StandardDeployment) ContainerArgs() []string {
	out := make([]string, 0, len(d.Args)+1)
	elect := false
	for i := 0; i < len(d.Args); i++ {
		a := d.Args[i]
		name, hasValue := flagName(a)
		switch {
		case name == "leader-elect":
			if !hasValue && i+1 < len(d.Args) && isBool(d.Args[i+1]) {
				i++ // "--leader-elect false": the value as its own word
			}
			if !elect {
				out = append(out, "--leader-elect=true")
				elect = true
			}
		case isDropped(name):
			if !hasValue && i+1 < len(d.Args) && !strings.HasPrefix(d.Args[i+1], "-") {
				i++ // "--kubeconfig PATH"
			}
		default:
			out = append(out, a)
		}
	}
	if !elect {
		out = append(out, "--leader-elect=true")
	}
	return out
}

// flagName is the name of the flag "--name[=value]" or "-name[=value]",
// and whether the value is in the same word; "" for an argument that is
// not a flag.
func flagName(a string) (name string, hasValue bool) {
	if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
		return "", false
	}
	name, _, hasValue = strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name, hasValue
}

func isBool(s string) bool {
	_, err := strconv.ParseBool(s)
	return err == nil
}

func isDropped(name string) bool {
	for _, n := range argsDropped {
		if name == n {
			return true
		}
	}
	return false
}

// Selector is the label selector of the CCM's pods (the Deployment's own),
// for Deployed.
func (d StandardDeployment) Selector() string {
	return labels.SelectorFromSet(d.withDefaults().selectorLabels()).String()
}

// Deployed reads the CCM of this deployment through client.
func (d StandardDeployment) Deployed(client kubernetes.Interface) *Deployed {
	d = d.withDefaults()
	return &Deployed{Client: client, Namespace: d.Namespace, LabelSelector: d.Selector(), Container: d.Name}
}

func (d StandardDeployment) selectorLabels() map[string]string {
	return map[string]string{LabelName: d.Name, LabelManagedBy: ManagedBy}
}

func (d StandardDeployment) labels() map[string]string {
	l := d.selectorLabels()
	l[LabelRun] = d.RunID
	return l
}

func (d StandardDeployment) meta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: d.labels()}
}

// authReaderBindingName is the RoleBinding's name in kube-system.
func (d StandardDeployment) authReaderBindingName() string {
	return d.Name + ":apiserver-authentication-reader"
}

// Objects are what Apply creates, in that order: ServiceAccount,
// ClusterRole, ClusterRoleBinding, RoleBinding, the ConfigMap and the
// Secret of the files (where there are such files), Deployment. The same
// deployment always gives the same objects.
func (d StandardDeployment) Objects() ([]runtime.Object, error) {
	d = d.withDefaults()
	if err := d.validate(); err != nil {
		return nil, fmt.Errorf("standard deployment of the CCM: %w", err)
	}
	dep, err := d.deployment()
	if err != nil {
		return nil, fmt.Errorf("standard deployment of the CCM: %w", err)
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: d.Name, Namespace: d.Namespace}
	objs := append([]runtime.Object{d.serviceAccount()}, d.clusterRole(StandardRules(), subject)...)
	return append(append(objs,
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: d.meta(d.authReaderBindingName(), metav1.NamespaceSystem),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: authReaderRole},
			Subjects:   []rbacv1.Subject{subject},
		}), append(d.fileObjects(), dep)...), nil
}

// serviceAccount is the ServiceAccount named d.Name in d.Namespace.
func (d StandardDeployment) serviceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: d.meta(d.Name, d.Namespace),
	}
}

// clusterRole is the ClusterRole named d.Name with rules and its
// ClusterRoleBinding to subject.
func (d StandardDeployment) clusterRole(rules []rbacv1.PolicyRule, subject rbacv1.Subject) []runtime.Object {
	return []runtime.Object{
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: d.meta(d.Name, ""),
			Rules:      rules,
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: d.meta(d.Name, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: d.Name},
			Subjects:   []rbacv1.Subject{subject},
		},
	}
}

// fileObjects are the ConfigMap and the Secret that hold the files, each
// only where it holds one.
func (d StandardDeployment) fileObjects() []runtime.Object {
	plain, secret := map[string]string{}, map[string][]byte{}
	for i, f := range d.Files {
		if f.Secret {
			secret[fileKey(i)] = []byte(f.Content)
		} else {
			plain[fileKey(i)] = f.Content
		}
	}
	var out []runtime.Object
	if len(plain) > 0 {
		out = append(out, &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: d.meta(FilesName(d.Name), d.Namespace),
			Data:       plain,
		})
	}
	if len(secret) > 0 {
		out = append(out, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: d.meta(FilesName(d.Name), d.Namespace),
			Type:       corev1.SecretTypeOpaque,
			Data:       secret,
		})
	}
	return out
}

// fileVolumes are the pod's volumes of the ConfigMap and the Secret of
// the files, and the container's mount of each file (a subPath at its
// Path, read-only).
func (d StandardDeployment) fileVolumes() ([]corev1.Volume, []corev1.VolumeMount) {
	const plainVolume, secretVolume = "files", "secret-files"
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	var plain, secret bool
	for i, f := range d.Files {
		volume := plainVolume
		if f.Secret {
			volume, secret = secretVolume, true
		} else {
			plain = true
		}
		mounts = append(mounts, corev1.VolumeMount{Name: volume, MountPath: f.Path, SubPath: fileKey(i), ReadOnly: true})
	}
	if plain {
		volumes = append(volumes, corev1.Volume{Name: plainVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: FilesName(d.Name)}},
		}})
	}
	if secret {
		volumes = append(volumes, corev1.Volume{Name: secretVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: FilesName(d.Name)},
		}})
	}
	return volumes, mounts
}

// StandardRules are the ClusterRole's rules: what the controllers of
// k8s.io/cloud-provider (cloud-node, cloud-node-lifecycle, service, route),
// its leader election and its secure serving do with the API, run with the
// CCM's own credentials (not --use-service-account-credentials).
func StandardRules() []rbacv1.PolicyRule {
	core := []string{""}
	return []rbacv1.PolicyRule{
		// cloud-node initializes nodes (addresses, provider ID, labels,
		// removing the uninitialized taint); cloud-node-lifecycle taints
		// shut-down nodes and deletes those the cloud no longer has; the
		// service and route controllers list and watch them.
		{APIGroups: core, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
		// cloud-node patches node addresses, the route controller the
		// NetworkUnavailable condition.
		{APIGroups: core, Resources: []string{"nodes/status"}, Verbs: []string{"patch", "update"}},
		// The service controller watches Services and patches its
		// finalizer onto those of type LoadBalancer.
		{APIGroups: core, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		// ... and writes their load balancer status.
		{APIGroups: core, Resources: []string{"services/status"}, Verbs: []string{"patch", "update"}},
		// Every controller records events (the core/v1 event sink).
		{APIGroups: core, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		// Leader election: a Lease in kube-system (--leader-elect-resource-lock=leases, the default).
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
		// Read only: what providers' load balancer code reads to pick
		// backends (externalTrafficPolicy: Local); the shared controllers do
		// not need it.
		{APIGroups: core, Resources: []string{"endpoints"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		// With --use-service-account-credentials the CCM makes one
		// ServiceAccount per controller and requests its tokens.
		{APIGroups: core, Resources: []string{"serviceaccounts"}, Verbs: []string{"create", "get"}},
		{APIGroups: core, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
		// Read only: provider configuration some CCMs read from a ConfigMap.
		{APIGroups: core, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		// Delegated authentication and authorization of requests to the
		// secure port (what system:auth-delegator grants); /healthz,
		// /readyz and /livez are always allowed, /metrics is not.
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}
}

// deployment is the Deployment; d has its defaults and is valid.
func (d StandardDeployment) deployment() (*appsv1.Deployment, error) {
	volumes, mounts := d.fileVolumes()
	c, err := ccmContainer(d.Name, d.Image, d.ContainerArgs(), d.Env, mounts)
	if err != nil {
		return nil, err
	}
	c.SecurityContext.RunAsNonRoot = ptr.To(true)
	noSchedule := func(key, value string) corev1.Toleration {
		op := corev1.TolerationOpExists
		if value != "" {
			op = corev1.TolerationOpEqual
		}
		return corev1.Toleration{Key: key, Operator: op, Value: value, Effect: corev1.TaintEffectNoSchedule}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: d.meta(d.Name, d.Namespace),
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To[int32](1),
			RevisionHistoryLimit: ptr.To[int32](2),
			Selector:             &metav1.LabelSelector{MatchLabels: d.selectorLabels()},
			// Never two CCMs at once: the old pod goes before the new starts.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: d.labels()},
				Spec: corev1.PodSpec{
					ServiceAccountName: d.Name,
					// The CCM initializes nodes, so it must run before the
					// CNI has made any pod network: on the node's network.
					HostNetwork:       true,
					DNSPolicy:         corev1.DNSClusterFirstWithHostNet,
					PriorityClassName: "system-cluster-critical",
					NodeSelector:      map[string]string{"node-role.kubernetes.io/control-plane": ""},
					Tolerations: []corev1.Toleration{
						// Every node waits for the CCM under this taint.
						noSchedule("node.cloudprovider.kubernetes.io/uninitialized", "true"),
						noSchedule("node-role.kubernetes.io/control-plane", ""),
						// The node is not ready until the CNI runs.
						noSchedule("node.kubernetes.io/not-ready", ""),
						{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
					},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{c},
					Volumes:    append([]corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, volumes...),
				},
			},
		},
	}, nil
}

// ccmContainer is the CCM's container, in a Deployment's pod or a static
// pod: the image never pulled, the args as given, POD_NAME and NODE_NAME
// from the downward API unless env sets them, the probes on its secure
// port, a read-only root filesystem with a writable /tmp (a volume named
// "tmp" the pod must have) and mounts.
func ccmContainer(name, image string, args []string, envs map[string]string, mounts []corev1.VolumeMount) (corev1.Container, error) {
	probe, err := livenessProbe(args)
	if err != nil {
		return corev1.Container{}, err
	}
	env := []corev1.EnvVar{}
	for _, f := range []struct{ name, path string }{{"POD_NAME", "metadata.name"}, {"NODE_NAME", "spec.nodeName"}} {
		if _, set := envs[f.name]; !set {
			env = append(env, corev1.EnvVar{Name: f.name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: f.path}}})
		}
	}
	for _, k := range sortedKeys(envs) {
		env = append(env, corev1.EnvVar{Name: k, Value: envs[k]})
	}
	sort.SliceStable(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return corev1.Container{
		Name:            name,
		Image:           image,
		ImagePullPolicy: corev1.PullNever,
		Args:            args,
		Env:             env,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		LivenessProbe:  probe,
		ReadinessProbe: readinessProbe(probe),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: append([]corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}, mounts...),
	}, nil
}

// livenessProbe is an HTTPS GET of /healthz on the CCM's --secure-port
// (DefaultSecurePort if unset), or none when the port is 0 (serving off).
// A --bind-address on loopback is probed there: the pod is on the node's
// network, as is the kubelet.
func livenessProbe(args []string) (*corev1.Probe, error) {
	port := DefaultSecurePort
	if v, ok := FlagValue(args, "secure-port"); ok {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("args: --secure-port=%q is not a port", v)
		}
		port = p
	}
	if port == 0 {
		return nil, nil
	}
	host := ""
	if v, ok := FlagValue(args, "bind-address"); ok {
		if ip := net.ParseIP(v); ip != nil && ip.IsLoopback() {
			host = v
		}
	}
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/healthz", Port: intstr.FromInt32(int32(port)), Host: host, Scheme: corev1.URISchemeHTTPS,
		}},
		InitialDelaySeconds: 15,
		PeriodSeconds:       10,
		TimeoutSeconds:      5,
		FailureThreshold:    3,
	}, nil
}

// readinessProbe is the liveness probe asked every second from the start,
// so that the pod is Ready (and the Deployment available) only once the
// CCM serves /healthz, never merely because its process started.
func readinessProbe(liveness *corev1.Probe) *corev1.Probe {
	if liveness == nil {
		return nil
	}
	p := liveness.DeepCopy()
	p.InitialDelaySeconds, p.PeriodSeconds, p.TimeoutSeconds, p.FailureThreshold = 0, 1, 1, 1
	return p
}

// Apply creates each object, or updates it to what Objects says where it
// exists (a leftover of an earlier run included). Applying twice changes
// nothing the second time.
func (d StandardDeployment) Apply(ctx context.Context, client kubernetes.Interface) error {
	objs, err := d.Objects()
	if err != nil {
		return err
	}
	return applyObjects(ctx, client, objs)
}

// applyObjects applies each of objs in order.
func applyObjects(ctx context.Context, client kubernetes.Interface, objs []runtime.Object) error {
	for _, o := range objs {
		if err := applyObject(ctx, client, o); err != nil {
			return err
		}
	}
	return nil
}

// typed is what each typed client of client-go offers for T.
type typed[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

func applyObject(ctx context.Context, client kubernetes.Interface, o runtime.Object) error {
	switch o := o.(type) {
	case *corev1.ServiceAccount:
		return createOrUpdate(ctx, client.CoreV1().ServiceAccounts(o.Namespace), o)
	case *rbacv1.ClusterRole:
		return createOrUpdate(ctx, client.RbacV1().ClusterRoles(), o)
	case *rbacv1.ClusterRoleBinding:
		return createOrUpdate(ctx, client.RbacV1().ClusterRoleBindings(), o)
	case *rbacv1.RoleBinding:
		return createOrUpdate(ctx, client.RbacV1().RoleBindings(o.Namespace), o)
	case *corev1.ConfigMap:
		return createOrUpdate(ctx, client.CoreV1().ConfigMaps(o.Namespace), o)
	case *corev1.Secret:
		return createOrUpdate(ctx, client.CoreV1().Secrets(o.Namespace), o)
	case *appsv1.Deployment:
		return createOrUpdate(ctx, client.AppsV1().Deployments(o.Namespace), o)
	case *appsv1.DaemonSet:
		return createOrUpdate(ctx, client.AppsV1().DaemonSets(o.Namespace), o)
	}
	return fmt.Errorf("applying objects: no client for %T", o)
}

// object is a typed API object such as *corev1.ServiceAccount.
type object interface {
	metav1.Object
	runtime.Object
}

func createOrUpdate[T object](ctx context.Context, c typed[T], want T) error {
	kind := want.GetObjectKind().GroupVersionKind().Kind
	_, err := c.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s: %w", kind, objectName(want), err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := c.Get(ctx, want.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := want.DeepCopyObject().(T)
		next.SetResourceVersion(have.GetResourceVersion())
		_, err = c.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating %s %s: %w", kind, objectName(want), err)
	}
	return nil
}

func objectName(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// Delete removes every object Apply makes, the Deployment first with
// foreground propagation (its ReplicaSet and pod go before it does); what
// is already gone is no error. It does not wait for the pod to end.
func (d StandardDeployment) Delete(ctx context.Context, client kubernetes.Interface) error {
	d = d.withDefaults()
	foreground := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}
	dels := []struct {
		what string
		del  func() error
	}{
		{"Deployment " + d.Namespace + "/" + d.Name, func() error {
			return client.AppsV1().Deployments(d.Namespace).Delete(ctx, d.Name, foreground)
		}},
		{"ConfigMap " + d.Namespace + "/" + FilesName(d.Name), func() error {
			return client.CoreV1().ConfigMaps(d.Namespace).Delete(ctx, FilesName(d.Name), metav1.DeleteOptions{})
		}},
		{"Secret " + d.Namespace + "/" + FilesName(d.Name), func() error {
			return client.CoreV1().Secrets(d.Namespace).Delete(ctx, FilesName(d.Name), metav1.DeleteOptions{})
		}},
		{"RoleBinding " + metav1.NamespaceSystem + "/" + d.authReaderBindingName(), func() error {
			return client.RbacV1().RoleBindings(metav1.NamespaceSystem).Delete(ctx, d.authReaderBindingName(), metav1.DeleteOptions{})
		}},
		{"ClusterRoleBinding " + d.Name, func() error {
			return client.RbacV1().ClusterRoleBindings().Delete(ctx, d.Name, metav1.DeleteOptions{})
		}},
		{"ClusterRole " + d.Name, func() error {
			return client.RbacV1().ClusterRoles().Delete(ctx, d.Name, metav1.DeleteOptions{})
		}},
		{"ServiceAccount " + d.Namespace + "/" + d.Name, func() error {
			return client.CoreV1().ServiceAccounts(d.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{})
		}},
	}
	var errs []error
	for _, x := range dels {
		if err := x.del(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", x.what, err))
		}
	}
	return errors.Join(errs...)
}

// waitingForever are container waiting reasons that no wait mends: the
// image is not in the node (pull policy Never) or its name is wrong.
var waitingForever = map[string]bool{"ErrImageNeverPull": true, "InvalidImageName": true}

// WaitAvailable waits until the Deployment has rolled out and its pod is
// available, at most timeout. On timeout, or at once where the image is
// not in the node, the error says what the Deployment and its pods show:
// phase, readiness, the container's waiting or terminated reason and
// restarts, and the last lines of its log.
func (d StandardDeployment) WaitAvailable(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	d = d.withDefaults()
	var lastErr error
	switch poll(ctx, timeout, func(ctx context.Context) (done, hopeless bool) {
		done, hopeless, lastErr = d.available(ctx, client)
		return done, hopeless
	}) {
	case pollDone:
		return nil
	case pollHopeless:
		return fmt.Errorf("CCM deployment %s/%s cannot become available: %s", d.Namespace, d.Name, d.describe(ctx, client))
	case pollCancelled:
		return fmt.Errorf("waiting for CCM deployment %s/%s: %w", d.Namespace, d.Name, ctx.Err())
	}
	msg := fmt.Sprintf("CCM deployment %s/%s not available within %s: %s", d.Namespace, d.Name, timeout, d.describe(ctx, client))
	if lastErr != nil {
		msg += fmt.Sprintf(" (last error: %v)", lastErr)
	}
	return errors.New(msg)
}

// pollOutcome is how a poll ended.
type pollOutcome int

const (
	pollDone pollOutcome = iota
	// pollHopeless: check saw a state no wait mends.
	pollHopeless
	pollTimedOut
	// pollCancelled: the caller's context ended first.
	pollCancelled
)

// poll asks check every deploymentPoll, with a context bounded by timeout,
// until it says done or hopeless, or the time is up.
func poll(ctx context.Context, timeout time.Duration, check func(context.Context) (done, hopeless bool)) pollOutcome {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		done, hopeless := check(waitCtx)
		switch {
		case done:
			return pollDone
		case hopeless:
			return pollHopeless
		}
		select {
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return pollCancelled
			}
			return pollTimedOut
		case <-time.After(deploymentPoll):
		}
	}
}

// waitsForever says whether a container of p waits for a reason no wait
// mends (waitingForever).
func waitsForever(p corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && waitingForever[cs.State.Waiting.Reason] {
			return true
		}
	}
	return false
}

// available says whether the Deployment's current generation is rolled out
// and available, and whether a pod waits for a reason no wait mends.
func (d StandardDeployment) available(ctx context.Context, client kubernetes.Interface) (done, hopeless bool, err error) {
	dep, err := client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return false, false, err
	}
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	s := dep.Status
	if s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas >= want && s.AvailableReplicas >= want {
		return true, false, nil
	}
	pods, err := client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: d.Selector()})
	if err != nil {
		return false, false, err
	}
	for _, p := range pods.Items {
		if waitsForever(p) {
			return false, true, nil
		}
	}
	return false, false, nil
}

// describe is one paragraph on the Deployment and its pods.
func (d StandardDeployment) describe(ctx context.Context, client kubernetes.Interface) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), logRequestTimeout)
	defer cancel()
	var parts []string
	dep, err := client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		parts = append(parts, fmt.Sprintf("the Deployment cannot be read: %v", err))
	default:
		s := dep.Status
		line := fmt.Sprintf("the Deployment has %d updated and %d available of %d replicas", s.UpdatedReplicas, s.AvailableReplicas, ptr.Deref(dep.Spec.Replicas, 1))
		for _, c := range s.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				line += fmt.Sprintf(", %s: %s", c.Type, c.Message)
			}
		}
		parts = append(parts, line)
	}
	pods, err := client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: d.Selector()})
	if err != nil {
		return strings.Join(append(parts, fmt.Sprintf("its pods cannot be listed: %v", err)), "; ")
	}
	if len(pods.Items) == 0 {
		return strings.Join(append(parts, fmt.Sprintf("no pod matches %s", d.Selector())), "; ")
	}
	var logs string
	for _, p := range pods.Items {
		parts = append(parts, describePod(p, d.Name))
		if logs == "" {
			logs = podLogTail(ctx, client, p, d.Name)
		}
	}
	msg := strings.Join(parts, "; ")
	if logs != "" {
		msg += "; last log lines:\n" + logs
	}
	return msg
}

// describePod says where a pod is, its phase and readiness, and how its
// container is.
func describePod(p corev1.Pod, container string) string {
	s := fmt.Sprintf("pod %s", p.Name)
	if p.Spec.NodeName != "" {
		s += " on " + p.Spec.NodeName
	}
	s += fmt.Sprintf(" is %s", p.Status.Phase)
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue:
			s += fmt.Sprintf(", not scheduled (%s: %s)", c.Reason, c.Message)
		case c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue:
			s += ", not ready"
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != container {
			continue
		}
		s += fmt.Sprintf(", container %s", cs.Name)
		if w := cs.State.Waiting; w != nil {
			s += " waiting: " + reason(w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			s += fmt.Sprintf(" terminated: %s (exit code %d)", reason(t.Reason, t.Message), t.ExitCode)
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			s += fmt.Sprintf(", last terminated: %s (exit code %d)", reason(t.Reason, t.Message), t.ExitCode)
		}
		s += fmt.Sprintf(", %d restarts", cs.RestartCount)
	}
	return s
}

func reason(r, msg string) string {
	if msg == "" {
		return r
	}
	return r + " (" + strings.TrimSpace(msg) + ")"
}

// podLogTail is the last log lines of the container, those of its
// previous run when it has restarted and does not run now, or "".
func podLogTail(ctx context.Context, client kubernetes.Interface, p corev1.Pod, container string) string {
	previous := false
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Running == nil && cs.RestartCount > 0 {
			previous = true
		}
	}
	opts := &corev1.PodLogOptions{Container: container, TailLines: ptr.To[int64](logTailLines), Previous: previous}
	stream, err := client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream(ctx)
	if err != nil {
		return ""
	}
	defer stream.Close()
	b, _ := io.ReadAll(io.LimitReader(stream, 64<<10))
	return strings.TrimRight(string(b), "\n")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
