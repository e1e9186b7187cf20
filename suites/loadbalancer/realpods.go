package loadbalancer

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// The data path through real pods: what the upstream load balancer e2e
// tests check and simulated nodes cannot show, since the simulated
// kube-proxy answers on every node for every endpoint.
const (
	// strictProbes is how many probes, none retried, a spec sends once the
	// load balancer serves, each of which must meet its rule.
	strictProbes = 30
	// rollingProbeInterval spaces the probes sent during a rollout.
	rollingProbeInterval = 100 * time.Millisecond
	// rollingMaxFailures is the share of probes that may fail while the
	// backends roll: a connection caught between kube-proxy's syncs.
	rollingMaxFailures = 0.02
)

// requireRealPods skips the spec, saying why, on simulated nodes.
func (l *lb) requireRealPods() {
	if l.f.Machines != nil {
		Skip("the spec needs real pods behind the load balancer; on simulated nodes the simulated kube-proxy answers for every endpoint on every node (run it on kind)")
	}
}

// realBackends is backends for the specs that only real pods can answer:
// they skip on simulated nodes.
func (l *lb) realBackends(ctx context.Context, app string, replicas int32) *framework.EchoBackends {
	l.requireRealPods()
	return l.backends(ctx, app, replicas)
}

// maxAffinityNodes bounds the nodes the session affinity spec puts a pod
// on: enough to tell the load balancer's choices apart, few enough to
// start quickly on a large cluster.
const maxAffinityNodes = 3

// affinityNodes are the nodes the session affinity spec runs its pods on:
// load balancer backends that are Ready and evict nothing (no NoExecute
// taint), at most maxAffinityNodes, sorted.
func affinityNodes(nodes []corev1.Node) []string {
	eligible := map[string]bool{}
	for _, name := range framework.EligibleBackends(nodes) {
		eligible[name] = true
	}
	var out []string
	for i := range nodes {
		n := &nodes[i]
		if !eligible[n.Name] || !framework.Ready(n) || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }) {
			continue
		}
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out[:min(len(out), maxAffinityNodes)]
}

// realBackendsOnEachNode is realBackends with one pod pinned to each of
// nodes, a Deployment each (app-0, app-1, ...), all selected by the
// Service app.
func (l *lb) realBackendsOnEachNode(ctx context.Context, app string, nodes []string) *framework.EchoBackends {
	l.requireRealPods()
	l.requireEchoImage()
	for i, node := range nodes {
		_, err := l.f.DeployEchoBackends(ctx, framework.EchoBackendsRequest{Namespace: l.ns, App: app, Deployment: fmt.Sprintf("%s-%d", app, i), Replicas: 1, NodeName: node})
		Expect(err).NotTo(HaveOccurred(), "deploying an echo pod of Service %s/%s on node %s", l.ns, app, node)
	}
	return &framework.EchoBackends{Namespace: l.ns, App: app}
}

// strictly sends strictProbes probes to addr, none retried, and checks
// each answer with check.
func (l *lb) strictly(ctx context.Context, addr string, check func(answer string, err error)) {
	for range strictProbes {
		answer, err := l.f.Probes.TCP(ctx, addr, probeTimeout)
		check(answer, err)
	}
}

// nodeAddresses are every node's addresses, to tell a client address a
// node gave (kube-proxy's masquerade) from the load balancer's own.
func nodeAddresses(nodes []corev1.Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if net.ParseIP(a.Address) != nil {
				out[a.Address] = n.Name
			}
		}
	}
	return out
}

