package ccm

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func testDeployment() StandardDeployment {
	return StandardDeployment{
		Image: "ccm-conformance/reference-ccm:latest",
		Args:  []string{"--cloud-provider=reference", "--v=2"},
		Env:   map[string]string{"REFERENCE_CLOUD_ENDPOINT": "tcp://172.18.0.1:9000", "A": "1"},
		RunID: "95d79dbf1865",
	}
}

// deploymentOf picks the Deployment out of Objects.
func deploymentOf(t *testing.T, d StandardDeployment) *appsv1.Deployment {
	t.Helper()
	objs, err := d.Objects()
	if err != nil {
		t.Fatalf("Objects: %v", err)
	}
	for _, o := range objs {
		if dep, ok := o.(*appsv1.Deployment); ok {
			return dep
		}
	}
	t.Fatalf("Objects gave no Deployment: %v", objs)
	return nil
}

func TestStandardObjects(t *testing.T) {
	objs, err := testDeployment().Objects()
	if err != nil {
		t.Fatalf("Objects: %v", err)
	}
	var kinds []string
	for _, o := range objs {
		m := o.(metav1.Object)
		kind := o.GetObjectKind().GroupVersionKind().Kind
		kinds = append(kinds, kind+" "+objectName(m))
		want := map[string]string{LabelName: "cloud-controller-manager", LabelManagedBy: "ccm-conformance", LabelRun: "95d79dbf1865"}
		if !reflect.DeepEqual(m.GetLabels(), want) {
			t.Errorf("%s %s labels = %v, want %v", kind, m.GetName(), m.GetLabels(), want)
		}
	}
	wantKinds := []string{
		"ServiceAccount kube-system/cloud-controller-manager",
		"ClusterRole cloud-controller-manager",
		"ClusterRoleBinding cloud-controller-manager",
		"RoleBinding kube-system/cloud-controller-manager:apiserver-authentication-reader",
		"Deployment kube-system/cloud-controller-manager",
	}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("objects = %q, want %q", kinds, wantKinds)
	}
	rb := objs[3].(*rbacv1.RoleBinding)
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "extension-apiserver-authentication-reader" {
		t.Errorf("RoleBinding roleRef = %+v, want Role extension-apiserver-authentication-reader", rb.RoleRef)
	}
	crb := objs[2].(*rbacv1.ClusterRoleBinding)
	wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: "cloud-controller-manager", Namespace: "kube-system"}
	if len(crb.Subjects) != 1 || crb.Subjects[0] != wantSubject || crb.RoleRef.Name != "cloud-controller-manager" {
		t.Errorf("ClusterRoleBinding = %+v %+v, want the ServiceAccount bound to the ClusterRole", crb.RoleRef, crb.Subjects)
	}

	dep := objs[4].(*appsv1.Deployment)
	spec := dep.Spec.Template.Spec
	if *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %d, strategy %s; want 1, Recreate", *dep.Spec.Replicas, dep.Spec.Strategy.Type)
	}
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v, dnsPolicy %s; want true, ClusterFirstWithHostNet", spec.HostNetwork, spec.DNSPolicy)
	}
	if spec.PriorityClassName != "system-cluster-critical" || spec.ServiceAccountName != "cloud-controller-manager" {
		t.Errorf("priorityClassName %q, serviceAccountName %q", spec.PriorityClassName, spec.ServiceAccountName)
	}
	if v, ok := spec.NodeSelector["node-role.kubernetes.io/control-plane"]; !ok || v != "" || len(spec.NodeSelector) != 1 {
		t.Errorf("nodeSelector = %v, want only node-role.kubernetes.io/control-plane: \"\"", spec.NodeSelector)
	}
	for _, want := range []corev1.Toleration{
		{Key: "node.cloudprovider.kubernetes.io/uninitialized", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	} {
		if !slices.Contains(spec.Tolerations, want) {
			t.Errorf("tolerations %+v lack %+v", spec.Tolerations, want)
		}
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.Name != "cloud-controller-manager" || c.Image != "ccm-conformance/reference-ccm:latest" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("container %q image %q pull policy %s; want cloud-controller-manager, the image, Never", c.Name, c.Image, c.ImagePullPolicy)
	}
	if want := []string{"--cloud-provider=reference", "--v=2", "--leader-elect=true"}; !slices.Equal(c.Args, want) {
		t.Errorf("args = %q, want %q", c.Args, want)
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	if want := []string{"A", "NODE_NAME", "POD_NAME", "REFERENCE_CLOUD_ENDPOINT"}; !slices.Equal(env, want) {
		t.Errorf("env names = %q, want %q", env, want)
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext = %+v, want non-root, no privilege escalation, read-only root, drop ALL", sc)
	}
	if spec.SecurityContext == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot", spec.SecurityContext)
	}
	p := c.LivenessProbe
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Port.IntValue() != 10258 || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Host != "" {
		t.Errorf("livenessProbe = %+v, want HTTPS GET /healthz on 10258", p)
	}
}

func TestStandardContainerArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"absent", []string{"--cloud-provider=x"}, []string{"--cloud-provider=x", "--leader-elect=true"}},
		{"=false", []string{"--leader-elect=false", "--cloud-provider=x"}, []string{"--leader-elect=true", "--cloud-provider=x"}},
		{"separate false", []string{"--cloud-provider=x", "--leader-elect", "false", "--v=2"}, []string{"--cloud-provider=x", "--leader-elect=true", "--v=2"}},
		{"bare", []string{"--cloud-provider=x", "--leader-elect", "--v=2"}, []string{"--cloud-provider=x", "--leader-elect=true", "--v=2"}},
		{"single dash, twice", []string{"-leader-elect=false", "--cloud-provider=x", "--leader-elect=true"}, []string{"--leader-elect=true", "--cloud-provider=x"}},
		{"true kept", []string{"--cloud-provider=x", "--leader-elect=true"}, []string{"--cloud-provider=x", "--leader-elect=true"}},
		{"other leader-elect flags untouched", []string{"--cloud-provider=x", "--leader-elect-lease-duration=30s"}, []string{"--cloud-provider=x", "--leader-elect-lease-duration=30s", "--leader-elect=true"}},
		{
			"kubeconfigs dropped",
			[]string{"--kubeconfig=/run/x/kubeconfig", "--cloud-provider=x", "--authentication-kubeconfig", "/k", "--authorization-kubeconfig=/k", "--v=2"},
			[]string{"--cloud-provider=x", "--v=2", "--leader-elect=true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDeployment()
			d.Args = tt.args
			if got := d.ContainerArgs(); !slices.Equal(got, tt.want) {
				t.Errorf("ContainerArgs(%q) = %q, want %q", tt.args, got, tt.want)
			}
			if got := deploymentOf(t, d).Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, tt.want) {
				t.Errorf("container args = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStandardInvalid(t *testing.T) {
	tests := []struct {
		name   string
		change func(*StandardDeployment)
		want   string
	}{
		{"no --cloud-provider", func(d *StandardDeployment) { d.Args = []string{"--v=2"} }, "--cloud-provider=NAME is missing"},
		{"--cloud-provider without a value", func(d *StandardDeployment) { d.Args = []string{"--cloud-provider", "--v=2"} }, "--cloud-provider=NAME is missing"},
		{"no image", func(d *StandardDeployment) { d.Image = "" }, "image is required"},
		{"no run ID", func(d *StandardDeployment) { d.RunID = "" }, "run ID is required"},
		{"bad run ID", func(d *StandardDeployment) { d.RunID = "a b" }, `run ID "a b"`},
		{"bad name", func(d *StandardDeployment) { d.Name = "CCM" }, `name "CCM"`},
		{"bad env name", func(d *StandardDeployment) { d.Env = map[string]string{"A=B": "x"} }, `env "A=B"`},
		{"bad secure port", func(d *StandardDeployment) { d.Args = append(d.Args, "--secure-port=https") }, `--secure-port="https" is not a port`},
		{"relative file path", func(d *StandardDeployment) { d.Files = []File{{Path: "etc/cloud.conf"}} }, `file "etc/cloud.conf": want a clean absolute path`},
		{"file under /tmp", func(d *StandardDeployment) { d.Files = []File{{Path: "/tmp/cloud.conf"}} }, `file "/tmp/cloud.conf": want a clean absolute path to a file outside /tmp`},
		{"unclean file path", func(d *StandardDeployment) { d.Files = []File{{Path: "/etc/../cloud.conf"}} }, `file "/etc/../cloud.conf"`},
		{"file twice", func(d *StandardDeployment) { d.Files = []File{{Path: "/etc/a"}, {Path: "/etc/a", Secret: true}} }, `file "/etc/a": given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDeployment()
			tt.change(&d)
			objs, err := d.Objects()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Objects() = %d objects, %v; want an error containing %q", len(objs), err, tt.want)
			}
			if err := d.Apply(context.Background(), fake.NewClientset()); err == nil {
				t.Errorf("Apply of an invalid deployment succeeded")
			}
		})
	}
}

func TestStandardLivenessProbe(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPort int // 0: no probe
		wantHost string
	}{
		{"default port", nil, 10258, ""},
		{"--secure-port=", []string{"--secure-port=10300"}, 10300, ""},
		{"--secure-port PORT", []string{"--secure-port", "10301"}, 10301, ""},
		{"serving off", []string{"--secure-port=0"}, 0, ""},
		{"loopback bind address", []string{"--bind-address=127.0.0.1"}, 10258, "127.0.0.1"},
		{"any address", []string{"--bind-address=0.0.0.0"}, 10258, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDeployment()
			d.Args = append([]string{"--cloud-provider=x"}, tt.args...)
			p := deploymentOf(t, d).Spec.Template.Spec.Containers[0].LivenessProbe
			switch {
			case tt.wantPort == 0 && p != nil:
				t.Errorf("livenessProbe = %+v, want none", p)
			case tt.wantPort == 0:
			case p == nil || p.HTTPGet == nil:
				t.Errorf("no HTTP livenessProbe, want one on port %d", tt.wantPort)
			case p.HTTPGet.Port.IntValue() != tt.wantPort || p.HTTPGet.Host != tt.wantHost || p.HTTPGet.Scheme != corev1.URISchemeHTTPS:
				t.Errorf("livenessProbe %s://%s:%s, want HTTPS://%s:%d", p.HTTPGet.Scheme, p.HTTPGet.Host, p.HTTPGet.Port.String(), tt.wantHost, tt.wantPort)
			}
		})
	}
}

func TestStandardDeterministic(t *testing.T) {
	d := testDeployment()
	d.Env = map[string]string{"Z": "1", "B": "2", "M": "3", "A": "4", "POD_NAME": "mine"}
	first, err := d.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		again, err := d.Objects()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("two calls of Objects differ:\n%+v\n%+v", first, again)
		}
	}
	// The profile's POD_NAME wins over the downward API's.
	env := deploymentOf(t, d).Spec.Template.Spec.Containers[0].Env
	for _, e := range env {
		if e.Name == "POD_NAME" && (e.Value != "mine" || e.ValueFrom != nil) {
			t.Errorf("POD_NAME = %+v, want the profile's value", e)
		}
	}
}

func TestStandardSelector(t *testing.T) {
	for _, d := range []StandardDeployment{testDeployment(), {Name: "ccm-x", Namespace: "ccm", Image: "i", Args: []string{"--cloud-provider=x"}, RunID: "r"}} {
		dep := deploymentOf(t, d)
		sel, err := labels.Parse(d.Selector())
		if err != nil {
			t.Fatalf("Selector %q: %v", d.Selector(), err)
		}
		if !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("Selector %q does not match the pod template's labels %v", d.Selector(), dep.Spec.Template.Labels)
		}
		specSel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
		if err != nil || specSel.String() != d.Selector() {
			t.Errorf("Deployment selector %q (%v), want %q", specSel, err, d.Selector())
		}
		dd := d.Deployed(fake.NewClientset())
		if dd.LabelSelector != d.Selector() || dd.Container != dep.Spec.Template.Spec.Containers[0].Name || dd.Namespace != dep.Namespace {
			t.Errorf("Deployed = %+v, want the deployment's selector, container and namespace", dd)
		}
	}
}

// current reads back the objects of d from the fake cluster.
func current(t *testing.T, ctx context.Context, c *fake.Clientset, d StandardDeployment) []runtime.Object {
	t.Helper()
	d = d.withDefaults()
	var out []runtime.Object
	add := func(o runtime.Object, err error) {
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		out = append(out, o)
	}
	add(c.CoreV1().ServiceAccounts(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{}))
	add(c.RbacV1().ClusterRoles().Get(ctx, d.Name, metav1.GetOptions{}))
	add(c.RbacV1().ClusterRoleBindings().Get(ctx, d.Name, metav1.GetOptions{}))
	add(c.RbacV1().RoleBindings("kube-system").Get(ctx, d.authReaderBindingName(), metav1.GetOptions{}))
	if len(d.Files) > 0 {
		add(c.CoreV1().ConfigMaps(d.Namespace).Get(ctx, FilesName(d.Name), metav1.GetOptions{}))
		add(c.CoreV1().Secrets(d.Namespace).Get(ctx, FilesName(d.Name), metav1.GetOptions{}))
	}
	add(c.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{}))
	for _, o := range out {
		m := o.(metav1.Object)
		m.SetResourceVersion("")
	}
	return out
}

// Files reach the container read-only at their paths: plain ones from a
// ConfigMap, secret ones from a Secret, each object only where it holds a
// file, and the Secret's content never in the ConfigMap.
func TestStandardFiles(t *testing.T) {
	tests := []struct {
		name          string
		files         []File
		wantConfigMap map[string]string
		wantSecret    map[string][]byte
		wantMounts    []corev1.VolumeMount
		wantVolumes   []string
	}{
		{name: "none", wantVolumes: []string{"tmp"}},
		{
			name:          "a cloud config and credentials",
			files:         []File{{Path: "/etc/cloud/cloud.conf", Content: "endpoint: x\n"}, {Path: "/etc/cloud/credentials", Content: "s3cr3t", Secret: true}},
			wantConfigMap: map[string]string{"file-0": "endpoint: x\n"},
			wantSecret:    map[string][]byte{"file-1": []byte("s3cr3t")},
			wantMounts: []corev1.VolumeMount{
				{Name: "files", MountPath: "/etc/cloud/cloud.conf", SubPath: "file-0", ReadOnly: true},
				{Name: "secret-files", MountPath: "/etc/cloud/credentials", SubPath: "file-1", ReadOnly: true},
			},
			wantVolumes: []string{"tmp", "files", "secret-files"},
		},
		{
			name:        "only a secret",
			files:       []File{{Path: "/etc/key.json", Content: "{}", Secret: true}},
			wantSecret:  map[string][]byte{"file-0": []byte("{}")},
			wantMounts:  []corev1.VolumeMount{{Name: "secret-files", MountPath: "/etc/key.json", SubPath: "file-0", ReadOnly: true}},
			wantVolumes: []string{"tmp", "secret-files"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDeployment()
			d.Files = tt.files
			objs, err := d.Objects()
			if err != nil {
				t.Fatal(err)
			}
			var configMap map[string]string
			var secret map[string][]byte
			var dep *appsv1.Deployment
			for _, o := range objs {
				switch o := o.(type) {
				case *corev1.ConfigMap:
					if o.Name != "cloud-controller-manager-files" || o.Labels[LabelRun] != d.RunID {
						t.Errorf("ConfigMap %s/%s, labels %v", o.Namespace, o.Name, o.Labels)
					}
					configMap = o.Data
				case *corev1.Secret:
					if o.Name != "cloud-controller-manager-files" || o.Labels[LabelRun] != d.RunID {
						t.Errorf("Secret %s/%s, labels %v", o.Namespace, o.Name, o.Labels)
					}
					secret = o.Data
				case *appsv1.Deployment:
					dep = o
				}
			}
			if !reflect.DeepEqual(configMap, tt.wantConfigMap) || !reflect.DeepEqual(secret, tt.wantSecret) {
				t.Errorf("ConfigMap %v, Secret %v; want %v, %v", configMap, secret, tt.wantConfigMap, tt.wantSecret)
			}
			mounts := dep.Spec.Template.Spec.Containers[0].VolumeMounts[1:]
			if len(mounts) != len(tt.wantMounts) || (len(mounts) > 0 && !reflect.DeepEqual(mounts, tt.wantMounts)) {
				t.Errorf("mounts %+v, want %+v", mounts, tt.wantMounts)
			}
			var volumes []string
			for _, v := range dep.Spec.Template.Spec.Volumes {
				volumes = append(volumes, v.Name)
			}
			if !slices.Equal(volumes, tt.wantVolumes) {
				t.Errorf("volumes %v, want %v", volumes, tt.wantVolumes)
			}
		})
	}
}

func TestStandardApplyIdempotent(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	d := testDeployment()
	d.Files = []File{{Path: "/etc/cloud/cloud.conf", Content: "endpoint: x\n"}, {Path: "/etc/cloud/key", Content: "k", Secret: true}}
	want, err := d.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if err := d.Apply(ctx, c); err != nil {
			t.Fatalf("Apply #%d: %v", i, err)
		}
		got := current(t, ctx, c, d)
		for j := range want {
			if !reflect.DeepEqual(stripTypeMeta(got[j]), stripTypeMeta(want[j])) {
				t.Errorf("after Apply #%d, object %d =\n%+v\nwant\n%+v", i, j, got[j], want[j])
			}
		}
	}

	// A leftover of another run, with another image, is brought to this one.
	next := d
	next.RunID, next.Image = "second", "ccm:v2"
	if err := next.Apply(ctx, c); err != nil {
		t.Fatalf("Apply over an earlier run: %v", err)
	}
	dep, err := c.AppsV1().Deployments("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Labels[LabelRun] != "second" || dep.Spec.Template.Spec.Containers[0].Image != "ccm:v2" {
		t.Errorf("after Apply of run second: labels %v, image %s", dep.Labels, dep.Spec.Template.Spec.Containers[0].Image)
	}
	deps, _ := c.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if len(deps.Items) != 1 {
		t.Errorf("%d Deployments, want 1", len(deps.Items))
	}
}

// stripTypeMeta drops what the fake client adds or may not keep: type
// meta, resource version, managed fields.
func stripTypeMeta(o runtime.Object) runtime.Object {
	o = o.DeepCopyObject()
	if m, ok := o.(metav1.Object); ok {
		m.SetResourceVersion("")
		m.SetManagedFields(nil)
	}
	switch o := o.(type) {
	case *corev1.ServiceAccount:
		o.TypeMeta = metav1.TypeMeta{}
	case *rbacv1.ClusterRole:
		o.TypeMeta = metav1.TypeMeta{}
	case *rbacv1.ClusterRoleBinding:
		o.TypeMeta = metav1.TypeMeta{}
	case *rbacv1.RoleBinding:
		o.TypeMeta = metav1.TypeMeta{}
	case *corev1.ConfigMap:
		o.TypeMeta = metav1.TypeMeta{}
	case *corev1.Secret:
		o.TypeMeta = metav1.TypeMeta{}
	case *appsv1.Deployment:
		o.TypeMeta = metav1.TypeMeta{}
	}
	return o
}

func TestStandardDelete(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	d := testDeployment()
	if err := d.Apply(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
	if err := d.Delete(ctx, c); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	var deleted []string
	for _, a := range c.Actions() {
		da, ok := a.(k8stesting.DeleteActionImpl)
		if !ok {
			continue
		}
		deleted = append(deleted, da.GetResource().Resource+" "+da.GetName())
		if da.GetResource().Resource == "deployments" {
			if p := da.DeleteOptions.PropagationPolicy; p == nil || *p != metav1.DeletePropagationForeground {
				t.Errorf("Deployment deleted with propagation %v, want Foreground", p)
			}
		}
	}
	wantDeleted := []string{
		"deployments cloud-controller-manager",
		"configmaps cloud-controller-manager-files",
		"secrets cloud-controller-manager-files",
		"rolebindings cloud-controller-manager:apiserver-authentication-reader",
		"clusterrolebindings cloud-controller-manager",
		"clusterroles cloud-controller-manager",
		"serviceaccounts cloud-controller-manager",
	}
	if !slices.Equal(deleted, wantDeleted) {
		t.Errorf("deleted %q, want %q", deleted, wantDeleted)
	}
	if _, err := c.AppsV1().Deployments("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment after Delete: %v, want NotFound", err)
	}
	if _, err := c.RbacV1().ClusterRoles().Get(ctx, "cloud-controller-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole after Delete: %v, want NotFound", err)
	}
	// Again, with nothing left: no error.
	if err := d.Delete(ctx, c); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

func TestStandardWaitAvailable(t *testing.T) {
	ctx := context.Background()
	d := testDeployment()
	crashing := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cloud-controller-manager-7d9f-x2v", Namespace: "kube-system", Labels: deploymentOf(t, d).Spec.Template.Labels},
		Spec:       corev1.PodSpec{NodeName: "kind-control-plane"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:         "cloud-controller-manager",
				RestartCount: 4,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "CrashLoopBackOff", Message: "back-off 1m20s restarting failed container",
				}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}},
			}},
		},
	}
	neverPull := *crashing.DeepCopy()
	neverPull.Status.Phase = corev1.PodPending
	neverPull.Status.ContainerStatuses[0].RestartCount = 0
	neverPull.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{}
	neverPull.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{
		Reason: "ErrImageNeverPull", Message: `Container image "ccm-conformance/reference-ccm:latest" is not present with pull policy of Never`,
	}

	tests := []struct {
		name      string
		pod       *corev1.Pod
		status    appsv1.DeploymentStatus
		timeout   time.Duration
		wantErr   []string // all of these in the error; none: no error
		wantQuick bool     // returns well before the timeout
	}{
		{
			name:    "available",
			status:  appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1},
			timeout: time.Second,
		},
		{
			name:    "crash loop",
			pod:     &crashing,
			status:  appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1},
			timeout: 50 * time.Millisecond,
			wantErr: []string{
				"CCM deployment kube-system/cloud-controller-manager not available within 50ms",
				"1 updated and 0 available of 1 replicas",
				"pod cloud-controller-manager-7d9f-x2v on kind-control-plane is Running, not ready",
				"waiting: CrashLoopBackOff (back-off 1m20s restarting failed container)",
				"last terminated: Error (exit code 1), 4 restarts",
				"4 restarts; last log lines:\nI1201 starting\nF1201 cloud provider \"reference\" not found",
			},
		},
		{
			name:      "image not in the node",
			pod:       &neverPull,
			timeout:   time.Minute,
			wantQuick: true,
			wantErr:   []string{"cannot become available", "ErrImageNeverPull", "is Pending"},
		},
		{
			name:    "no pod",
			timeout: 50 * time.Millisecond,
			wantErr: []string{"not available within 50ms", "no pod matches app.kubernetes.io/managed-by=ccm-conformance,app.kubernetes.io/name=cloud-controller-manager"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset()
			c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "log" {
					return false, nil, nil
				}
				opts := a.(k8stesting.GenericActionImpl).Value.(*corev1.PodLogOptions)
				if !opts.Previous {
					return true, &runtime.Unknown{Raw: []byte("(current container)\n")}, nil
				}
				return true, &runtime.Unknown{Raw: []byte("I1201 starting\nF1201 cloud provider \"reference\" not found\n")}, nil
			})
			if err := d.Apply(ctx, c); err != nil {
				t.Fatal(err)
			}
			dep, err := c.AppsV1().Deployments("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dep.Generation = 1
			dep.Status = tt.status
			if _, err := c.AppsV1().Deployments("kube-system").UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tt.pod != nil {
				if _, err := c.CoreV1().Pods("kube-system").Create(ctx, tt.pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			err = d.WaitAvailable(ctx, c, tt.timeout)
			took := time.Since(start)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("WaitAvailable: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("WaitAvailable succeeded, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "\n\n") {
				t.Errorf("error is not one paragraph:\n%v", err)
			}
			if tt.wantQuick && took > 5*time.Second {
				t.Errorf("WaitAvailable took %s, want it to give up at once", took)
			}
		})
	}
}
