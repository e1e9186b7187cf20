// Package nodeaddress checks that the CCM initializes nodes from their
// cloud instances: the uninitialized taint goes, and providerID, addresses,
// instance type, zone and region match what the cloud reports.
//
// Floor: the suites. They stand on the framework alone and name
// capabilities, never a provider.
package nodeaddress

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Suite returns the node addressing suite.
func Suite() framework.Suite {
	return framework.Suite{Name: "nodeaddress", Declare: declare}
}

func declare(f *framework.Framework) {
	Describe("Node addressing: the CCM initializes every node from its cloud instance", Label(string(profile.InstancesV2)), func() {

		// Every spec waits for the nodes that exist to be initialized: on a
		// fresh cluster the CCM may still be working through them. One of
		// them joins during the spec (joinNode), so that the spec sees the
		// CCM act, not only state written before the run.
		initializedNodes := func(ctx context.Context) []corev1.Node {
			joined, err := f.JoiningNode(ctx, "initialize a node")
			Expect(err).NotTo(HaveOccurred())
			var nodes []corev1.Node
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				// The joined node must be among the nodes checked: read
				// apart, it could arrive between two reads and be left out.
				nodes = v.Nodes()
				g.Expect(slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Name == joined })).To(BeTrue(),
					"node %s (joined during the run): expected it among the nodes, saw it not yet", joined)
				for i := range nodes {
					n := &nodes[i]
					g.Expect(framework.Uninitialized(n)).To(BeFalse(),
						"node %s: expected the uninitialized taint gone, saw taints %s", n.Name, framework.FormatTaints(n.Spec.Taints))
				}
			}).WithTimeout(f.Timeout(profile.NodeInitialize)).Should(Succeed())
			return nodes
		}

		// waitInitialized waits until the node has lost the uninitialized
		// taint and, if check is set, passes check.
		waitInitialized := func(ctx context.Context, name string, check func(Gomega, *corev1.Node)) {
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(name)
				g.Expect(err).NotTo(HaveOccurred(), "node %s", name)
				g.Expect(framework.Uninitialized(n)).To(BeFalse(), "node %s: expected the uninitialized taint gone, saw taints %s", name, framework.FormatTaints(n.Spec.Taints))
				if check != nil {
					check(g, n)
				}
			}).WithTimeout(f.Timeout(profile.NodeInitialize)).Should(Succeed())
		}

		instanceOf := func(ctx context.Context, node string) *clouddriver.Instance {
			inst, err := f.Driver.GetInstance(ctx, node)
			Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the instance of node %s", node)
			return inst
		}

		It("removes the uninitialized taint from every node and sets a providerID", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			nodes := initializedNodes(ctx)
			for _, n := range nodes {
				Expect(n.Spec.ProviderID).NotTo(BeEmpty(), "node %s (initialized): expected a spec.providerID, saw none", n.Name)
			}
		})

		It("sets each node's providerID to its instance's", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbInstanceGet)
			for _, n := range initializedNodes(ctx) {
				inst := instanceOf(ctx, n.Name)
				Expect(n.Spec.ProviderID).To(Equal(inst.ProviderID),
					"node %s: spec.providerID (expected the cloud's %q, saw %q)", n.Name, inst.ProviderID, n.Spec.ProviderID)
			}
		})

		It("gives each node the addresses its instance has in the cloud", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbInstanceGet)
			initializedNodes(ctx)
			Eventually(ctx, func(g Gomega) {
				for _, n := range f.View().Nodes() {
					inst, err := f.Driver.GetInstance(ctx, n.Name)
					g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the instance of node %s", n.Name)
					want, err := framework.ExpectedAddresses(inst.Addresses, framework.RegisteredBy(&n))
					g.Expect(err).NotTo(HaveOccurred(), "node %s", n.Name)
					g.Expect(framework.SameAddressSet(n.Status.Addresses, want)).To(BeTrue(),
						"node %s: expected addresses [%s] (from the cloud), saw [%s]",
						n.Name, framework.FormatAddresses(want), framework.FormatAddresses(n.Status.Addresses))
				}
			}).WithTimeout(f.Timeout(profile.NodeAddressUpdate)).WithPolling(f.PollInterval()).Should(Succeed())
		})

		It("labels each node with its instance type", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbInstanceGet)
			for _, n := range initializedNodes(ctx) {
				inst := instanceOf(ctx, n.Name)
				for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelInstanceType} {
					// k8s.io/cloud-provider's node controller sets the
					// labels only when the cloud reports a type
					// (controllers/node/node_controller.go,
					// getNodeModifiersFromCloudProvider, v0.37.2).
					if inst.InstanceType == "" {
						Expect(n.Labels).NotTo(HaveKey(key),
							"node %s: label %s (expected none: the cloud reports no instance type; saw %q)", n.Name, key, n.Labels[key])
						continue
					}
					Expect(n.Labels).To(HaveKeyWithValue(key, inst.InstanceType),
						"node %s: label %s (expected the cloud's %q, saw %q)", n.Name, key, inst.InstanceType, n.Labels[key])
				}
			}
		})

		It("labels each node with its instance's zone and region", Label(string(profile.Zones), framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbInstanceGet)
			for _, n := range initializedNodes(ctx) {
				inst := instanceOf(ctx, n.Name)
				Expect(n.Labels).To(HaveKeyWithValue(corev1.LabelTopologyZone, inst.Zone),
					"node %s: label %s (expected the cloud's %q, saw %q)", n.Name, corev1.LabelTopologyZone, inst.Zone, n.Labels[corev1.LabelTopologyZone])
				Expect(n.Labels).To(HaveKeyWithValue(corev1.LabelTopologyRegion, inst.Region),
					"node %s: label %s (expected the cloud's %q, saw %q)", n.Name, corev1.LabelTopologyRegion, inst.Region, n.Labels[corev1.LabelTopologyRegion])
			}
		})

		It("initializes a node that joins while the CCM runs", func(ctx SpecContext) {
			f.RequireMachines()
			added := time.Now()
			m, err := f.Machines.Add(ctx, framework.MachineRequest{})
			Expect(err).NotTo(HaveOccurred(), "adding a machine")
			DeferCleanup(f.Machines.Delete, m.Name)

			waitInitialized(ctx, m.Name, func(g Gomega, n *corev1.Node) {
				g.Expect(n.Spec.ProviderID).To(Equal(m.Instance.ProviderID), "node %s: expected spec.providerID %q (its instance's), saw %q",
					m.Name, m.Instance.ProviderID, n.Spec.ProviderID)
			})
			AddReportEntry(framework.EntryNodeInitialized, time.Since(added), ReportEntryVisibilityFailureOrVerbose)
		})

		It("updates a node's addresses when the cloud changes them", func(ctx SpecContext) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbInstanceSetAddresses)
			m, err := f.Machines.Add(ctx, framework.MachineRequest{})
			Expect(err).NotTo(HaveOccurred(), "adding a machine")
			DeferCleanup(f.Machines.Delete, m.Name)

			waitInitialized(ctx, m.Name, nil)

			// Give the instance a new external address, as when an elastic
			// or floating IP is attached to a running machine.
			newExternal := fmt.Sprintf("198.51.100.%d", 1+rand.IntN(254))
			var changed []clouddriver.Address
			for _, a := range m.Instance.Addresses {
				if a.Type == string(corev1.NodeExternalIP) && net.ParseIP(a.Address).To4() != nil {
					continue
				}
				changed = append(changed, a)
			}
			changed = append(changed, clouddriver.Address{Type: string(corev1.NodeExternalIP), Address: newExternal})
			inst, err := f.Driver.SetInstanceAddresses(ctx, m.Name, changed)
			Expect(err).NotTo(HaveOccurred(), "instance %s: setting the addresses [%s]", m.Name, framework.FormatAddresses(changed))

			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.Name)
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				want, err := framework.ExpectedAddresses(inst.Addresses, framework.RegisteredBy(n))
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				g.Expect(framework.SameAddressSet(n.Status.Addresses, want)).To(BeTrue(),
					"node %s: expected addresses [%s] after the cloud changed them, saw [%s]",
					m.Name, framework.FormatAddresses(want), framework.FormatAddresses(n.Status.Addresses))
			}).WithTimeout(f.Timeout(profile.NodeAddressUpdate)).Should(Succeed())
		})
	})
}
