// Package nodes simulates kubelets for clusters without real machines (the
// local backend). A simulated kubelet registers its Node exactly as a kubelet
// started with --cloud-provider=external does, then keeps it alive with
// status and Lease heartbeats until it is stopped, as a machine that is
// switched off stops sending them.
//
// As a real kubelet does, a simulated one renews its Lease at every
// heartbeat but posts its Ready condition only when the Node's differs (after
// kube-controller-manager marked it Unknown, say) or when the condition was
// last posted longer ago than Options.StatusReportInterval: kube-controller-
// manager takes either as a sign of life.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/utils/ptr"
)

// LeaseNamespace holds the node heartbeat Leases.
const LeaseNamespace = "kube-node-lease"

// ManagedByLabel marks Nodes that a simulated kubelet registered, so that
// cleanup after an interrupted run can find them.
const ManagedByLabel = "ccm-conformance.dev/simulated-node"

// Spec describes one simulated node.
type Spec struct {
	// Name of the Node; on the local backend, also its instance's name.
	Name string
	// NodeIPs is what the kubelet was given with --node-ip: none, one, or a
	// dual-stack pair. Each becomes an InternalIP before the CCM runs and
	// the pair goes into alpha.kubernetes.io/provided-node-ip.
	NodeIPs []string
	// Labels are added to the Node at registration (--node-labels).
	Labels map[string]string
	// OS is the node's operating system as its kubelet reports it:
	// OSLinux (the default) or OSWindows.
	OS string
}

// The operating systems a simulated kubelet can report.
const (
	OSLinux   = "linux"
	OSWindows = "windows"
)

// windowsBuild and windowsKernel are what a kubelet on Windows Server 2022
// reports: the node.kubernetes.io/windows-build label (major.minor.build)
// and status.nodeInfo.kernelVersion.
const (
	windowsBuild  = "10.0.20348"
	windowsKernel = "10.0.20348.2227"
	windowsImage  = "Windows Server 2022 Datacenter"
)

// Options tune the heartbeats. Zero values take the defaults.
type Options struct {
	// HeartbeatInterval is how often the Lease is renewed and the Node's
	// Ready condition read. Default 5s.
	HeartbeatInterval time.Duration
	// StatusReportInterval is how often an unchanged Ready condition is
	// posted again (the kubelet's --node-status-report-frequency, 5m
	// upstream). Default 1m.
	StatusReportInterval time.Duration
	// LeaseDuration is written into the Lease. Default 40s, as the kubelet.
	LeaseDuration time.Duration
	// KubeletVersion goes into status.nodeInfo. Default "v0.0.0-simulated".
	KubeletVersion string
	// ServeNodePorts makes every running kubelet answer on its node's
	// loopback InternalIP at each Service NodePort with the node's name,
	// as a simulated kube-proxy, so that load balancers have a real data
	// path. Default off.
	ServeNodePorts bool
	// ProxySyncInterval is how often the simulated kube-proxy reconciles
	// its listeners. Default 500ms.
	ProxySyncInterval time.Duration
	// Agent, if set, runs on every node while its kubelet does. Default
	// none.
	Agent Agent
}

// Agent starts what a provider runs on each node beside the kubelet, such
// as its cloud node manager, and returns what stops it. It starts when the
// kubelet starts or resumes and stops when the kubelet stops: a switched
// off machine runs nothing. ctx carries the kubelet's logger.
type Agent func(ctx context.Context, node string) (stop func(), err error)

func (o Options) withDefaults() Options {
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 5 * time.Second
	}
	if o.StatusReportInterval <= 0 {
		o.StatusReportInterval = time.Minute
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 40 * time.Second
	}
	if o.KubeletVersion == "" {
		o.KubeletVersion = "v0.0.0-simulated"
	}
	if o.ProxySyncInterval <= 0 {
		o.ProxySyncInterval = 500 * time.Millisecond
	}
	return o
}

// Kubelet is one simulated kubelet.
type Kubelet struct {
	spec   Spec
	client kubernetes.Interface
	opts   Options
	// watch feeds the simulated kube-proxy; nil when ports are not served.
	watch *proxyWatch
	// log is the logger of the context the kubelet registered with, which
	// its heartbeats and kube-proxy log to.
	log logr.Logger
	// registered is set once register has created (or adopted) the Node.
	registered bool

	// lifecycle is held by Stop and Resume for their whole course, so
	// that a Resume never starts an agent beside one a Stop is stopping.
	lifecycle sync.Mutex

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	lastErr error
	// stopAgent stops the running agent; nil when none runs. agentErr is
	// why the agent did not start on the last Resume.
	stopAgent func()
	agentErr  error
}

