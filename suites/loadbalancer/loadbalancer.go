// Package loadbalancer checks Services of type LoadBalancer: the CCM's
// service controller and the cloud's load balancers, from creation through
// updates and node-set changes to deletion, and the data path where the
// environment has one.
//
// Floor: the suites. They stand on the framework alone and name
// capabilities, never a provider.
package loadbalancer

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Suite returns the load balancer suite.
func Suite() framework.Suite {
	return framework.Suite{Name: "loadbalancer", Declare: declare}
}

// lb bundles what the specs of this suite share.
type lb struct {
	f  *framework.Framework
	ns string
	// created holds when create made each Service, until waitForIngress
	// records how long its load balancer took (load-balancer-ready).
	created map[string]time.Time
}

func (l *lb) poll() time.Duration { return l.f.PollInterval() }

// create makes a Service from the template after mutate, and deletes it
// when the spec ends.
func (l *lb) create(ctx context.Context, name string, mutate func(*corev1.Service)) *corev1.Service {
	svc := l.f.LoadBalancerService(l.ns, name)
	if mutate != nil {
		mutate(svc)
	}
	if l.created == nil {
		l.created = map[string]time.Time{}
	}
	l.created[name] = time.Now()
	created, err := l.f.Client.CoreV1().Services(l.ns).Create(ctx, svc, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "creating Service %s/%s", l.ns, name)
	DeferCleanup(l.f.DeleteService, l.ns, name)
	Expect(l.f.ServiceWritten(ctx, created)).To(Succeed(), "Service %s/%s after its creation", l.ns, name)
	return created
}

func (l *lb) get(ctx context.Context, name string) (*corev1.Service, error) {
	return l.f.Client.CoreV1().Services(l.ns).Get(ctx, name, metav1.GetOptions{})
}

// update applies mutate to the current Service, retrying on conflicts.
func (l *lb) update(ctx context.Context, name string, mutate func(*corev1.Service)) *corev1.Service {
	var updated *corev1.Service
	Eventually(ctx, func(g Gomega) {
		svc, err := l.get(ctx, name)
		g.Expect(err).NotTo(HaveOccurred(), "reading Service %s/%s", l.ns, name)
		mutate(svc)
		updated, err = l.f.Client.CoreV1().Services(l.ns).Update(ctx, svc, metav1.UpdateOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "updating Service %s/%s", l.ns, name)
	}).WithTimeout(l.f.Timeout(profile.LoadBalancerUpdate)).WithPolling(l.poll()).Should(Succeed())
	// What the specs compare next must not be older than this update.
	Expect(l.f.ServiceWritten(ctx, updated)).To(Succeed(), "Service %s/%s after the update", l.ns, name)
	return updated
}

// waitForIngress waits until the Service has a load balancer ingress.
func (l *lb) waitForIngress(ctx context.Context, name string) *corev1.Service {
	var svc *corev1.Service
	l.f.Eventually(ctx, func(g Gomega, v *framework.View) {
		var err error
		svc, err = v.Service(l.ns, name)
		g.Expect(err).NotTo(HaveOccurred(), "Service %s/%s", l.ns, name)
		g.Expect(svc.Status.LoadBalancer.Ingress).NotTo(BeEmpty(), func() string {
			// Built only when the wait gives up: it asks the API server.
			msg := fmt.Sprintf("Service %s/%s: expected a load balancer ingress, saw none (finalizers %v)", l.ns, name, svc.Finalizers)
			if w := l.f.LastWarning(ctx, "Service", l.ns, name); w != "" {
				msg += "; last event: " + w
			}
			return msg
		})
	}).WithTimeout(l.f.Timeout(profile.LoadBalancerCreate)).Should(Succeed())
	// The first ingress of a Service this spec created: how long its load
	// balancer took, for timings.json.
	if at, ok := l.created[name]; ok {
		delete(l.created, name)
		AddReportEntry(framework.EntryLoadBalancerReady, time.Since(at), ReportEntryVisibilityFailureOrVerbose)
	}
	return svc
}

// everyEligibleNode reports whether the profile declares that its load
// balancers register every eligible node (loadBalancer.backends: all), so
// that a spec may name a node that must be among them.
func (l *lb) everyEligibleNode() bool {
	return l.f.Profile.LoadBalancer.Backends != profile.BackendsSubset
}

