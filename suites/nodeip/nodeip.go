// Package nodeip checks how the CCM treats the node IPs a kubelet announces
// in alpha.kubernetes.io/provided-node-ip (KEP-3705): the announced IPs
// become the node's addresses of their type, listed first; addresses of
// other types stay; an IP the cloud does not know keeps the node
// uninitialized.
//
// Floor: the suites. They stand on the framework alone and name
// capabilities, never a provider.
package nodeip

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Suite returns the node-IP annotation suite.
func Suite() framework.Suite {
	return framework.Suite{Name: "nodeip", Declare: declare}
}

type family string

const (
	ipv4 family = "IPv4"
	ipv6 family = "IPv6"
)

// secondaryAddress returns a random internal address of the family that no
// instance has yet. The spec gives it to the instance as a second internal
// address and announces it as the node IP: a CCM that ignores the
// annotation keeps the cloud's first address, and the spec sees it.
//
// It is a private address (RFC 1918, RFC 4193), never a loopback one: a
// CCM may rightly refuse a loopback address as a node's (the vSphere CCM
// does: docs/findings.md), and the kubelet does not listen on its node IP.
func secondaryAddress(fam family) string {
	if fam == ipv4 {
		return fmt.Sprintf("10.254.%d.%d", rand.IntN(256), 1+rand.IntN(254))
	}
	return fmt.Sprintf("fd00:66::%x:%x", 1+rand.IntN(0xfffe), 1+rand.IntN(0xfffe))
}

// hasInternal reports whether the instance has the address as an InternalIP.
func hasInternal(inst *clouddriver.Instance, ip string) bool {
	for _, a := range inst.Addresses {
		if a.Type == string(corev1.NodeInternalIP) && a.Address == ip {
			return true
		}
	}
	return false
}

func isFamily(addr string, fam family) bool {
	ip := net.ParseIP(addr)
	return ip != nil && (ip.To4() != nil) == (fam == ipv4)
}

