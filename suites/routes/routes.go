// Package routes checks the CCM's route controller: every node's podCIDRs
// get a cloud route to that node, NodeNetworkUnavailable is cleared, routes
// of gone nodes are removed, and routes outside the cluster are left alone.
//
// Floor: the suites. They stand on the framework alone and name
// capabilities, never a provider.
package routes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Suite returns the routes suite.
func Suite() framework.Suite {
	return framework.Suite{Name: "routes", Declare: declare}
}

func formatRoutes(routes []clouddriver.Route) string {
	parts := make([]string, len(routes))
	for i, r := range routes {
		parts[i] = fmt.Sprintf("%s->%s", r.DestinationCIDR, r.NodeName)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// hasRoute reports whether routes send cidr to node.
func hasRoute(routes []clouddriver.Route, cidr, node string) bool {
	for _, r := range routes {
		if r.DestinationCIDR == cidr && r.NodeName == node {
			return true
		}
	}
	return false
}

func routeFor(routes []clouddriver.Route, cidr string) (clouddriver.Route, bool) {
	for _, r := range routes {
		if r.DestinationCIDR == cidr {
			return r, true
		}
	}
	return clouddriver.Route{}, false
}

func declare(f *framework.Framework) {
	Describe("Routes: the CCM programs a cloud route for every node's podCIDRs", Label(string(profile.Routes)), func() {

		// expectNodeRoutes waits until every node's podCIDRs have a route to
		// that node.
		expectNodeRoutes := func(ctx context.Context) []corev1.Node {
			var nodes []corev1.Node
			Eventually(ctx, func(g Gomega) {
				list := f.View().Nodes()
				routes, err := f.Driver.ListRoutes(ctx)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the routes")
				for _, n := range list {
					g.Expect(n.Spec.PodCIDRs).NotTo(BeEmpty(), "node %s: expected podCIDRs, saw none (is node CIDR allocation on?)", n.Name)
					for _, cidr := range n.Spec.PodCIDRs {
						g.Expect(hasRoute(routes, cidr, n.Name)).To(BeTrue(),
							"node %s: expected a cloud route %s->%s, saw [%s]", n.Name, cidr, n.Name, formatRoutes(routes))
					}
				}
				nodes = list
			}).WithTimeout(f.Timeout(profile.RouteSync)).WithPolling(f.PollInterval()).Should(Succeed())
			return nodes
		}

		It("gives every node's podCIDRs a cloud route to that node", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbRoutesList)
			_, err := f.JoiningNode(ctx, "program a route")
			Expect(err).NotTo(HaveOccurred())
			expectNodeRoutes(ctx)
		})

		It("gives a dual-stack node one route per IP family, each to that node", Label(string(profile.DualStack)), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbRoutesList)
			nodes := expectNodeRoutes(ctx)
			dual := 0
			for _, n := range nodes {
				families := map[bool]bool{}
				for _, cidr := range n.Spec.PodCIDRs {
					ip, _, err := net.ParseCIDR(cidr)
					Expect(err).NotTo(HaveOccurred(), "node %s: podCIDR %q", n.Name, cidr)
					families[ip.To4() != nil] = true
				}
				if len(families) == 2 {
					dual++
				}
			}
			Expect(dual).To(BeNumerically(">", 0), "expected a node with podCIDRs of both families, saw none among %d nodes: the cluster is not dual-stack", len(nodes))
		})

		It("clears NodeNetworkUnavailable with reason RouteCreated on every node", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			joined, err := f.JoiningNode(ctx, "program a route")
			Expect(err).NotTo(HaveOccurred())
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				_, err := v.Node(joined)
				g.Expect(err).NotTo(HaveOccurred(), "node %s (joined during the spec)", joined)
				for _, n := range v.Nodes() {
					var cond *corev1.NodeCondition
					for i := range n.Status.Conditions {
						if n.Status.Conditions[i].Type == corev1.NodeNetworkUnavailable {
							cond = &n.Status.Conditions[i]
						}
					}
					g.Expect(cond).NotTo(BeNil(), "node %s: expected a NetworkUnavailable condition, saw none", n.Name)
					g.Expect(cond.Status).To(Equal(corev1.ConditionFalse), "node %s: expected NetworkUnavailable False, saw %s (%s: %s)",
						n.Name, cond.Status, cond.Reason, cond.Message)
					g.Expect(cond.Reason).To(Equal("RouteCreated"), "node %s: expected NetworkUnavailable reason RouteCreated, saw %q", n.Name, cond.Reason)
				}
			}).WithTimeout(f.Timeout(profile.RouteSync)).Should(Succeed())
		})

		It("carries traffic from the control plane to a pod on every other node over the cloud's routes", Label(string(profile.DataPath)), func(ctx SpecContext) {
			carriesPodTraffic(ctx, f)
		})

		It("deletes the route of a deleted node", func(ctx SpecContext) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbRoutesList)
			m, err := f.Machines.Add(ctx, framework.MachineRequest{})
			Expect(err).NotTo(HaveOccurred(), "adding a machine")
			DeferCleanup(f.Machines.Delete, m.Name)

			var podCIDRs []string
			Eventually(ctx, func(g Gomega) {
				n, err := f.View().Node(m.Name)
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				g.Expect(n.Spec.PodCIDRs).NotTo(BeEmpty(), "node %s: expected podCIDRs, saw none yet", m.Name)
				routes, err := f.Driver.ListRoutes(ctx)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the routes")
				for _, cidr := range n.Spec.PodCIDRs {
					g.Expect(hasRoute(routes, cidr, m.Name)).To(BeTrue(), "node %s: expected a cloud route %s->%s, saw [%s]", m.Name, cidr, m.Name, formatRoutes(routes))
				}
				podCIDRs = n.Spec.PodCIDRs
			}).WithTimeout(f.Timeout(profile.RouteSync)).WithPolling(f.PollInterval()).Should(Succeed())

			Expect(f.Machines.Delete(ctx, m.Name)).To(Succeed(), "deleting machine %s", m.Name)
			Eventually(ctx, func(g Gomega) {
				routes, err := f.Driver.ListRoutes(ctx)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the routes")
				for _, r := range routes {
					g.Expect(r.NodeName).NotTo(Equal(m.Name), "node %s (deleted): expected no cloud route to it, saw %s->%s", m.Name, r.DestinationCIDR, r.NodeName)
				}
				for _, cidr := range podCIDRs {
					r, ok := routeFor(routes, cidr)
					g.Expect(ok).To(BeFalse(), "node %s (deleted): expected no cloud route for its podCIDR %s, saw %s->%s", m.Name, cidr, r.DestinationCIDR, r.NodeName)
				}
			}).WithTimeout(f.Timeout(profile.RouteSync)).WithPolling(f.PollInterval()).Should(Succeed())
		})

		It("removes a route inside the cluster CIDR that belongs to no node and leaves routes outside it alone", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbRoutesList, clouddriver.VerbRouteCreate, clouddriver.VerbRouteDelete)
			var clusterV4 *net.IPNet
			for _, c := range f.ClusterCIDRs {
				if _, n, err := net.ParseCIDR(c); err == nil && n.IP.To4() != nil {
					clusterV4 = n
				}
			}
			if clusterV4 == nil {
				Skip("the cluster's IPv4 pod network is unknown: set cluster.clusterCIDRs in the profile")
			}
			expectNodeRoutes(ctx)

			// The last /24 of the cluster network, which the node IPAM
			// allocates last, for a node that does not exist.
			ones, bits := clusterV4.Mask.Size()
			Expect(bits-ones).To(BeNumerically(">=", 8), "cluster network %s: expected a /24 or larger, saw a /%d", clusterV4, ones)
			inside := clusterV4.IP.To4()
			last := make(net.IP, 4)
			copy(last, inside)
			hostBits := uint32(bits - ones)
			base := uint32(last[0])<<24 | uint32(last[1])<<16 | uint32(last[2])<<8 | uint32(last[3])
			base |= (uint32(1)<<hostBits - 1) &^ 0xff
			strayCIDR := fmt.Sprintf("%d.%d.%d.0/24", byte(base>>24), byte(base>>16), byte(base>>8))
			// 198.18.0.0/15 is reserved for benchmarks: outside any cluster.
			outsideCIDR := fmt.Sprintf("198.18.%d.0/24", rand.IntN(256))
			ghost := framework.UniqueName("ccm-ghost")

			// The route outside the cluster network goes to a node that
			// exists, so that only its destination sets it apart.
			list, err := f.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred(), "listing the nodes")
			if len(list.Items) == 0 {
				Skip("the cluster has no nodes, and the spec needs one as the target of a route outside the cluster network")
			}
			target := list.Items[0].Name

			deleteRoute := func(ctx context.Context, name string) error {
				if err := f.Driver.DeleteRoute(ctx, name); err != nil && !clouddriver.IsNotFound(err) {
					return fmt.Errorf("deleting route %s: %w", name, err)
				}
				return nil
			}
			// The outside route first: the route controller's pass that
			// removes the stray one then saw the outside one too, so a CCM
			// that prunes it does so in that pass, not after the check.
			outside, err := f.Driver.CreateRoute(ctx, target, outsideCIDR)
			Expect(err).NotTo(HaveOccurred(), "creating route %s->%s", outsideCIDR, target)
			DeferCleanup(deleteRoute, outside.Name)
			stray, err := f.Driver.CreateRoute(ctx, ghost, strayCIDR)
			Expect(err).NotTo(HaveOccurred(), "creating route %s->%s", strayCIDR, ghost)
			DeferCleanup(deleteRoute, stray.Name)

			Eventually(ctx, func(g Gomega) {
				routes, err := f.Driver.ListRoutes(ctx)
				g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the routes")
				_, ok := routeFor(routes, strayCIDR)
				g.Expect(ok).To(BeFalse(), "route %s->%s (inside the cluster network %s, to a node that does not exist): expected it removed, saw it still there",
					strayCIDR, ghost, clusterV4)
			}).WithTimeout(f.Timeout(profile.RouteSync)).WithPolling(f.PollInterval()).Should(Succeed())

			routes, err := f.Driver.ListRoutes(ctx)
			Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the routes")
			Expect(hasRoute(routes, outsideCIDR, target)).To(BeTrue(),
				"route %s->%s (outside the cluster network %s): expected it kept, saw it removed; the cloud has [%s]", outsideCIDR, target, clusterV4, formatRoutes(routes))
		})
	})
}