// cloudLB asks the cloud driver for the Service's load balancer.
func (l *lb) cloudLB(ctx context.Context, svc *corev1.Service) (*clouddriver.LoadBalancer, error) {
	return l.f.Driver.GetLoadBalancer(ctx, framework.ServiceRef(svc))
}

// expectCloudMatches waits until the cloud's load balancer for the
// Service has the Service's ports and the backends the profile declares:
// every eligible node, or some of them (framework.CheckBackends).
func (l *lb) expectCloudMatches(ctx context.Context, name string, timeout profile.TimeoutName) *clouddriver.LoadBalancer {
	var cloud *clouddriver.LoadBalancer
	Eventually(ctx, func(g Gomega) {
		v := l.f.View()
		svc, err := v.Service(l.ns, name)
		g.Expect(err).NotTo(HaveOccurred(), "Service %s/%s", l.ns, name)
		nodes := v.Nodes()
		cloud, err = l.cloudLB(ctx, svc)
		g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/%s", l.ns, name)
		g.Expect(cloud.Exists).To(BeTrue(), "Service %s/%s: expected a load balancer in the cloud, saw none", l.ns, name)
		wantPorts, gotPorts := framework.ExpectedPorts(svc), framework.SortPorts(cloud.Ports)
		g.Expect(gotPorts).To(Equal(wantPorts), "Service %s/%s: expected cloud load balancer %s to listen on [%s], saw [%s]",
			l.ns, name, cloud.Name, framework.FormatPorts(wantPorts), framework.FormatPorts(gotPorts))
		g.Expect(framework.CheckBackends(l.f.Profile.LoadBalancer.Backends, nodes, cloud.Backends)).To(Succeed(),
			"Service %s/%s: the backends of cloud load balancer %s", l.ns, name, cloud.Name)
	}).WithTimeout(l.f.Timeout(timeout)).WithPolling(l.poll()).Should(Succeed())
	return cloud
}

// expectSameLoadBalancer checks that a change of the Service's ports kept
// its load balancer: the cloud's load balancer is the one first made, it
// still serves the first ingress, and the Service still shows that ingress.
// Upstream's e2e spec "should be able to change the type and ports of a TCP
// service" (test/e2e/network/loadbalancer.go) fails when a port change
// moves the ingress; a CCM that recreates its load balancer on every update
// breaks every client that resolved the old address.
func (l *lb) expectSameLoadBalancer(ctx context.Context, name string, first *clouddriver.LoadBalancer, ingress string, now *clouddriver.LoadBalancer) {
	Expect(now.Name).To(Equal(first.Name), "Service %s/%s: expected its ports to change on cloud load balancer %s, saw them on another, %s", l.ns, name, first.Name, now.Name)
	var served []string
	for _, in := range now.Ingress {
		served = append(served, in.IP+in.Hostname)
	}
	for _, in := range first.Ingress {
		Expect(served).To(ContainElement(in.IP+in.Hostname), "Service %s/%s: expected cloud load balancer %s to keep serving %s after the ports changed, saw it serve %v",
			l.ns, name, now.Name, in.IP+in.Hostname, served)
	}
	svc, err := l.f.View().Service(l.ns, name)
	Expect(err).NotTo(HaveOccurred(), "Service %s/%s", l.ns, name)
	Expect(framework.IngressAddresses(svc)).To(Equal(ingress), "Service %s/%s: expected the ingress %s to stay when the ports changed, saw %s",
		l.ns, name, ingress, framework.IngressAddresses(svc))
}

// expectCloudGone waits until the cloud has no load balancer for svc.
func (l *lb) expectCloudGone(ctx context.Context, svc *corev1.Service) {
	Eventually(ctx, func(g Gomega) {
		cloud, err := l.cloudLB(ctx, svc)
		g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/%s", svc.Namespace, svc.Name)
		g.Expect(cloud.Exists).To(BeFalse(), "Service %s/%s: expected its cloud load balancer %s gone, saw it still there (ingress %v)",
			svc.Namespace, svc.Name, cloud.Name, cloud.Ingress)
	}).WithTimeout(l.f.Timeout(profile.LoadBalancerDelete)).WithPolling(l.poll()).Should(Succeed())
}

