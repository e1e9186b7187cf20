package ccm

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestImageDigestOfContainerStatus(t *testing.T) {
	tests := []struct{ imageID, want string }{
		{"docker-pullable://registry.k8s.io/ccm@sha256:0123abcd", "sha256:0123abcd"},
		{"registry.example/my-cloud/ccm@sha256:feed", "sha256:feed"},
		{"sha256:4a5b6c", "sha256:4a5b6c"},
		{"registry.example/ccm:v1", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ImageDigest(tt.imageID); got != tt.want {
			t.Errorf("ImageDigest(%q) = %q, want %q", tt.imageID, got, tt.want)
		}
	}
}

func TestDeployedImage(t *testing.T) {
	pod := func(name string, containers []string, statuses ...corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"app": "ccm"}}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		}
		p.Status.ContainerStatuses = statuses
		return p
	}
	started := corev1.ContainerStatus{Name: "ccm", Image: "registry.example/ccm:v1", ImageID: "docker-pullable://registry.example/ccm@sha256:c1"}
	sidecar := corev1.ContainerStatus{Name: "proxy", Image: "registry.example/proxy:v2", ImageID: "sha256:p2"}
	for _, tt := range []struct {
		name             string
		container        string
		pods             []*corev1.Pod
		wantImage, wantD string
		wantErr          bool
	}{
		{name: "the first container", pods: []*corev1.Pod{pod("a", []string{"ccm", "proxy"}, sidecar, started)}, wantImage: "registry.example/ccm:v1", wantD: "sha256:c1"},
		{name: "the named container", container: "proxy", pods: []*corev1.Pod{pod("a", []string{"ccm", "proxy"}, started, sidecar)}, wantImage: "registry.example/proxy:v2", wantD: "sha256:p2"},
		{name: "a pod not started yet, then one that is", pods: []*corev1.Pod{pod("a", []string{"ccm"}, corev1.ContainerStatus{Name: "ccm"}), pod("b", []string{"ccm"}, started)}, wantImage: "registry.example/ccm:v1", wantD: "sha256:c1"},
		{name: "no pod reports it", pods: []*corev1.Pod{pod("a", []string{"ccm"})}, wantErr: true},
		{name: "no pod", wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, p := range tt.pods {
				if _, err := client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			d := &Deployed{Client: client, Namespace: "kube-system", LabelSelector: "app=ccm", Container: tt.container}
			image, digest, err := d.Image(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error: %v", err, tt.wantErr)
			}
			if image != tt.wantImage || digest != tt.wantD {
				t.Errorf("got %q %q, want %q %q", image, digest, tt.wantImage, tt.wantD)
			}
		})
	}
}
