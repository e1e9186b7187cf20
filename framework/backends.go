package framework

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
)

// DefaultEchoImage is the echo server image the harness loads into kind's
// nodes for the data path specs (`make images`, docs/images.md).
const DefaultEchoImage = "ccm-conformance/echo-server:latest"

// The echo server's ports in the backend pods (cmd/echo-server's defaults):
// TCP and UDP answer on EchoPort; HTTP on EchoHTTPPort, GET / with the
// same answer line and GET /healthz for the readiness probe.
const (
	EchoPort     = 8080
	EchoHTTPPort = 8081
	// echoDrain is how long a terminating echo pod keeps answering, so
	// that kube-proxy drops its endpoint before it stops listening.
	echoDrain = "3s"
	// backendsPoll is how often the wait for ready backends looks.
	backendsPoll = 250 * time.Millisecond
	// backendsTimeout bounds that wait: the cluster's scheduling and
	// start of a pod whose image the nodes have, not the CCM's work, so
	// no profile timeout applies.
	backendsTimeout = 2 * time.Minute
)

// EchoBackends is a Deployment of the echo server whose pods carry the
// label app=<App>, which LoadBalancerService selects: the real pods behind
// a Service on a cluster of real nodes. On simulated nodes there are none;
// the simulated kube-proxy answers with the node's name instead.
type EchoBackends struct {
	Namespace, App string
}

// EchoBackendsRequest describes the Deployment.
type EchoBackendsRequest struct {
	Namespace, App string
	Replicas       int32
	// Unready pods carry the label but never pass their readiness probe
	// (it asks a port nothing serves): endpoints that must get no traffic.
	Unready bool
	// NodeName pins the pods to one node; "" lets the scheduler choose.
	NodeName string
	// Deployment names the Deployment, for several of one App; default App.
	Deployment string
}

// DeployEchoBackends creates the Deployment of r with the profile's echo
// image and, unless r.Unready, waits until r.Replicas pods are ready.
func (f *Framework) DeployEchoBackends(ctx context.Context, r EchoBackendsRequest) (*EchoBackends, error) {
	if f.EchoImage == "" {
		return nil, fmt.Errorf("no echo server image: the harness has none for this cluster")
	}
	name := cmp.Or(r.Deployment, r.App)
	if r.Unready {
		name += "-unready"
	}
	podLabels := map[string]string{"app": r.App, "echo.ccm-conformance/deployment": name}
	readiness := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(EchoHTTPPort)}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	if r.Unready {
		readiness.HTTPGet.Port = intstr.FromInt32(EchoHTTPPort + 1)
	}
	downward := func(env, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(r.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			// A rolling update adds a new pod before it takes an old one
			// away, as a serving Deployment should.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					NodeName:                      r.NodeName,
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
					Containers: []corev1.Container{{
						Name:            "echo",
						Image:           f.EchoImage,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            []string{"--drain=" + echoDrain},
						Env:             []corev1.EnvVar{downward("POD_NAME", "metadata.name"), downward("NODE_NAME", "spec.nodeName")},
						Ports: []corev1.ContainerPort{
							{Name: "tcp", ContainerPort: EchoPort, Protocol: corev1.ProtocolTCP},
							{Name: "udp", ContainerPort: EchoPort, Protocol: corev1.ProtocolUDP},
							{Name: "health", ContainerPort: EchoHTTPPort, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: readiness,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
	if _, err := f.Client.AppsV1().Deployments(r.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the echo Deployment %s/%s: %w", r.Namespace, name, err)
	}
	b := &EchoBackends{Namespace: r.Namespace, App: r.App}
	if r.Unready {
		return b, f.waitPodsRunning(ctx, r.Namespace, podLabels, int(r.Replicas))
	}
	return b, f.waitPodsReady(ctx, r.Namespace, podLabels, int(r.Replicas))
}

// ReadyPods returns the backends' ready pods, pod name to node name: the
// endpoints traffic may reach.
func (b *EchoBackends) ReadyPods(ctx context.Context, f *Framework) (map[string]string, error) {
	pods, err := f.Client.CoreV1().Pods(b.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": b.App}.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods app=%s in %s: %w", b.App, b.Namespace, err)
	}
	ready := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && ccm.PodReady(&p) {
			ready[p.Name] = p.Spec.NodeName
		}
	}
	return ready, nil
}

// waitPodsReady waits until the Deployment has n ready pods, at most
// backendsTimeout; the error names each pod's state.
func (f *Framework) waitPodsReady(ctx context.Context, ns string, podLabels map[string]string, n int) error {
	return f.waitPods(ctx, ns, podLabels, n, "ready", ccm.PodReady)
}

func (f *Framework) waitPodsRunning(ctx context.Context, ns string, podLabels map[string]string, n int) error {
	return f.waitPods(ctx, ns, podLabels, n, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}

func (f *Framework) waitPods(ctx context.Context, ns string, podLabels map[string]string, n int, what string, ok func(*corev1.Pod) bool) error {
	timeout := backendsTimeout
	deadline := time.Now().Add(timeout)
	selector := labels.Set(podLabels).String()
	for {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		var states []string
		good := 0
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if ok(p) {
					good++
				}
				states = append(states, p.Name+" "+podState(p))
			}
		}
		if good >= n {
			return nil
		}
		if time.Now().After(deadline) {
			slices.Sort(states)
			return fmt.Errorf("pods %s in %s: expected %d %s within %s, saw %d: [%s] (last error: %v)",
				selector, ns, n, what, timeout, good, strings.Join(states, "; "), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backendsPoll):
		}
	}
}

// podState is a pod's phase and, for a container not running, why.
func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	if p.Spec.NodeName != "" {
		s += " on " + p.Spec.NodeName
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			s += fmt.Sprintf(", %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			s += fmt.Sprintf(", %s terminated: %s (exit %d)", cs.Name, t.Reason, t.ExitCode)
		}
		if !cs.Ready {
			s += ", not ready"
		}
	}
	return s
}
