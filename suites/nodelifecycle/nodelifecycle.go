// Package nodelifecycle checks the CCM's cloud node lifecycle controller:
// the Node of a deleted instance is deleted, the Node of a stopped instance
// is tainted as shut down and kept, and a NotReady Node is not deleted
// while the cloud cannot say whether its instance exists.
package nodelifecycle

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// failedLookups is how many failed lookups of a NotReady node's instance
// the cloud must have answered before the spec takes the node's survival as
// the CCM's decision.
const failedLookups = 3

// Suite returns the node lifecycle suite.
func Suite() framework.Suite {
	// Every spec waits for a node to turn NotReady.
	return framework.Suite{Name: "nodelifecycle", Declare: declare, SpecSeconds: 6}
}

func declare(f *framework.Framework) {
	Describe("Node lifecycle: the CCM follows instances that are deleted or stopped in the cloud", Label(string(profile.NodeLifecycle)), func() {

		// The lifecycle controller acts only on nodes that are not Ready;
		// kube-controller-manager marks a silent node so after its
		// --node-monitor-grace-period, which the node timeouts include.

		initializedMachine := func(ctx context.Context) *framework.Machine {
			f.RequireMachines()
			m, err := f.Machines.Add(ctx, framework.MachineRequest{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(f.Machines.Delete, m.Name)
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.Name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Uninitialized(n)).To(BeFalse(), "node %s still has the uninitialized taint", m.Name)
			}).WithTimeout(f.Timeout(profile.NodeInitialize)).Should(Succeed())
			return m
		}

		waitNotReady := func(ctx context.Context, name string) {
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Ready(n)).To(BeFalse(), "node %s is still Ready although its kubelet went silent", name)
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).Should(Succeed())
		}

		expectDeleted := func(ctx context.Context, name, why string) {
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(name)
				if apierrors.IsNotFound(err) {
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n.DeletionTimestamp).NotTo(BeNil(), "node %s still exists (Ready=%v, taints %s) although %s", name, framework.Ready(n), framework.FormatTaints(n.Spec.Taints), why)
			}).WithTimeout(f.Timeout(profile.NodeDeletion)).Should(Succeed())
		}

		It("deletes the Node of an instance deleted in the cloud and keeps the others", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbInstanceDelete)
			m := initializedMachine(ctx)
			before, err := f.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())

			// The machine is gone: its kubelet with it.
			m.Kubelet.Stop()
			Expect(f.Driver.DeleteInstance(ctx, m.Name)).To(Succeed())
			expectDeleted(ctx, m.Name, "its instance was deleted from the cloud")

			for _, n := range before.Items {
				if n.Name == m.Name {
					continue
				}
				_, err := f.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred(), "node %s, whose instance still exists, was deleted too", n.Name)
			}
		})

		It("taints the Node of a stopped instance as shut down, keeps it, and lifts the taint when the instance starts again", func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbInstanceStop, clouddriver.VerbInstanceStart)
			m := initializedMachine(ctx)

			m.Kubelet.Stop()
			Expect(f.Driver.StopInstance(ctx, m.Name)).To(Succeed())
			waitNotReady(ctx, m.Name)
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.Name)
				if apierrors.IsNotFound(err) {
					StopTrying(fmt.Sprintf("node %s was deleted, but its instance is only stopped: a Node of a stopped instance must be kept (and tainted %s)",
						m.Name, cloudproviderapi.TaintNodeShutdown)).Now()
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.HasTaint(n, cloudproviderapi.TaintNodeShutdown)).To(BeTrue(),
					"node %s: instance is stopped and the node NotReady, expected taint %s, saw taints %v", m.Name, cloudproviderapi.TaintNodeShutdown, n.Spec.Taints)
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).Should(Succeed())

			Expect(f.Driver.StartInstance(ctx, m.Name)).To(Succeed())
			m.Kubelet.Resume()
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.Name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Ready(n)).To(BeTrue(), "node %s is not Ready after its instance started", m.Name)
				g.Expect(framework.HasTaint(n, cloudproviderapi.TaintNodeShutdown)).To(BeFalse(),
					"node %s: instance running again, yet the %s taint stays", m.Name, cloudproviderapi.TaintNodeShutdown)
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).Should(Succeed())
		})

		It("keeps a Node whose instance never existed uninitialized, and deletes it once it is NotReady", func(ctx SpecContext) {
			f.RequireMachines()
			name := framework.UniqueName("ccm-phantom")
			k, err := f.Machines.StartKubelet(ctx, nodes.Spec{Name: name})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(f.Machines.Delete, name)

			f.Consistently(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Uninitialized(n)).To(BeTrue(), "node %s has no instance in the cloud, yet the CCM initialized it (providerID %q)", name, n.Spec.ProviderID)
			}).WithTimeout(4 * f.PollInterval()).Should(Succeed())

			k.Stop()
			expectDeleted(ctx, name, "no instance of that name exists and the node is NotReady")
		})

		It("keeps a NotReady Node while the cloud answers instance lookups with errors, and deletes it once the cloud says the instance is gone", func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbFaultInject, clouddriver.VerbFaultClear, clouddriver.VerbInstanceDelete)
			m := initializedMachine(ctx)

			Expect(f.Driver.InjectFault(ctx, clouddriver.FaultTargetInstances, 1)).To(Succeed())
			DeferCleanup(f.Driver.ClearFaults)
			m.Kubelet.Stop()
			waitNotReady(ctx, m.Name)
			var mark int64
			callLog := f.Driver.Supports(clouddriver.VerbCallsList)
			if callLog {
				_, last, err := f.Driver.ListCalls(ctx, 0)
				Expect(err).NotTo(HaveOccurred())
				mark = last
			}

			nodeKept := func(g Gomega) {
				_, err := f.View().Node(m.Name)
				g.Expect(err).NotTo(HaveOccurred(),
					"node %s was deleted while the cloud answered every instance lookup with an error: the CCM must not take an error for a missing instance", m.Name)
			}
			if callLog {
				// The control: since the node turned NotReady, the cloud
				// failed the CCM's lookups of the instance again and again
				// (its node lifecycle controller and its node status
				// updates both look), so the CCM has had its chances to
				// act on the errors.
				Eventually(ctx, func(g Gomega) {
					nodeKept(g)
					calls, _, err := f.Driver.ListCalls(ctx, mark)
					g.Expect(err).NotTo(HaveOccurred())
					failed := 0
					for _, c := range calls {
						if c.Resource == m.Name && c.Error != "" {
							failed++
						}
					}
					g.Expect(failed).To(BeNumerically(">=", failedLookups),
						"node %s is NotReady and the cloud's instance API fails, yet the cloud logged %d failed lookups of its instance by the CCM since (%d calls in all), expected %d: is the fault in effect, does the CCM look?",
						m.Name, failed, len(calls), failedLookups)
				}).WithTimeout(f.Timeout(profile.NodeKeep)).WithPolling(f.PollInterval()).Should(Succeed())
			} else {
				Consistently(ctx, nodeKept).WithTimeout(f.Timeout(profile.NodeKeep)).WithPolling(f.PollInterval()).Should(Succeed())
			}

			// The same CCM acts once the cloud answers again and the
			// instance is gone.
			Expect(f.Driver.ClearFaults(ctx)).To(Succeed())
			Expect(f.Driver.DeleteInstance(ctx, m.Name)).To(Succeed())
			expectDeleted(ctx, m.Name, "the cloud answers again and says its instance is gone")
		})
	})
}
