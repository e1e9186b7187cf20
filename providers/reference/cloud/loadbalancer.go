package cloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// loadBalancers implements cloudprovider.LoadBalancer. The service
// controller calls it for Services of type LoadBalancer; the cloud keeps
// one load balancer per Service, named by cloudprovider.DefaultLoadBalancerName.
type loadBalancers struct {
	client  *cloudapi.Client
	defects Defects
	// listNodes reads the cluster's Nodes; set by Initialize only for
	// DefectIgnoreAutoscalerTaint, which needs the nodes the service
	// controller left out.
	listNodes func(context.Context) ([]v1.Node, error)
	// processTag is this process's own random tag, which
	// DefectLBNamedPerProcess puts into load balancer names.
	processTag string
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// GetLoadBalancerName returns the cloud's name for the Service's load
// balancer: "a" and the Service UID without dashes, cut to 32 characters.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, service *v1.Service) string {
	if l.defects.Has(DefectLBNamedByServiceName) {
		return service.Name
	}
	if l.defects.Has(DefectLBNamedPerProcess) {
		return cloudprovider.DefaultLoadBalancerName(service)[:24] + l.processTag
	}
	return cloudprovider.DefaultLoadBalancerName(service)
}

// GetLoadBalancer returns the status of the Service's load balancer and
// whether it exists.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, service *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	name := l.GetLoadBalancerName(ctx, clusterName, service)
	lb, err := l.client.GetLoadBalancer(ctx, name)
	if cloudapi.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("getting load balancer %s of service %s/%s: %w", name, service.Namespace, service.Name, err)
	}
	return l.status(lb), true, nil
}

// EnsureLoadBalancer creates or updates the Service's load balancer so it
// forwards the Service's ports to the given nodes, and returns its status.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, service *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	name := l.GetLoadBalancerName(ctx, clusterName, service)
	spec, err := l.spec(ctx, service, nodes)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("Ensuring load balancer", "service", klog.KObj(service), "loadBalancer", name,
		"ports", spec.Ports, "backends", spec.Backends, "sourceRanges", spec.SourceRanges, "healthCheckNodePort", spec.HealthCheckNodePort)
	if l.defects.Has(DefectPortsFixedAtCreate) {
		if existing, err := l.client.GetLoadBalancer(ctx, name); err == nil {
			spec.Ports = existing.Ports
		}
	}
	if l.defects.Has(DefectRecreateLBOnUpdate) {
		if _, err := l.client.GetLoadBalancer(ctx, name); err == nil {
			if err := l.client.DeleteLoadBalancer(ctx, name); err != nil && !cloudapi.IsNotFound(err) {
				return nil, fmt.Errorf("recreating load balancer %s of service %s/%s: %w", name, service.Namespace, service.Name, err)
			}
		}
	}
	lb, err := l.client.EnsureLoadBalancer(ctx, name, spec)
	if err != nil {
		return nil, fmt.Errorf("ensuring load balancer %s of service %s/%s: %w", name, service.Namespace, service.Name, err)
	}
	return l.status(lb), nil
}

// UpdateLoadBalancer updates the backends of the Service's load balancer.
// The cloud API takes the whole spec, so this writes the same spec as
// EnsureLoadBalancer, but only to a load balancer that exists: the service
// controller's node sync may update a Service whose deletion has just
// removed its load balancer, and an update must not bring it back.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, service *v1.Service, nodes []*v1.Node) error {
	name := l.GetLoadBalancerName(ctx, clusterName, service)
	spec, err := l.spec(ctx, service, nodes)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Updating load balancer", "service", klog.KObj(service), "loadBalancer", name, "backends", spec.Backends)
	if _, err := l.client.UpdateLoadBalancer(ctx, name, spec); err != nil {
		return fmt.Errorf("updating load balancer %s of service %s/%s: %w", name, service.Namespace, service.Name, err)
	}
	return nil
}

// EnsureLoadBalancerDeleted deletes the Service's load balancer; one that
// is already gone is not an error.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, service *v1.Service) error {
	name := l.GetLoadBalancerName(ctx, clusterName, service)
	if l.defects.Has(DefectKeepLBOnDelete) {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Deleting load balancer", "service", klog.KObj(service), "loadBalancer", name)
	err := l.client.DeleteLoadBalancer(ctx, name)
	if err != nil && !cloudapi.IsNotFound(err) {
		return fmt.Errorf("deleting load balancer %s of service %s/%s: %w", name, service.Namespace, service.Name, err)
	}
	return nil
}