func declare(f *framework.Framework) {
	Describe("Load balancers: the CCM provisions a cloud load balancer for each Service of type LoadBalancer", Label(string(profile.LoadBalancer)), func() {
		l := &lb{f: f}

		BeforeEach(func(ctx SpecContext) {
			ns, err := f.CreateNamespace(ctx, "lb")
			Expect(err).NotTo(HaveOccurred(), "creating the spec's namespace")
			l.ns = ns
			DeferCleanup(f.DeleteNamespace, ns)
		})

		It("gives a new Service an ingress, the cleanup finalizer, events, and a cloud load balancer with its ports and the eligible nodes", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			// Without a node that can be a backend, an empty backend list
			// would match an empty expectation and show nothing.
			f.RequireBackendNodes()
			l.create(ctx, "web", nil)
			svc := l.waitForIngress(ctx, "web")
			Expect(framework.HasFinalizer(svc, framework.LoadBalancerCleanupFinalizer)).To(BeTrue(),
				"Service %s/web: expected the %s finalizer, saw finalizers %v (it has ingress %s)", l.ns, framework.LoadBalancerCleanupFinalizer, svc.Finalizers, framework.IngressAddresses(svc))
			Eventually(ctx, func(g Gomega) {
				reasons, err := f.ServiceEventReasons(ctx, svc)
				g.Expect(err).NotTo(HaveOccurred(), "listing the events of Service %s/web", l.ns)
				g.Expect(reasons).To(ContainElements("EnsuringLoadBalancer", "EnsuredLoadBalancer"),
					"Service %s/web: expected the events EnsuringLoadBalancer and EnsuredLoadBalancer, saw %v", l.ns, reasons)
			}).WithTimeout(f.Timeout(profile.LoadBalancerCreate)).WithPolling(l.poll()).Should(Succeed())
			cloud := l.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate)
			var ingress []string
			for _, in := range cloud.Ingress {
				ingress = append(ingress, in.IP+in.Hostname)
			}
			for _, in := range svc.Status.LoadBalancer.Ingress {
				Expect(ingress).To(ContainElement(in.IP+in.Hostname),
					"Service %s/web: expected the cloud's load balancer %s to serve the Service's ingress %s, saw it serve %v", l.ns, cloud.Name, in.IP+in.Hostname, ingress)
			}
		})

		It("updates the cloud load balancer when the Service's ports change", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			l.create(ctx, "web", nil)
			svc := l.waitForIngress(ctx, "web")
			first := l.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate)
			ingress := framework.IngressAddresses(svc)
			l.update(ctx, "web", func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443})
			})
			l.expectSameLoadBalancer(ctx, "web", first, ingress, l.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate))
			l.update(ctx, "web", func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[1:] })
			l.expectSameLoadBalancer(ctx, "web", first, ingress, l.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate))
		})

		It("keeps the ingress while the type stays LoadBalancer and deletes the cloud load balancer when it changes to NodePort, then ClusterIP, and back", func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			l.create(ctx, "web", nil)
			svc := l.waitForIngress(ctx, "web")
			first := framework.IngressAddresses(svc)

			// A change that keeps the type keeps the ingress.
			l.update(ctx, "web", func(s *corev1.Service) { s.Labels = map[string]string{"touched": "true"} })
			f.Consistently(ctx, func(g Gomega, v *framework.View) {
				s, err := v.Service(l.ns, "web")
				g.Expect(err).NotTo(HaveOccurred(), "Service %s/web", l.ns)
				g.Expect(framework.IngressAddresses(s)).To(Equal(first), "Service %s/web: expected ingress %s to stay while the type stays LoadBalancer, saw %s",
					l.ns, first, framework.IngressAddresses(s))
			}).WithTimeout(3 * l.poll()).Should(Succeed())

			l.update(ctx, "web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				s, err := v.Service(l.ns, "web")
				g.Expect(err).NotTo(HaveOccurred(), "Service %s/web", l.ns)
				g.Expect(s.Status.LoadBalancer.Ingress).To(BeEmpty(), "Service %s/web, now NodePort: expected no ingress, saw %s", l.ns, framework.IngressAddresses(s))
				g.Expect(framework.HasFinalizer(s, framework.LoadBalancerCleanupFinalizer)).To(BeFalse(),
					"Service %s/web, now NodePort: expected the %s finalizer gone, saw finalizers %v", l.ns, framework.LoadBalancerCleanupFinalizer, s.Finalizers)
			}).WithTimeout(f.Timeout(profile.LoadBalancerDelete)).Should(Succeed())
			l.expectCloudGone(ctx, svc)

			l.update(ctx, "web", func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
				for i := range s.Spec.Ports {
					s.Spec.Ports[i].NodePort = 0
				}
			})
			l.update(ctx, "web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
			l.waitForIngress(ctx, "web")
			l.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate)
		})

		It("deletes the cloud load balancer and then the finalizer when the Service is deleted", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			l.create(ctx, "web", nil)
			svc := l.waitForIngress(ctx, "web")
			l.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate)

			Expect(f.Client.CoreV1().Services(l.ns).Delete(ctx, "web", metav1.DeleteOptions{})).To(Succeed(), "deleting Service %s/web", l.ns)
			// The order: each time the watch shows the Service, and at the
			// first sight of it without the finalizer (or gone) the cloud is
			// asked at once. A load balancer still there then outlived the
			// finalizer, which must come off only after it is deleted.
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				s, err := v.Service(l.ns, "web")
				if !apierrors.IsNotFound(err) {
					g.Expect(err).NotTo(HaveOccurred(), "Service %s/web", l.ns)
					g.Expect(framework.HasFinalizer(s, framework.LoadBalancerCleanupFinalizer)).To(BeFalse(),
						"Service %s/web: expected it deleted, saw it still terminating, held by finalizers %v", l.ns, s.Finalizers)
				}
				cloud, err := l.cloudLB(ctx, svc)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/web", l.ns)
				if cloud.Exists {
					StopTrying(fmt.Sprintf("Service %s/web: expected its cloud load balancer %s gone before the %s finalizer was removed, saw it still there once the finalizer was gone",
						l.ns, cloud.Name, framework.LoadBalancerCleanupFinalizer)).Now()
				}
			}).WithTimeout(f.Timeout(profile.LoadBalancerDelete)).Should(Succeed())
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				_, err := v.Service(l.ns, "web")
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service %s/web: expected it deleted once its finalizer was gone, saw it still there (err %v)", l.ns, err)
			}).WithTimeout(f.Timeout(profile.LoadBalancerDelete)).Should(Succeed())
		})

		// Service names were DNS-1035 labels (a letter first) before v1.36;
		// a CCM that builds cloud names from them, or checks them by the
		// old rule, breaks on the first Service named like "8080-web".
		// k8s.io/cloud-provider names a Service's load balancer from its
		// UID (cloudprovider.DefaultLoadBalancerName), and every CCM must
		// keep Services apart however it names them: one that names the
		// cloud's load balancer from the Service's name alone gives two
		// namespaces' "web" one load balancer, and deleting either takes
		// the other's traffic.
		It("gives Services of the same name in two namespaces load balancers of their own, and deleting one keeps the other's", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			ns, err := f.CreateNamespace(ctx, "lb")
			Expect(err).NotTo(HaveOccurred(), "creating a second namespace")
			DeferCleanup(f.DeleteNamespace, ns)
			other := &lb{f: f, ns: ns}

			l.create(ctx, "web", nil)
			other.create(ctx, "web", nil)
			svc, otherSvc := l.waitForIngress(ctx, "web"), other.waitForIngress(ctx, "web")
			cloud, otherCloud := l.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate), other.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate)
			ingress, otherIngress := framework.IngressAddresses(svc), framework.IngressAddresses(otherSvc)
			Expect(cloud.Name).NotTo(Equal(otherCloud.Name), "Services %s/web and %s/web: expected a cloud load balancer each, saw both on %s", l.ns, ns, cloud.Name)
			Expect(ingress).NotTo(Equal(otherIngress), "Services %s/web and %s/web: expected an ingress each, saw both at %s", l.ns, ns, ingress)

			Expect(f.DeleteService(ctx, l.ns, "web")).To(Succeed(), "deleting Service %s/web", l.ns)
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				_, err := v.Service(l.ns, "web")
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service %s/web: expected it deleted, saw it still there (err %v)", l.ns, err)
			}).WithTimeout(f.Timeout(profile.LoadBalancerDelete)).Should(Succeed())
			// Consistently: the other Service keeps its load balancer, its
			// ports and backends, for the window in which a wrong delete
			// would show.
			still := other.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate)
			Expect(still.Name).To(Equal(otherCloud.Name), "Service %s/web: expected its cloud load balancer %s kept when %s/web was deleted, saw %s", ns, otherCloud.Name, l.ns, still.Name)
			Consistently(ctx, func(g Gomega) {
				now, err := other.cloudLB(ctx, otherSvc)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/web", ns)
				g.Expect(now.Exists).To(BeTrue(), "Service %s/web: expected its cloud load balancer %s kept when %s/web was deleted, saw it gone", ns, otherCloud.Name, l.ns)
			}).WithTimeout(f.Timeout(profile.LoadBalancerIgnore)).WithPolling(l.poll()).Should(Succeed())
		})

		// A CCM restarts (an upgrade, a crash, a lost lease) with its
		// Services' load balancers in the cloud. k8s.io/cloud-provider's
		// service controller syncs every Service again, and the CCM must
		// find each load balancer it made before, by a name or tag it can
		// compute again, never by what it held in memory: one that cannot
		// makes a second load balancer, moves the ingress and leaks the
		// first.
		It("keeps one cloud load balancer per Service, with its ingress, across a restart of the CCM", func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet, clouddriver.VerbLoadBalancersList)
			f.RequireCCMs()
			l.create(ctx, "web", nil)
			svc := l.waitForIngress(ctx, "web")
			first := l.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate)
			ingress := framework.IngressAddresses(svc)

			restart, err := f.CCMInstances.StopMain(ctx)
			Expect(err).NotTo(HaveOccurred(), "stopping the CCM")
			Expect(restart(ctx)).To(Succeed(), "starting the CCM again")
			// A change the restarted CCM must make to the load balancer it
			// finds.
			l.update(ctx, "web", func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)})
			})
			now := l.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate)
			l.expectSameLoadBalancer(ctx, "web", first, ingress, now)
			lbs, err := f.Driver.ListLoadBalancers(ctx)
			Expect(err).NotTo(HaveOccurred(), "listing the cloud's load balancers")
			var ofService []string
			for _, lb := range lbs {
				if lb.ServiceNamespace == l.ns && lb.ServiceName == "web" {
					ofService = append(ofService, lb.Name)
				}
			}
			Expect(ofService).To(ConsistOf(first.Name), "Service %s/web: expected one cloud load balancer, %s, after the CCM restarted, saw %v", l.ns, first.Name, ofService)
		})

		It("gives a Service whose name starts with a digit an ingress and a cloud load balancer, and deletes it with the Service", Label(framework.RelaxedServiceNames.Label, framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			const name = "8080-web"
			l.create(ctx, name, nil)
			svc := l.waitForIngress(ctx, name)
			l.expectCloudMatches(ctx, name, profile.LoadBalancerCreate)
			Expect(f.Client.CoreV1().Services(l.ns).Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed(), "deleting Service %s/%s", l.ns, name)
			l.expectCloudGone(ctx, svc)
		})

		It("adds a joining node to the backends and drops a leaving one", func(ctx SpecContext) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			l.create(ctx, "web", nil)
			l.waitForIngress(ctx, "web")
			l.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate)

			m, err := f.Machines.Add(ctx, framework.MachineRequest{})
			Expect(err).NotTo(HaveOccurred(), "adding a machine")
			DeferCleanup(f.Machines.Delete, m.Name)
			cloud := l.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate)
			if l.everyEligibleNode() {
				Expect(cloud.Backends).To(ContainElement(m.Name), "Service %s/web: expected the new node %s among the backends of cloud load balancer %s, saw %v",
					l.ns, m.Name, cloud.Name, cloud.Backends)
			}

			Expect(f.Machines.Delete(ctx, m.Name)).To(Succeed(), "deleting machine %s", m.Name)
			cloud = l.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate)
			Expect(cloud.Backends).NotTo(ContainElement(m.Name), "Service %s/web: expected the deleted node %s gone from the backends of cloud load balancer %s, saw %v",
				l.ns, m.Name, cloud.Name, cloud.Backends)
		})

		// backendsWith waits until the cloud load balancer of the Service
		// has every node of in among its backends and none of out; why
		// says, for the failure message, why each must be so. Where the
		// profile declares that the cloud registers a subset of the
		// eligible nodes, which nodes are in is its choice: the backends
		// must then be a valid subset and hold none of out.
		backendsWith := func(ctx context.Context, svc *corev1.Service, in, out []string, why string) {
			subset := !l.everyEligibleNode()
			if subset {
				in = nil
			}
			Eventually(ctx, func(g Gomega) {
				cloud, err := l.cloudLB(ctx, svc)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/%s", svc.Namespace, svc.Name)
				got := framework.Sorted(cloud.Backends)
				if subset {
					g.Expect(framework.CheckBackends(f.Profile.LoadBalancer.Backends, f.View().Nodes(), got)).To(Succeed(),
						"Service %s/%s: the backends of cloud load balancer %s (%s)", svc.Namespace, svc.Name, cloud.Name, why)
				}
				for _, n := range in {
					g.Expect(got).To(ContainElement(n), "Service %s/%s: expected node %s among the backends of cloud load balancer %s (%s), saw backends %v",
						svc.Namespace, svc.Name, n, cloud.Name, why, got)
				}
				for _, n := range out {
					g.Expect(got).NotTo(ContainElement(n), "Service %s/%s: expected node %s gone from the backends of cloud load balancer %s (%s), saw backends %v",
						svc.Namespace, svc.Name, n, cloud.Name, why, got)
				}
			}).WithTimeout(f.Timeout(profile.LoadBalancerUpdate)).WithPolling(l.poll()).Should(Succeed())
		}

		addMachine := func(ctx context.Context) *framework.Machine {
			m, err := f.Machines.Add(ctx, framework.MachineRequest{})
			Expect(err).NotTo(HaveOccurred(), "adding a machine")
			DeferCleanup(f.Machines.Delete, m.Name)
			return m
		}

		// Readiness is no rule of the service controller's stable node
		// set: a NotReady backend stays. The controller does not sync on a
		// readiness change, so a node joining afterwards makes it hand the
		// cloud its node set again, with the NotReady node in it.
		It("keeps a backend node that goes NotReady among the backends when the node set changes", func(ctx SpecContext) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			svc := l.create(ctx, "web", nil)
			l.waitForIngress(ctx, "web")
			victim := addMachine(ctx)
			backendsWith(ctx, svc, []string{victim.Name}, nil, "it joined and is Ready")

			victim.Kubelet.Stop()
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(victim.Name)
				g.Expect(err).NotTo(HaveOccurred(), "node %s", victim.Name)
				g.Expect(framework.Ready(n)).To(BeFalse(), "node %s: expected NotReady once its kubelet went silent, saw Ready", victim.Name)
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).Should(Succeed())

			// The control: the CCM hands the cloud the new node set.
			joiner := addMachine(ctx)
			backendsWith(ctx, svc, []string{joiner.Name, victim.Name}, nil,
				fmt.Sprintf("node %s joined after node %s went NotReady, and readiness is no rule of the service controller", joiner.Name, victim.Name))
			l.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate)
		})

		// The service controller does not sync on the taint alone, so a
		// node-set change elsewhere follows each change of the taint.
		It("drops a node tainted ToBeDeletedByClusterAutoscaler from the backends and takes it back once the taint is gone", func(ctx SpecContext) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			svc := l.create(ctx, "web", nil)
			l.waitForIngress(ctx, "web")
			victim := addMachine(ctx)
			backendsWith(ctx, svc, []string{victim.Name}, nil, "it joined and is Ready")

			taint := corev1.Taint{Key: framework.ToBeDeletedTaint, Value: "1700000000", Effect: corev1.TaintEffectNoSchedule}
			Expect(f.SetNodeTaint(ctx, victim.Name, taint, true)).To(Succeed(), "node %s: tainting it %s", victim.Name, taint.Key)
			DeferCleanup(f.SetNodeTaint, victim.Name, taint, false)
			joiner := addMachine(ctx)
			backendsWith(ctx, svc, []string{joiner.Name}, []string{victim.Name},
				fmt.Sprintf("node %s is tainted %s, and node %s joined after", victim.Name, taint.Key, joiner.Name))

			Expect(f.SetNodeTaint(ctx, victim.Name, taint, false)).To(Succeed(), "node %s: removing taint %s", victim.Name, taint.Key)
			Expect(f.Machines.Delete(ctx, joiner.Name)).To(Succeed(), "deleting machine %s", joiner.Name)
			backendsWith(ctx, svc, []string{victim.Name}, []string{joiner.Name},
				fmt.Sprintf("node %s is no longer tainted %s, and node %s left after", victim.Name, taint.Key, joiner.Name))
			l.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate)
		})

		It("drops a node labelled node.kubernetes.io/exclude-from-external-load-balancers from the backends", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			// A node to take away from the backends.
			f.RequireBackendNodes()
			svc := l.create(ctx, "web", nil)
			l.waitForIngress(ctx, "web")
			cloud := l.expectCloudMatches(ctx, "web", profile.LoadBalancerCreate)
			Expect(cloud.Backends).NotTo(BeEmpty(), "Service %s/web: expected the eligible nodes as backends of cloud load balancer %s, saw none", l.ns, cloud.Name)
			victim := framework.Sorted(cloud.Backends)[0]

			// A merge patch of the label alone: the kubelet and the
			// controllers update the Node all the time, and an Update of
			// the whole object would keep conflicting with them; a merge
			// patch does not.
			setExcluded := func(ctx context.Context, excluded bool) error {
				return f.SetNodeLabel(ctx, victim, corev1.LabelNodeExcludeBalancers, excluded, "true")
			}
			Expect(setExcluded(ctx, true)).To(Succeed(), "node %s: labelling it %s=true", victim, corev1.LabelNodeExcludeBalancers)
			DeferCleanup(setExcluded, false)
			Eventually(ctx, func(g Gomega) {
				var err error
				cloud, err = l.cloudLB(ctx, svc)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/web", l.ns)
				g.Expect(cloud.Backends).NotTo(ContainElement(victim),
					"Service %s/web: expected node %s, labelled %s=true, gone from the backends of cloud load balancer %s, saw backends %v",
					l.ns, victim, corev1.LabelNodeExcludeBalancers, cloud.Name, framework.Sorted(cloud.Backends))
			}).WithTimeout(f.Timeout(profile.LoadBalancerUpdate)).WithPolling(l.poll()).Should(Succeed())
			// And the rest are still the backends.
			l.expectCloudMatches(ctx, "web", profile.LoadBalancerUpdate)
		})

		It("gives the cloud no node ports when allocateLoadBalancerNodePorts is false", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			l.create(ctx, "direct", func(s *corev1.Service) { s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false) })
			svc := l.waitForIngress(ctx, "direct")
			for _, p := range svc.Spec.Ports {
				Expect(p.NodePort).To(BeZero(), "Service %s/direct (allocateLoadBalancerNodePorts false): expected no node port for port %d, saw node port %d", l.ns, p.Port, p.NodePort)
			}
			cloud := l.expectCloudMatches(ctx, "direct", profile.LoadBalancerCreate)
			for _, p := range cloud.Ports {
				Expect(p.NodePort).To(BeZero(), "Service %s/direct (allocateLoadBalancerNodePorts false): expected cloud load balancer %s to forward port %d to no node port, saw node port %d",
					l.ns, cloud.Name, p.Port, p.NodePort)
			}
		})

		It("leaves a Service with a loadBalancerClass alone", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			svc := l.create(ctx, "classy", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/not-this-ccm") })
			// The control: a Service without a class, created after it,
			// gets its load balancer. The service controller takes Services
			// in turn, so by then it has seen this one; the watch that
			// follows is for a CCM that acts late.
			l.create(ctx, "plain", nil)
			l.waitForIngress(ctx, "plain")
			Consistently(ctx, func(g Gomega) {
				s, err := l.get(ctx, "classy")
				g.Expect(err).NotTo(HaveOccurred(), "reading Service %s/classy", l.ns)
				g.Expect(s.Status.LoadBalancer.Ingress).To(BeEmpty(), "Service %s/classy (loadBalancerClass example.com/not-this-ccm): expected no ingress, saw %s", l.ns, framework.IngressAddresses(s))
				g.Expect(framework.HasFinalizer(s, framework.LoadBalancerCleanupFinalizer)).To(BeFalse(),
					"Service %s/classy (loadBalancerClass example.com/not-this-ccm): expected no %s finalizer, saw finalizers %v", l.ns, framework.LoadBalancerCleanupFinalizer, s.Finalizers)
				cloud, err := l.cloudLB(ctx, svc)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/classy", l.ns)
				g.Expect(cloud.Exists).To(BeFalse(), "Service %s/classy (loadBalancerClass example.com/not-this-ccm): expected no load balancer in the cloud, saw %s", l.ns, cloud.Name)
			}).WithTimeout(f.Timeout(profile.LoadBalancerIgnore)).WithPolling(l.poll()).Should(Succeed())
		})

		It("passes loadBalancerSourceRanges to the cloud", Label(string(profile.LoadBalancerSourceRanges), framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			ranges := []string{"192.0.2.0/24", "198.51.100.0/24"}
			svc := l.create(ctx, "ranged", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = ranges })
			l.waitForIngress(ctx, "ranged")
			expectRanges := func(want []string) {
				Eventually(ctx, func(g Gomega) {
					cloud, err := l.cloudLB(ctx, svc)
					g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/ranged", l.ns)
					g.Expect(framework.Sorted(cloud.SourceRanges)).To(Equal(framework.Sorted(want)),
						"Service %s/ranged: expected cloud load balancer %s to allow %v, saw %v", l.ns, cloud.Name, framework.Sorted(want), framework.Sorted(cloud.SourceRanges))
				}).WithTimeout(f.Timeout(profile.LoadBalancerUpdate)).WithPolling(l.poll()).Should(Succeed())
			}
			expectRanges(ranges)
			l.update(ctx, "ranged", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = ranges[:1] })
			expectRanges(ranges[:1])
		})

		// Clouds may honour externalTrafficPolicy Local without health
		// checks of the healthCheckNodePort (or not at all): a capability
		// of its own, so that a CCM of such a cloud can leave it unclaimed.
		It("health-checks the Service's healthCheckNodePort when externalTrafficPolicy is Local", Label(string(profile.LoadBalancerHealthCheckNodePort), framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			l.create(ctx, "local", func(s *corev1.Service) {
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			})
			svc := l.waitForIngress(ctx, "local")
			Expect(svc.Spec.HealthCheckNodePort).NotTo(BeZero(), "Service %s/local (externalTrafficPolicy Local): expected a healthCheckNodePort, saw none", l.ns)
			Eventually(ctx, func(g Gomega) {
				cloud, err := l.cloudLB(ctx, svc)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/local", l.ns)
				g.Expect(cloud.HealthCheckNodePort).To(Equal(svc.Spec.HealthCheckNodePort),
					"Service %s/local: expected cloud load balancer %s to health-check node port %d (its healthCheckNodePort), saw %d",
					l.ns, cloud.Name, svc.Spec.HealthCheckNodePort, cloud.HealthCheckNodePort)
			}).WithTimeout(f.Timeout(profile.LoadBalancerCreate)).WithPolling(l.poll()).Should(Succeed())
		})

		It("carries UDP ports", Label(string(profile.LoadBalancerUDP), framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			l.create(ctx, "dns", func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}}
			})
			l.waitForIngress(ctx, "dns")
			l.expectCloudMatches(ctx, "dns", profile.LoadBalancerCreate)
		})

		It("carries TCP and UDP ports of one Service together", Label(string(profile.LoadBalancerUDP), string(profile.LoadBalancerMixedProtocol)), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbLoadBalancerGet)
			l.create(ctx, "mixed", func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53},
					{Name: "dns-udp", Protocol: corev1.ProtocolUDP, Port: 53},
				}
			})
			l.waitForIngress(ctx, "mixed")
			l.expectCloudMatches(ctx, "mixed", profile.LoadBalancerCreate)
		})

		declareDataPath(f, l)
	})
}