// controlPlaneLabel marks the nodes the API server runs on (kubeadm's).
const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// carriesPodTraffic puts an echo pod on every node but the control plane
// and asks each, through the API server's pod proxy, for its answer: the
// API server on the control plane node reaches a pod on another node only
// through a route to that node's podCIDR, and on a cluster whose pod
// networks only the cloud's routes join (cluster.podRoutes: cloud) that
// route is the CCM's. The pod must see the control plane node's own
// address as the client: the traffic was routed, not translated.
func carriesPodTraffic(ctx context.Context, f *framework.Framework) {
	if f.Machines != nil {
		Skip("the spec needs real pods on real nodes; simulated nodes have no pod network (run it on kind)")
	}
	if f.Profile.Cluster.PodRoutes != profile.PodRoutesCloud {
		Skip(fmt.Sprintf("the cluster routes pod networks between nodes itself (cluster.podRoutes: %s), so pod traffic would not show the cloud's routes", f.Profile.Cluster.PodRoutes))
	}
	if f.EchoImage == "" {
		Skip("the harness has no echo server image for this cluster (run with --echo-image, an image of cmd/echo-server the cluster can pull: docs/images.md)")
	}
	f.RequireDriverVerbs(clouddriver.VerbRoutesList)
	var controlPlane, others []corev1.Node
	for _, n := range f.View().Nodes() {
		if _, ok := n.Labels[controlPlaneLabel]; ok {
			controlPlane = append(controlPlane, n)
		} else if framework.Ready(&n) && !framework.IsUniqueName(n.Name, framework.MachinePrefixes...) {
			// Only a node whose kubelet is Ready can run the echo pod: not
			// a Node the harness registered for a joining instance, which
			// another lane's spec may have made a moment ago and which is
			// Ready until the node monitor's grace period ends (a CI run
			// on an existing kind cluster chose one: its pod stayed Pending).
			others = append(others, n)
		}
	}
	if len(controlPlane) == 0 || len(others) == 0 {
		Skip(fmt.Sprintf("the spec needs a node labelled %s (where the API server runs) and another Ready node; saw %d and %d", controlPlaneLabel, len(controlPlane), len(others)))
	}
	apiServerIPs := map[string]bool{}
	for _, n := range controlPlane {
		for _, a := range n.Status.Addresses {
			apiServerIPs[a.Address] = true
		}
	}

	ns, err := f.CreateNamespace(ctx, "routes")
	Expect(err).NotTo(HaveOccurred(), "creating the spec's namespace")
	DeferCleanup(f.DeleteNamespace, ns)
	type target struct{ node, pod string }
	var targets []target
	for i, n := range others {
		app := fmt.Sprintf("echo-%d", i)
		b, err := f.DeployEchoBackends(ctx, framework.EchoBackendsRequest{Namespace: ns, App: app, Replicas: 1, NodeName: n.Name})
		Expect(err).NotTo(HaveOccurred(), "deploying an echo pod on node %s", n.Name)
		ready, err := b.ReadyPods(ctx, f)
		Expect(err).NotTo(HaveOccurred())
		for pod := range ready {
			targets = append(targets, target{node: n.Name, pod: pod})
		}
	}
	for _, t := range targets {
		Eventually(ctx, func(g Gomega) {
			raw, err := f.Client.CoreV1().Pods(ns).ProxyGet("http", t.pod, fmt.Sprint(framework.EchoHTTPPort), "/", nil).DoRaw(ctx)
			g.Expect(err).NotTo(HaveOccurred(), "pod %s/%s on node %s, asked from the control plane through the API server: no answer (%s); the cloud has routes [%s]",
				ns, t.pod, t.node, strings.TrimSpace(string(raw)), routesNow(ctx, f))
			a, err := framework.ParseEchoAnswer(strings.TrimSpace(string(raw)))
			g.Expect(err).NotTo(HaveOccurred(), "pod %s/%s on node %s", ns, t.pod, t.node)
			g.Expect(a.Pod).To(Equal(t.pod), "asked pod %s/%s on node %s, saw an answer from pod %s", ns, t.pod, t.node, a.Pod)
			g.Expect(apiServerIPs[a.Client]).To(BeTrue(),
				"pod %s/%s on node %s saw client %s, expected an address of the control plane node (routed, not translated)", ns, t.pod, t.node, a.Client)
		}).WithTimeout(f.Timeout(profile.RouteSync)).WithPolling(f.PollInterval()).Should(Succeed())
	}
}

// routesNow formats the cloud's routes, for a failure message.
func routesNow(ctx context.Context, f *framework.Framework) string {
	routes, err := f.Driver.ListRoutes(ctx)
	if err != nil {
		return "unknown: " + err.Error()
	}
	return formatRoutes(routes)
}