// spec translates a Service and its nodes into a load balancer spec.
func (l *loadBalancers) spec(ctx context.Context, service *v1.Service, nodes []*v1.Node) (cloudapi.LoadBalancerSpec, error) {
	spec := cloudapi.LoadBalancerSpec{ServiceNamespace: service.Namespace, ServiceName: service.Name}
	if l.defects.Has(DefectOldServiceNameRule) {
		if errs := validation.IsDNS1035Label(service.Name); len(errs) > 0 {
			return spec, fmt.Errorf("service %s/%s: name is not a DNS-1035 label: %s", service.Namespace, service.Name, strings.Join(errs, "; "))
		}
	}

	for _, p := range service.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP && p.Protocol != v1.ProtocolUDP {
			return spec, fmt.Errorf("service %s/%s port %q: protocol %s is not supported by the reference cloud (only TCP and UDP)",
				service.Namespace, service.Name, p.Name, p.Protocol)
		}
		nodePort := p.NodePort
		switch {
		case l.defects.Has(DefectDropUDPPorts) && p.Protocol == v1.ProtocolUDP:
			continue
		case l.defects.Has(DefectWrongNodePort) && nodePort != 0:
			nodePort++
		case l.defects.Has(DefectNodePortFallback) && nodePort == 0:
			nodePort = p.Port
		}
		spec.Ports = append(spec.Ports, cloudapi.Port{Protocol: string(p.Protocol), Port: p.Port, NodePort: nodePort})
	}

	if l.defects.Has(DefectBackendsAllInstances) {
		all, err := l.client.ListInstances(ctx)
		if err != nil {
			return spec, fmt.Errorf("listing instances: %w", err)
		}
		for _, in := range all {
			spec.Backends = append(spec.Backends, in.Name)
		}
	} else {
		for _, n := range nodes {
			if l.defects.Has(DefectDropNotReadyBackends) && !nodeReady(n) {
				continue
			}
			spec.Backends = append(spec.Backends, n.Name)
		}
	}
	if l.defects.Has(DefectIgnoreAutoscalerTaint) && l.listNodes != nil {
		all, err := l.listNodes(ctx)
		if err != nil {
			return spec, fmt.Errorf("listing nodes: %w", err)
		}
		for i := range all {
			if autoscalerTainted(&all[i]) && !slices.Contains(spec.Backends, all[i].Name) {
				spec.Backends = append(spec.Backends, all[i].Name)
			}
		}
	}

	ranges, err := sourceRanges(service)
	if err != nil {
		return spec, err
	}
	if !l.defects.Has(DefectIgnoreSourceRanges) {
		spec.SourceRanges = ranges
	}

	// With externalTrafficPolicy: Local only nodes with local endpoints
	// should get traffic; kube-proxy tells which on the health check port.
	_, hcPort := servicehelper.GetServiceHealthCheckPathPort(service)
	if !l.defects.Has(DefectIgnoreHealthCheckPort) {
		spec.HealthCheckNodePort = hcPort
	}
	if service.Spec.SessionAffinity == v1.ServiceAffinityClientIP && !l.defects.Has(DefectIgnoreSessionAffinity) {
		spec.SessionAffinity = cloudapi.SessionAffinityClientIP
	}
	return spec, nil
}

// sourceRanges returns the client CIDRs a Service allows: from
// spec.loadBalancerSourceRanges, else from the
// service.beta.kubernetes.io/load-balancer-source-ranges annotation. No
// ranges (allow all) is returned as an empty list.
func sourceRanges(service *v1.Service) ([]string, error) {
	if len(service.Spec.LoadBalancerSourceRanges) == 0 && strings.TrimSpace(service.Annotations[v1.AnnotationLoadBalancerSourceRangesKey]) == "" {
		return nil, nil
	}
	nets, err := servicehelper.GetLoadBalancerSourceRanges(service)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", service.Namespace, service.Name, err)
	}
	ranges := nets.StringSlice()
	slices.Sort(ranges) // a set: keep the order stable across syncs
	return ranges, nil
}

// status is the Service status for a load balancer.
func (l *loadBalancers) status(lb *cloudapi.LoadBalancer) *v1.LoadBalancerStatus {
	if lb.IngressIP == "" {
		return &v1.LoadBalancerStatus{}
	}
	ip := lb.IngressIP
	if l.defects.Has(DefectWrongIngressIP) {
		if addr, err := netip.ParseAddr(ip); err == nil {
			ip = addr.Next().String()
		}
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip}}}
}

// serveEveryClass is the serve-every-class defect: a loop of the CCM's
// own that ensures a cloud load balancer, without backends, for every
// Service of type LoadBalancer that has a loadBalancerClass (the service
// controller leaves those alone, as it should), and deletes it once the
// Service is gone.
func (l *loadBalancers) serveEveryClass(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	client, err := clientBuilder.Client("reference-every-class")
	if err != nil {
		klog.ErrorS(err, "serve-every-class: no client")
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	served := map[string]bool{}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		list, err := client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for i := range list.Items {
			svc := &list.Items[i]
			if svc.Spec.Type != v1.ServiceTypeLoadBalancer || svc.Spec.LoadBalancerClass == nil {
				continue
			}
			name := cloudprovider.DefaultLoadBalancerName(svc)
			seen[name] = true
			spec, err := l.spec(ctx, svc, nil)
			if err != nil {
				continue
			}
			if _, err := l.client.EnsureLoadBalancer(ctx, name, spec); err == nil {
				served[name] = true
			}
		}
		for name := range served {
			if !seen[name] && l.client.DeleteLoadBalancer(ctx, name) == nil {
				delete(served, name)
			}
		}
	}, serveEveryClassPeriod)
}

// serveEveryClassPeriod is how often the serve-every-class loop looks: a
// CCM that serves a class it should leave alone does so within moments,
// not after the spec's negative wait (loadBalancerIgnore, 1s in the
// reference profile) has passed, which a one-second loop sometimes did.
const serveEveryClassPeriod = 100 * time.Millisecond

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// toBeDeletedTaint is the cluster autoscaler's taint on a node it is about
// to delete.
const toBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

func autoscalerTainted(n *v1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == toBeDeletedTaint })
}

// randomTag returns 8 random hex digits.
func randomTag() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
