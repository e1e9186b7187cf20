package ccm

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Deployed is a CCM that already runs in the cluster under test. The
// harness does not start or stop it; it reads its pods' logs.
type Deployed struct {
	Client        kubernetes.Interface
	Namespace     string
	LabelSelector string
	Container     string
	// TailLines, when above 0, keeps only each pod's last TailLines log
	// lines: a CCM that has run for weeks logged more than a run needs,
	// and the run's part is at the end.
	TailLines int64
}

// Pods lists the CCM's pods.
func (d *Deployed) Pods(ctx context.Context) ([]corev1.Pod, error) {
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: d.LabelSelector})
	if err != nil {
		return nil, fmt.Errorf("listing CCM pods %q in %s: %w", d.LabelSelector, d.Namespace, err)
	}
	return pods.Items, nil
}

// WaitReady checks that at least one pod of the CCM runs.
func (d *Deployed) WaitReady(ctx context.Context) error {
	pods, err := d.Pods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			return nil
		}
	}
	return fmt.Errorf("no running pod of the CCM in namespace %s matches %q (found %d pods)", d.Namespace, d.LabelSelector, len(pods))
}

// Image reads the image and image digest of the CCM from its pods'
// container statuses: the container named Container, else each pod's
// first. A kubelet reports them once the container has started.
func (d *Deployed) Image(ctx context.Context) (image, digest string, err error) {
	pods, err := d.Pods(ctx)
	if err != nil {
		return "", "", err
	}
	for _, pod := range pods {
		name := d.Container
		if name == "" && len(pod.Spec.Containers) > 0 {
			name = pod.Spec.Containers[0].Name
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == name && cs.ImageID != "" {
				return cs.Image, ImageDigest(cs.ImageID), nil
			}
		}
	}
	return "", "", fmt.Errorf("no pod in namespace %s matching %q reports its container's image yet", d.Namespace, d.LabelSelector)
}

// ImageDigest takes the digest out of a container status's imageID
// ("docker-pullable://registry/ccm@sha256:…", "registry/ccm@sha256:…" or
// "sha256:…"); "" when it holds none.
func ImageDigest(imageID string) string {
	if i := strings.LastIndex(imageID, "@"); i >= 0 {
		return imageID[i+1:]
	}
	if strings.HasPrefix(imageID, "sha256:") {
		return imageID
	}
	return ""
}

// Log returns the logs of every CCM pod, each headed by the pod's name:
// of the container named Container, else of each pod's first, as Image
// reads them; with TailLines, only the last lines of each.
func (d *Deployed) Log(ctx context.Context) (string, error) {
	pods, err := d.Pods(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range pods {
		container := d.Container
		if container == "" && len(p.Spec.Containers) > 0 {
			container = p.Spec.Containers[0].Name
		}
		logOptions := func(previous bool) *corev1.PodLogOptions {
			opts := &corev1.PodLogOptions{Container: container, Previous: previous}
			if d.TailLines > 0 {
				opts.TailLines = &d.TailLines
			}
			return opts
		}
		if restarted(p) {
			// A CCM that crashed said why in its previous container's log.
			if stream, err := d.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, logOptions(true)).Stream(ctx); err == nil {
				fmt.Fprintf(&b, "== %s (the container before its last restart)\n", p.Name)
				_, _ = io.Copy(&b, io.LimitReader(stream, maxPodLog))
				stream.Close()
			}
		}
		stream, err := d.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, logOptions(false)).Stream(ctx)
		if err != nil {
			fmt.Fprintf(&b, "== %s: log unavailable: %v\n", p.Name, err)
			continue
		}
		fmt.Fprintf(&b, "== %s\n", p.Name)
		_, err = io.Copy(&b, io.LimitReader(stream, maxPodLog))
		stream.Close()
		if err != nil {
			fmt.Fprintf(&b, "\n== %s: log cut short: %v\n", p.Name, err)
		}
	}
	return b.String(), nil
}

// maxPodLog bounds what Log reads of one container's log. With TailLines
// at most a few MB (klog lines are about 200 bytes), it never cuts the
// end, where the run's part is.
const maxPodLog = 16 << 20

// restarted says whether a container of the pod has restarted.
func restarted(p corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			return true
		}
	}
	return false
}