func declare(f *framework.Framework) {
	Describe("Node IP: the CCM honours the node IPs a kubelet announces", Label(string(profile.NodeIPAnnotation), string(profile.InstancesV2), framework.NeedsSimulatedNodes, framework.NeedsSimulatedCloud), func() {

		// machineWithNodeIPs makes an instance of the families, adds one
		// secondary internal address per family, and starts a kubelet that
		// announces those secondary addresses in the given order.
		machineWithNodeIPs := func(ctx context.Context, order ...family) (*framework.Machine, []string) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbInstanceSetAddresses)
			families := make([]string, len(order))
			for i, fam := range order {
				families[i] = string(fam)
			}
			m, err := f.Machines.Add(ctx, framework.MachineRequest{IPFamilies: families, NoKubelet: true})
			Expect(err).NotTo(HaveOccurred(), "creating an instance of families %v", families)
			DeferCleanup(f.Machines.Delete, m.Name)

			addrs := append([]clouddriver.Address{}, m.Instance.Addresses...)
			var nodeIPs []string
			for _, fam := range order {
				hasInternal := false
				for _, a := range m.Instance.Addresses {
					if a.Type == string(corev1.NodeInternalIP) && isFamily(a.Address, fam) {
						hasInternal = true
					}
				}
				Expect(hasInternal).To(BeTrue(), "instance %s (created with family %s): expected an %s InternalIP, saw addresses [%s]",
					m.Name, fam, fam, framework.FormatAddresses(m.Instance.Addresses))
				ip := secondaryAddress(fam)
				addrs = append(addrs, clouddriver.Address{Type: string(corev1.NodeInternalIP), Address: ip})
				nodeIPs = append(nodeIPs, ip)
			}
			inst, err := f.Driver.SetInstanceAddresses(ctx, m.Name, addrs)
			Expect(err).NotTo(HaveOccurred(), "instance %s: adding the addresses %v", m.Name, nodeIPs)
			m.Instance = inst
			// The spec needs an instance with a second InternalIP of each
			// family. A cloud whose instances report one InternalIP per
			// family (the driver answers what it holds) cannot give it
			// one, and the spec cannot be run there: it says so, and a
			// run that claims the capability is partial (docs/lkg.md).
			for _, ip := range nodeIPs {
				if !hasInternal(inst, ip) {
					Skip(fmt.Sprintf("the cloud cannot give an instance a second InternalIP of a family: instance %s, given [%s] by instance set-addresses, reports [%s] (docs/providers.md)",
						m.Name, framework.FormatAddresses(addrs), framework.FormatAddresses(inst.Addresses)))
				}
			}

			m.Kubelet, err = f.Machines.StartKubelet(ctx, nodes.Spec{Name: m.Name, NodeIPs: nodeIPs})
			Expect(err).NotTo(HaveOccurred(), "registering node %s with node IPs %v", m.Name, nodeIPs)
			return m, nodeIPs
		}

		expectNodeIPsHonoured := func(ctx context.Context, m *framework.Machine, nodeIPs []string) {
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.Name)
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				registered := framework.KubeletRegistration{Hostname: framework.KubeletHostname(n), NodeIPs: nodeIPs}
				want, err := framework.ExpectedAddresses(m.Instance.Addresses, registered)
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				g.Expect(framework.Uninitialized(n)).To(BeFalse(), func() string {
					// Built only when the wait gives up: it reads events and logs.
					return fmt.Sprintf("node %s (node IPs %s): expected the uninitialized taint gone, saw it still there; CCM's reason: %s",
						m.Name, strings.Join(nodeIPs, ","), f.CCMReason(ctx, m.Name))
				})
				got := n.Status.Addresses
				g.Expect(len(got)).To(BeNumerically(">=", len(nodeIPs)), "node %s: expected addresses [%s], saw [%s]",
					m.Name, framework.FormatAddresses(want), framework.FormatAddresses(got))
				for i, ip := range nodeIPs {
					g.Expect(got[i].Address).To(Equal(ip),
						"node %s: expected node IP %s as address #%d, saw %s (expected [%s], saw [%s])",
						m.Name, ip, i+1, got[i].Address, framework.FormatAddresses(want), framework.FormatAddresses(got))
				}
				g.Expect(got).To(Equal(want), "node %s: expected addresses [%s], saw [%s]",
					m.Name, framework.FormatAddresses(want), framework.FormatAddresses(got))
			}).WithTimeout(f.Timeout(profile.NodeInitialize)).Should(Succeed())
		}

		It("makes an IPv4 node IP the node's only InternalIP, listed first, keeping other address types", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			m, ips := machineWithNodeIPs(ctx, ipv4)
			expectNodeIPsHonoured(ctx, m, ips)
		})

		It("makes an IPv6 node IP the node's only InternalIP, listed first, keeping other address types", Label(string(profile.IPv6), framework.ReleaseBlocking), func(ctx SpecContext) {
			m, ips := machineWithNodeIPs(ctx, ipv6)
			expectNodeIPsHonoured(ctx, m, ips)
		})

		It("makes a dual-stack IPv4,IPv6 node IP pair the node's InternalIPs in that order", Label(string(profile.DualStack), framework.ReleaseBlocking), func(ctx SpecContext) {
			m, ips := machineWithNodeIPs(ctx, ipv4, ipv6)
			expectNodeIPsHonoured(ctx, m, ips)
		})

		It("makes a dual-stack IPv6,IPv4 node IP pair the node's InternalIPs in that order", Label(string(profile.DualStack)), func(ctx SpecContext) {
			m, ips := machineWithNodeIPs(ctx, ipv6, ipv4)
			expectNodeIPsHonoured(ctx, m, ips)
		})

		It("leaves a node whose node IP the cloud does not know tainted and uninitialized", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbInstanceSetAddresses)
			m, err := f.Machines.Add(ctx, framework.MachineRequest{IPFamilies: []string{string(ipv4)}, NoKubelet: true})
			Expect(err).NotTo(HaveOccurred(), "creating an IPv4 instance")
			DeferCleanup(f.Machines.Delete, m.Name)

			// 192.0.2.0/24 is TEST-NET-1: no cloud gives it to an instance.
			unknown := fmt.Sprintf("192.0.2.%d", 1+rand.IntN(254))
			_, err = f.Machines.StartKubelet(ctx, nodes.Spec{Name: m.Name, NodeIPs: []string{unknown}})
			Expect(err).NotTo(HaveOccurred(), "registering node %s with node IP %s", m.Name, unknown)

			// The control: a node registered after it, whose node IP the
			// cloud knows (its instance's own InternalIP), is initialized.
			// The CCM's node controller works through new nodes in turn,
			// so by then it has tried this one.
			control, err := f.Machines.Add(ctx, framework.MachineRequest{IPFamilies: []string{string(ipv4)}, NoKubelet: true})
			Expect(err).NotTo(HaveOccurred(), "creating the control's IPv4 instance")
			DeferCleanup(f.Machines.Delete, control.Name)
			var controlIPs []string
			for _, a := range control.Instance.Addresses {
				if a.Type == string(corev1.NodeInternalIP) && isFamily(a.Address, ipv4) && len(controlIPs) == 0 {
					controlIPs = append(controlIPs, a.Address)
				}
			}
			Expect(controlIPs).NotTo(BeEmpty(), "instance %s (created IPv4): expected an IPv4 InternalIP, saw addresses [%s]",
				control.Name, framework.FormatAddresses(control.Instance.Addresses))
			control.Kubelet, err = f.Machines.StartKubelet(ctx, nodes.Spec{Name: control.Name, NodeIPs: controlIPs})
			Expect(err).NotTo(HaveOccurred(), "registering control node %s with node IP %v", control.Name, controlIPs)
			expectNodeIPsHonoured(ctx, control, controlIPs)

			f.Consistently(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.Name)
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				g.Expect(framework.Uninitialized(n)).To(BeTrue(),
					"node %s (node IP %s, not an address of its instance: [%s]): expected the uninitialized taint kept, saw it removed",
					m.Name, unknown, framework.FormatAddresses(m.Instance.Addresses))
				g.Expect(n.Spec.ProviderID).To(BeEmpty(),
					"node %s (unknown node IP %s): expected no providerID, saw %q", m.Name, unknown, n.Spec.ProviderID)
			}).WithTimeout(f.Timeout(profile.NodeIPRejection)).Should(Succeed())

			reason := f.CCMReason(ctx, m.Name)
			AddReportEntry("CCM reason", reason)
			GinkgoWriter.Printf("node %s stayed uninitialized for %s after control node %s was initialized; CCM reason: %s\n",
				m.Name, f.Timeout(profile.NodeIPRejection), control.Name, reason)
		})
	})
}
