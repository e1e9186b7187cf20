package ccm

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func TestStaticPodManifest(t *testing.T) {
	sp := StaticPod{
		Image: "ccm-conformance/reference-ccm:latest", RunID: "r1",
		Args: []string{"--cloud-provider=reference", "--kubeconfig=/home/me/kubeconfig", "--leader-elect=false", "--secure-port=10300"},
		Env:  map[string]string{"REGION": "r"},
		Files: []File{
			{Path: "/etc/cloud/cloud.yaml", Content: "endpoint: x\n", Secret: true},
			{Path: "/etc/cloud/zones", Content: "a\n"},
		},
	}
	data, err := sp.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		t.Fatalf("the manifest is not a Pod: %v\n%s", err, data)
	}
	if pod.Kind != "Pod" || pod.Namespace != "kube-system" || pod.Name != StandardName || !pod.Spec.HostNetwork {
		t.Errorf("pod %s %s/%s hostNetwork %v; want a Pod kube-system/%s on the host network", pod.Kind, pod.Namespace, pod.Name, pod.Spec.HostNetwork, StandardName)
	}
	if pod.Spec.ServiceAccountName != "" {
		t.Errorf("a static pod cannot use a ServiceAccount, got %q", pod.Spec.ServiceAccountName)
	}
	c := pod.Spec.Containers[0]
	wantArgs := []string{"--cloud-provider=reference", "--leader-elect=true", "--secure-port=10300",
		"--kubeconfig=" + ControllerManagerKubeconfig, "--authentication-kubeconfig=" + ControllerManagerKubeconfig, "--authorization-kubeconfig=" + ControllerManagerKubeconfig}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q, want %q", c.Args, wantArgs)
	}
	if c.ImagePullPolicy != corev1.PullNever || c.SecurityContext.RunAsUser == nil || *c.SecurityContext.RunAsUser != 0 {
		t.Errorf("pull policy %s, user %v; want Never and root (the kubeconfig is root's)", c.ImagePullPolicy, c.SecurityContext.RunAsUser)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Port.IntValue() != 10300 {
		t.Errorf("readiness probe %+v, want /healthz on 10300", c.ReadinessProbe)
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
		if v.Secret != nil || v.ConfigMap != nil {
			t.Errorf("volume %s refers to an API object, which a static pod cannot", v.Name)
		}
	}
	mounted := map[string]string{}
	for _, m := range c.VolumeMounts {
		if p, ok := hostPaths[m.Name]; ok {
			mounted[m.MountPath] = p
			if !m.ReadOnly {
				t.Errorf("mount %s is writable", m.MountPath)
			}
		}
	}
	want := map[string]string{
		ControllerManagerKubeconfig: ControllerManagerKubeconfig,
		"/etc/cloud/cloud.yaml":     "/etc/ccm-conformance/r1/file-0",
		"/etc/cloud/zones":          "/etc/ccm-conformance/r1/file-1",
	}
	for in, node := range want {
		if mounted[in] != node {
			t.Errorf("%s is mounted from node path %q, want %q", in, mounted[in], node)
		}
	}
	files := sp.NodeFiles()
	if len(files) != 2 || files[0].Mode != 0o600 || files[1].Mode != 0o644 || files[0].Content != "endpoint: x\n" {
		t.Errorf("node files %+v: want the secret 0600, the other 0644", files)
	}
	if sp.MirrorPodName("kind-control-plane") != StandardName+"-kind-control-plane" || sp.ManifestName() != StandardName+".yaml" {
		t.Errorf("mirror pod %q, manifest %q", sp.MirrorPodName("kind-control-plane"), sp.ManifestName())
	}
	rbac := sp.RBAC()
	binding, ok := rbac[1].(*rbacv1.ClusterRoleBinding)
	if !ok || len(binding.Subjects) != 1 || binding.Subjects[0].Kind != rbacv1.UserKind || binding.Subjects[0].Name != "system:kube-controller-manager" {
		t.Errorf("the binding %+v: want kube-controller-manager's user bound", rbac[1])
	}
}

func TestStaticPodManifestRefusesBadInput(t *testing.T) {
	for _, tt := range []struct {
		name string
		sp   StaticPod
		want string
	}{
		{"no image", StaticPod{RunID: "r", Args: []string{"--cloud-provider=x"}}, "image is required"},
		{"no provider", StaticPod{RunID: "r", Image: "i"}, "--cloud-provider=NAME is missing"},
		{"a file in /tmp", StaticPod{RunID: "r", Image: "i", Args: []string{"--cloud-provider=x"}, Files: []File{{Path: "/tmp/x"}}}, `file "/tmp/x"`},
	} {
		_, err := tt.sp.Manifest()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "static pod of the CCM: ") {
			t.Errorf("%s: error %v, want one starting with \"static pod of the CCM: \" that says %q", tt.name, err, tt.want)
		}
	}
}