// ParseNodeIPs validates a --node-ip value: one IP, or two of different
// families.
func ParseNodeIPs(ips []string) ([]net.IP, error) {
	if len(ips) > 2 {
		return nil, fmt.Errorf("at most two node IPs, got %d", len(ips))
	}
	var out []net.IP
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("node IP %q is not an IP address", s)
		}
		out = append(out, ip)
	}
	if len(out) == 2 && (out[0].To4() != nil) == (out[1].To4() != nil) {
		return nil, fmt.Errorf("node IPs %q and %q are of the same family", ips[0], ips[1])
	}
	return out, nil
}

// newNode builds the Node a kubelet with --cloud-provider=external registers.
func (k *Kubelet) newNode(now metav1.Time) (*corev1.Node, error) {
	return NewNode(k.spec, k.opts.KubeletVersion, now)
}

// NewNode builds the Node that a kubelet of the version, run with
// --cloud-provider=external and spec's flags, registers at now: the
// uninitialized taint, no providerID, its Hostname address (and node IPs
// with their annotation), a Ready condition. The harness registers such a
// Node itself where it cannot run a kubelet (an existing cluster), so
// that the CCM must initialize it during the run.
func NewNode(spec Spec, kubeletVersion string, now metav1.Time) (*corev1.Node, error) {
	ips, err := ParseNodeIPs(spec.NodeIPs)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	nodeOS := spec.OS
	switch nodeOS {
	case "":
		nodeOS = OSLinux
	case OSLinux, OSWindows:
	default:
		return nil, fmt.Errorf("node %s: operating system %q: want %s or %s", spec.Name, spec.OS, OSLinux, OSWindows)
	}
	labels := map[string]string{
		corev1.LabelHostname:   spec.Name,
		corev1.LabelOSStable:   nodeOS,
		corev1.LabelArchStable: "amd64",
		ManagedByLabel:         "true",
	}
	info := corev1.NodeSystemInfo{
		KubeletVersion:          kubeletVersion,
		OperatingSystem:         nodeOS,
		Architecture:            "amd64",
		ContainerRuntimeVersion: "simulated://0",
	}
	if nodeOS == OSWindows {
		// What the kubelet on Windows adds: the build label, which
		// schedulers match Windows images against, and its node info.
		labels[corev1.LabelWindowsBuild] = windowsBuild
		info.OSImage, info.KernelVersion = windowsImage, windowsKernel
	}
	for key, v := range spec.Labels {
		labels[key] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: labels},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{
				Key:    cloudproviderapi.TaintExternalCloudProvider,
				Value:  "true",
				Effect: corev1.TaintEffectNoSchedule,
			}},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity(),
			Allocatable: capacity(),
			Conditions:  []corev1.NodeCondition{readyCondition(now, now)},
			NodeInfo:    info,
		},
	}
	// As the kubelet's NodeAddress setter does with an external cloud
	// provider: the node IPs are announced in the annotation; without any,
	// only the Hostname address is set and the CCM supplies the rest.
	var annotation []string
	for _, ip := range ips {
		annotation = append(annotation, ip.String())
		node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: spec.Name})
	if len(annotation) > 0 {
		node.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: strings.Join(annotation, ",")}
	}
	return node, nil
}

func capacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

func readyCondition(heartbeat, transition metav1.Time) corev1.NodeCondition {
	return corev1.NodeCondition{
		Type:               corev1.NodeReady,
		Status:             corev1.ConditionTrue,
		Reason:             "KubeletReady",
		Message:            "simulated kubelet is posting ready status",
		LastHeartbeatTime:  heartbeat,
		LastTransitionTime: transition,
	}
}

// register creates the Node (or adopts an existing one of the same name, as
// a restarted kubelet does) and starts heartbeats.
func (k *Kubelet) register(ctx context.Context) error {
	node, err := k.newNode(metav1.Now())
	if err != nil {
		return err
	}
	_, err = k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", k.spec.Name, err)
	}
	k.registered = true
	k.log = logr.FromContextOrDiscard(ctx)
	if err := k.resume(); err != nil {
		k.Stop()
		return err
	}
	return nil
}

// Name is the Node's name.
func (k *Kubelet) Name() string { return k.spec.Name }

// NodeIPs are the IPs the kubelet was given.
func (k *Kubelet) NodeIPs() []string { return append([]string(nil), k.spec.NodeIPs...) }

// Running reports whether the kubelet is sending heartbeats.
func (k *Kubelet) Running() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cancel != nil
}

// LastError is why the node's agent did not start, else the last
// heartbeat failure, if any.
func (k *Kubelet) LastError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.agentErr != nil {
		return k.agentErr
	}
	return k.lastErr
}