func declareRealPodDataPath(f *framework.Framework, l *lb, expectReaches func(context.Context, string, int32, *framework.EchoBackends, func(context.Context, string, time.Duration) (string, error))) {
	It("sends traffic only to the Service's ready endpoints", func(ctx SpecContext) {
		f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
		f.RequireBackendNodes()
		b := l.realBackends(ctx, "ready", 2)
		_, err := f.DeployEchoBackends(ctx, framework.EchoBackendsRequest{Namespace: l.ns, App: "ready", Replicas: 1, Unready: true})
		Expect(err).NotTo(HaveOccurred(), "deploying an echo pod of Service %s/ready that never turns ready", l.ns)
		l.create(ctx, "ready", nil)
		expectReaches(ctx, "ready", 80, b, l.f.Probes.TCP)

		svc := l.waitForIngress(ctx, "ready")
		addr := ingressAddr(svc, 80)
		ready, err := b.ReadyPods(ctx, f)
		Expect(err).NotTo(HaveOccurred())
		l.strictly(ctx, addr, func(answer string, err error) {
			Expect(err).NotTo(HaveOccurred(), "Service %s/ready: a probe through %s once it served", l.ns, addr)
			a, err := framework.ParseEchoAnswer(answer)
			Expect(err).NotTo(HaveOccurred(), "Service %s/ready: the answer through %s", l.ns, addr)
			Expect(ready).To(HaveKey(a.Pod), "Service %s/ready: expected only its ready pods %v to answer, saw pod %q on %s (its unready pod carries the Service's label but fails its readiness probe)",
				l.ns, podNames(ready), a.Pod, a.Node)
		})
	})

	It("with externalTrafficPolicy Local, sends traffic only to the node with the endpoint and keeps the client's address", Label(string(profile.LoadBalancerHealthCheckNodePort)), func(ctx SpecContext) {
		f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
		f.RequireBackendNodes()
		b := l.realBackends(ctx, "local", 1)
		pods, err := b.ReadyPods(ctx, f)
		Expect(err).NotTo(HaveOccurred())
		Expect(pods).To(HaveLen(1), "Service %s/local: its one echo pod", l.ns)
		var endpointNode string
		for _, node := range pods {
			endpointNode = node
		}
		l.create(ctx, "local", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal })
		svc := l.waitForIngress(ctx, "local")
		l.expectCloudMatches(ctx, "local", profile.LoadBalancerCreate)
		addr := ingressAddr(svc, 80)
		// The load balancer may first send some connections to nodes
		// without an endpoint, until its health checks of the Service's
		// healthCheckNodePort tell them apart; kube-proxy drops those.
		Eventually(ctx, func(g Gomega) {
			for range probesPerCheck {
				_, err := l.f.Probes.TCP(ctx, addr, probeTimeout)
				g.Expect(err).NotTo(HaveOccurred(), "Service %s/local: expected every probe through %s answered once the health checks pass, saw an error", l.ns, addr)
			}
		}).WithTimeout(f.Timeout(profile.LoadBalancerCreate)).WithPolling(l.poll()).Should(Succeed())

		nodes := nodeAddresses(f.View().Nodes())
		l.strictly(ctx, addr, func(answer string, err error) {
			Expect(err).NotTo(HaveOccurred(), "Service %s/local: a probe through %s once it served", l.ns, addr)
			a, err := framework.ParseEchoAnswer(answer)
			Expect(err).NotTo(HaveOccurred(), "Service %s/local: the answer through %s", l.ns, addr)
			Expect(a.Node).To(Equal(endpointNode), "Service %s/local (externalTrafficPolicy Local): expected traffic only on node %s, where its endpoint is, saw it answered on %s", l.ns, endpointNode, a.Node)
			Expect(nodes).NotTo(HaveKey(a.Client), "Service %s/local (externalTrafficPolicy Local): expected the client's address kept, saw the pod see %s, the address of node %s (a masquerade)", l.ns, a.Client, nodes[a.Client])
		})
	})

	// Upstream's "[sig-network] LoadBalancers should be able to switch
	// session affinity for LoadBalancer service" specs
	// (test/e2e/network/loadbalancer.go) ask the same of the load
	// balancer; kube-proxy's own ClientIP affinity holds per node only, so
	// a load balancer that spreads one client over the nodes breaks it.
	It("with sessionAffinity ClientIP, sends every connection of one client to one node", Label(string(profile.LoadBalancerSessionAffinity)), func(ctx SpecContext) {
		f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
		f.RequireBackendNodes()
		nodes := affinityNodes(f.View().Nodes())
		if len(nodes) < 2 {
			Skip(fmt.Sprintf("the spec needs two Ready nodes that can be load balancer backends, to see which node the load balancer chose; the cluster has %d (%v)", len(nodes), nodes))
		}
		// An echo pod on each of those nodes, and externalTrafficPolicy
		// Local: each node answers with its own pod, so the pod that
		// answers names the node the load balancer chose.
		b := l.realBackendsOnEachNode(ctx, "affinity", nodes)
		l.create(ctx, "affinity", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal })
		svc := l.waitForIngress(ctx, "affinity")
		l.expectCloudMatches(ctx, "affinity", profile.LoadBalancerCreate)
		addr := ingressAddr(svc, 80)
		ready, err := b.ReadyPods(ctx, f)
		Expect(err).NotTo(HaveOccurred())

		// The control, without affinity: the load balancer reaches every
		// one of the nodes (its health checks pass there), so that one node
		// answering below is the affinity's doing.
		answered := map[string]string{}
		Eventually(ctx, func(g Gomega) {
			answer, err := l.f.Probes.TCP(ctx, addr, probeTimeout)
			if a, perr := framework.ParseEchoAnswer(answer); err == nil && perr == nil && ready[a.Pod] != "" {
				answered[a.Pod] = a.Node
			}
			g.Expect(answered).To(HaveLen(len(ready)), "Service %s/affinity (sessionAffinity None): expected each of its pods %v to answer through %s, saw %v",
				l.ns, podNames(ready), addr, podNames(answered))
		}).WithTimeout(f.Timeout(profile.LoadBalancerCreate)).WithPolling(l.poll()).Should(Succeed())

		l.update(ctx, "affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP })
		why := fmt.Sprintf("Service %s/affinity (sessionAffinity ClientIP, externalTrafficPolicy Local, a pod on each of %d nodes)", l.ns, len(nodes))
		// Until the load balancer takes the update, a client may still be
		// spread; once it keeps one client on one node, it must go on
		// doing so.
		Eventually(ctx, func(g Gomega) {
			seen := map[string]string{}
			for range probesPerCheck {
				answer, err := l.f.Probes.TCP(ctx, addr, probeTimeout)
				g.Expect(err).NotTo(HaveOccurred(), "%s: a probe through %s", why, addr)
				if a, err := framework.ParseEchoAnswer(answer); err == nil {
					seen[a.Pod] = a.Node
				}
			}
			g.Expect(seen).To(HaveLen(1), "%s: expected %d connections in a row from this client through %s to reach one node, saw %v", why, probesPerCheck, addr, podNames(seen))
		}).WithTimeout(f.Timeout(profile.LoadBalancerUpdate)).WithPolling(l.poll()).Should(Succeed())
		seen := map[string]string{}
		l.strictly(ctx, addr, func(answer string, err error) {
			Expect(err).NotTo(HaveOccurred(), "%s: a probe through %s once it kept to one node", why, addr)
			a, err := framework.ParseEchoAnswer(answer)
			Expect(err).NotTo(HaveOccurred(), "%s: the answer through %s", why, addr)
			seen[a.Pod] = a.Node
		})
		Expect(seen).To(HaveLen(1), "%s: expected all %d connections from this client through %s to reach one node, saw %v", why, strictProbes, addr, podNames(seen))
	})

	It("keeps serving through the load balancer while the backing Deployment rolls", func(ctx SpecContext) {
		f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
		f.RequireBackendNodes()
		b := l.realBackends(ctx, "rolling", 2)
		l.create(ctx, "rolling", nil)
		expectReaches(ctx, "rolling", 80, b, l.f.Probes.TCP)
		svc := l.waitForIngress(ctx, "rolling")
		addr := ingressAddr(svc, 80)
		before, err := b.ReadyPods(ctx, f)
		Expect(err).NotTo(HaveOccurred())

		// Probe all through the rollout.
		var (
			mu         sync.Mutex
			ok, failed int
			lastErr    error
			seen       = map[string]bool{}
		)
		probeCtx, stopProbes := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer GinkgoRecover()
			for probeCtx.Err() == nil {
				answer, err := l.f.Probes.TCP(probeCtx, addr, probeTimeout)
				mu.Lock()
				if a, perr := framework.ParseEchoAnswer(answer); err == nil && perr == nil {
					ok++
					seen[a.Pod] = true
				} else if probeCtx.Err() == nil {
					failed++
					lastErr = err
				}
				mu.Unlock()
				select {
				case <-probeCtx.Done():
				case <-time.After(rollingProbeInterval):
				}
			}
		}()
		defer func() { stopProbes(); <-done }()

		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"ccm-conformance/rolled-at":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
		_, err = f.Client.AppsV1().Deployments(l.ns).Patch(ctx, "rolling", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred(), "rolling the echo Deployment %s/rolling", l.ns)
		Eventually(ctx, func(g Gomega) {
			d, err := f.Client.AppsV1().Deployments(l.ns).Get(ctx, "rolling", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			s := d.Status
			g.Expect(s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == 2 && s.AvailableReplicas == 2 && s.Replicas == 2).To(BeTrue(),
				"Deployment %s/rolling: expected the rollout done (2 updated, 2 available, 2 in all), saw %d updated, %d available, %d in all", l.ns, s.UpdatedReplicas, s.AvailableReplicas, s.Replicas)
			now, err := b.ReadyPods(ctx, f)
			g.Expect(err).NotTo(HaveOccurred())
			for p := range before {
				g.Expect(now).NotTo(HaveKey(p), "Deployment %s/rolling: expected its old pod %s replaced", l.ns, p)
			}
		}).WithTimeout(f.Timeout(profile.LoadBalancerUpdate)).WithPolling(l.poll()).Should(Succeed())
		after, err := b.ReadyPods(ctx, f)
		Expect(err).NotTo(HaveOccurred())
		// A last second of traffic on the new pods.
		time.Sleep(time.Second)
		stopProbes()
		<-done

		mu.Lock()
		defer mu.Unlock()
		total := ok + failed
		Expect(total).To(BeNumerically(">", 0), "no probe was sent during the rollout")
		Expect(float64(failed)/float64(total)).To(BeNumerically("<=", rollingMaxFailures),
			"Service %s/rolling: expected at most %.0f%% of the probes through %s to fail while the Deployment rolled, saw %d of %d fail (last: %v)",
			l.ns, 100*rollingMaxFailures, addr, failed, total, lastErr)
		var oldSeen, newSeen bool
		for p := range seen {
			if _, ok := before[p]; ok {
				oldSeen = true
			}
			if _, ok := after[p]; ok {
				newSeen = true
			}
		}
		Expect(oldSeen && newSeen).To(BeTrue(), "Service %s/rolling: expected answers from the old pods %v and the new %v during the rollout, saw answers from %v",
			l.ns, podNames(before), podNames(after), seen)
	})
}
