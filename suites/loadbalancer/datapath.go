package loadbalancer

import (
	"context"
	"net"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// probeTimeout bounds one connection attempt through a load balancer.
const probeTimeout = 3 * time.Second

// probesPerCheck is how many connections a reachability check makes, so
// that round-robin over the backends shows more than one of them.
const probesPerCheck = 6

func ingressAddr(svc *corev1.Service, port int32) string {
	in := svc.Status.LoadBalancer.Ingress[0]
	host := in.IP
	if host == "" {
		host = in.Hostname
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// backends gives the Service app the pods that answer behind it: on real
// nodes a Deployment of the echo server, returned; on simulated nodes
// none (nil), since the simulated kube-proxy answers on every node port
// with its node's name.
func (l *lb) backends(ctx context.Context, app string, replicas int32) *framework.EchoBackends {
	if l.f.Machines != nil {
		return nil
	}
	l.requireEchoImage()
	b, err := l.f.DeployEchoBackends(ctx, framework.EchoBackendsRequest{Namespace: l.ns, App: app, Replicas: replicas})
	Expect(err).NotTo(HaveOccurred(), "deploying the echo server as the backends of Service %s/%s", l.ns, app)
	return b
}

// requireEchoImage skips the spec, saying why, when the harness has no
// echo server image for the cluster's real nodes.
func (l *lb) requireEchoImage() {
	if l.f.EchoImage == "" {
		Skip("this cluster's nodes are real and the harness has no echo server image for it, so nothing would answer behind the load balancer (run with --echo-image, an image of cmd/echo-server the cluster can pull: docs/images.md)")
	}
}

// answeredBy checks that an answer came from a backend of the Service
// asked for: on simulated nodes, one of the cloud's backend nodes at a node
// port of that Service (the simulated kube-proxy names both); on real ones,
// a ready pod of the Service's echo Deployment. It returns the echo answer
// (zero on simulated nodes).
func (l *lb) answeredBy(ctx context.Context, g Gomega, b *framework.EchoBackends, cloud *clouddriver.LoadBalancer, name, addr, answer string) framework.EchoAnswer {
	if b == nil {
		node, service, ok := nodes.ParseProxyAnswer(answer)
		g.Expect(ok).To(BeTrue(), "Service %s/%s: expected traffic to %s answered by a simulated node (\"<node> <namespace>/<service>\"), saw %q", l.ns, name, addr, answer)
		g.Expect(cloud.Backends).To(ContainElement(node),
			"Service %s/%s: expected traffic to %s to reach a backend of %s %v, saw it answered by %q", l.ns, name, addr, cloud.Name, cloud.Backends, node)
		g.Expect(service).To(Equal(l.ns+"/"+name),
			"Service %s/%s: expected traffic to %s to reach a node port of the Service, saw it reach one of %s on node %s", l.ns, name, addr, service, node)
		return framework.EchoAnswer{}
	}
	a, err := framework.ParseEchoAnswer(answer)
	g.Expect(err).NotTo(HaveOccurred(), "Service %s/%s: the answer through %s", l.ns, name, addr)
	pods, err := b.ReadyPods(ctx, l.f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods).To(HaveKey(a.Pod), "Service %s/%s: expected traffic to %s to reach a ready pod of the Service %v, saw it answered by pod %q on node %s",
		l.ns, name, addr, podNames(pods), a.Pod, a.Node)
	return a
}

func podNames(pods map[string]string) []string {
	names := make([]string, 0, len(pods))
	for p, n := range pods {
		names = append(names, p+"@"+n)
	}
	slices.Sort(names)
	return names
}

func declareDataPath(f *framework.Framework, l *lb) {
	Context("data path", Label(string(profile.DataPath)), func() {

		// expectReaches sends probes through the load balancer until every
		// answer comes from a backend.
		expectReaches := func(ctx context.Context, name string, port int32, b *framework.EchoBackends, probe func(context.Context, string, time.Duration) (string, error)) {
			svc := l.waitForIngress(ctx, name)
			cloud := l.expectCloudMatches(ctx, name, profile.LoadBalancerCreate)
			addr := ingressAddr(svc, port)
			Eventually(ctx, func(g Gomega) {
				for i := 0; i < probesPerCheck; i++ {
					answer, err := probe(ctx, addr, probeTimeout)
					g.Expect(err).NotTo(HaveOccurred(), "Service %s/%s: expected an answer through load balancer %s at %s, saw an error", l.ns, name, cloud.Name, addr)
					l.answeredBy(ctx, g, b, cloud, name, addr, answer)
				}
			}).WithTimeout(f.Timeout(profile.LoadBalancerCreate)).WithPolling(l.poll()).Should(Succeed())
		}

		It("delivers TCP traffic sent to the ingress to a backend", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			f.RequireBackendNodes()
			b := l.backends(ctx, "web", 2)
			l.create(ctx, "web", nil)
			expectReaches(ctx, "web", 80, b, l.f.Probes.TCP)
		})

		It("delivers UDP traffic sent to the ingress to a backend", Label(string(profile.LoadBalancerUDP)), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			f.RequireBackendNodes()
			b := l.backends(ctx, "dns", 2)
			l.create(ctx, "dns", func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(framework.EchoPort)}}
			})
			expectReaches(ctx, "dns", 53, b, l.f.Probes.UDP)
		})

		It("admits clients inside loadBalancerSourceRanges and turns away the rest", Label(string(profile.LoadBalancerSourceRanges)), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			f.RequireBackendNodes()
			b := l.backends(ctx, "ranged", 1)
			// The harness's clients bind loopback addresses, which reach a
			// load balancer on this host whatever its ingress address (on
			// kind, the host routes the ingress range to itself, and a
			// client that binds nothing would come from the ingress
			// address).
			const allowed, outside = "127.0.0.1", "127.0.0.2"
			fromAllowed := func(ctx context.Context, addr string, timeout time.Duration) (string, error) {
				return l.f.Probes.TCPFrom(ctx, allowed, addr, timeout)
			}
			l.create(ctx, "ranged", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"} })
			expectReaches(ctx, "ranged", 80, b, fromAllowed)

			// Two clients, one inside the ranges and one outside, probed
			// together: the denial counts only while the allowed client
			// gets through, and only as a refused connection or no answer
			// at all.
			svc := l.update(ctx, "ranged", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{allowed + "/32"} })
			cloud := l.expectCloudMatches(ctx, "ranged", profile.LoadBalancerUpdate)
			addr := ingressAddr(svc, 80)
			Eventually(ctx, func(g Gomega) {
				answer, err := l.f.Probes.TCPFrom(ctx, allowed, addr, probeTimeout)
				g.Expect(err).NotTo(HaveOccurred(), "Service %s/ranged (loadBalancerSourceRanges %s/32): expected a client from %s let through at %s, saw an error", l.ns, allowed, allowed, addr)
				l.answeredBy(ctx, g, b, cloud, "ranged", addr, answer)
				answer, err = l.f.Probes.TCPFrom(ctx, outside, addr, probeTimeout)
				g.Expect(err).To(HaveOccurred(),
					"Service %s/ranged (loadBalancerSourceRanges %s/32): expected a client from %s turned away at %s, saw it answered by %q", l.ns, allowed, outside, addr, answer)
				g.Expect(framework.Denied(err)).To(BeTrue(),
					"Service %s/ranged (loadBalancerSourceRanges %s/32): expected a client from %s turned away at %s (connection refused or no answer), saw %v", l.ns, allowed, outside, addr, err)
			}).WithTimeout(f.Timeout(profile.LoadBalancerUpdate)).WithPolling(l.poll()).Should(Succeed())
		})

		declareRealPodDataPath(f, l, expectReaches)
	})
}