// Stop ends the heartbeats and the node's agent, as when the machine is
// switched off. The Node stays; kube-controller-manager marks it NotReady
// after its grace period.
func (k *Kubelet) Stop() {
	k.lifecycle.Lock()
	defer k.lifecycle.Unlock()
	k.mu.Lock()
	cancel, done, stopAgent := k.cancel, k.done, k.stopAgent
	k.cancel, k.done, k.stopAgent = nil, nil, nil
	k.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if stopAgent != nil {
		stopAgent()
	}
}

// Resume starts the heartbeats again, as when the machine boots, and the
// node's agent. An agent that fails to start is the kubelet's LastError.
func (k *Kubelet) Resume() {
	if err := k.resume(); err != nil {
		k.log.Error(err, "Starting the node's agent failed", "node", k.spec.Name)
	}
}

// resume starts the heartbeats and the agent; the agent's failure is kept
// for LastError and returned.
func (k *Kubelet) resume() error {
	k.lifecycle.Lock()
	defer k.lifecycle.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), k.log))
	k.cancel, k.done = cancel, make(chan struct{})
	if k.watch == nil {
		go k.heartbeat(ctx, k.done)
	} else {
		heartbeatDone, done := make(chan struct{}), k.done
		go k.heartbeat(ctx, heartbeatDone)
		go func() {
			newProxy(k.spec.Name, k.watch).run(ctx, k.opts.ProxySyncInterval)
			<-heartbeatDone
			close(done)
		}()
	}
	if k.opts.Agent == nil {
		return nil
	}
	stop, err := k.opts.Agent(ctx, k.spec.Name)
	if err != nil {
		k.agentErr = fmt.Errorf("node %s: starting its agent: %w", k.spec.Name, err)
		return k.agentErr
	}
	k.stopAgent, k.agentErr = stop, nil
	return nil
}

func (k *Kubelet) heartbeat(ctx context.Context, done chan struct{}) {
	defer close(done)
	logger := logr.FromContextOrDiscard(ctx).WithValues("node", k.spec.Name)
	ticker := time.NewTicker(k.opts.HeartbeatInterval)
	defer ticker.Stop()
	var lease *coordinationv1.Lease // as last written; nil: read it first
	var posted time.Time            // when the Ready condition was last posted
	for {
		var leaseErr, statusErr error
		lease, leaseErr = k.renewLease(ctx, lease)
		posted, statusErr = k.syncReady(ctx, posted)
		err := errors.Join(leaseErr, statusErr)
		if err != nil && ctx.Err() == nil {
			logger.V(2).Info("Simulated kubelet heartbeat failed", "err", err)
		}
		k.mu.Lock()
		k.lastErr = err
		k.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// renewLease renews the node's Lease and returns it as written. It updates
// last, the Lease as this kubelet last wrote it, without reading it first,
// as the kubelet does; when last is nil or out of date it reads the Lease,
// and creates it if there is none.
func (k *Kubelet) renewLease(ctx context.Context, last *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	leases := k.client.CoordinationV1().Leases(LeaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	if last != nil {
		lease := last.DeepCopy()
		lease.Spec.RenewTime = &now
		updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return last, err
		}
		// Changed or deleted by someone else (the garbage collector, after
		// the Node was deleted): start again from what is there.
	}
	lease, err := leases.Get(ctx, k.spec.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err := k.client.CoreV1().Nodes().Get(ctx, k.spec.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("lease owner: %w", err)
		}
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:      k.spec.Name,
				Namespace: LeaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
				}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(k.spec.Name),
				LeaseDurationSeconds: ptr.To(int32(k.opts.LeaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}
		created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return created, nil
	}
	if err != nil {
		return nil, err
	}
	lease.Spec.RenewTime = &now
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return updated, nil
}

// syncReady posts the Ready condition, with a strategic merge patch of the
// status so that the addresses the CCM wrote are left alone, when the
// Node's is not Ready=True or was last posted (at posted) a
// StatusReportInterval ago or more. It returns when the condition was last
// posted. The Node is read from the API server's watch cache, as the
// kubelet reads it.
func (k *Kubelet) syncReady(ctx context.Context, posted time.Time) (time.Time, error) {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.spec.Name, metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return posted, err
	}
	now := metav1.Now()
	transition := now
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			transition, ready = c.LastTransitionTime, true
		}
	}
	if ready && !posted.IsZero() && now.Sub(posted) < k.opts.StatusReportInterval {
		return posted, nil
	}
	patch, err := json.Marshal(map[string]any{
		"status": map[string]any{"conditions": []corev1.NodeCondition{readyCondition(now, transition)}},
	})
	if err != nil {
		return posted, err
	}
	if _, err := k.client.CoreV1().Nodes().Patch(ctx, k.spec.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return posted, err
	}
	return now.Time, nil
}
