// Package nodelifecycle checks the CCM's cloud node lifecycle controller:
// the Node of a deleted instance is deleted, the Node of a stopped instance
// is tainted as shut down and kept, and a NotReady Node is not deleted
// while the cloud cannot say whether its instance exists.
package nodelifecycle

import (
	"context"

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

// Suite returns the node lifecycle suite.
func Suite() framework.Suite {
	return framework.Suite{Name: "nodelifecycle", Declare: declare}
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
			Eventually(ctx, func(g Gomega) {
				n, err := f.Client.CoreV1().Nodes().Get(ctx, m.Name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Uninitialized(n)).To(BeFalse(), "node %s still has the uninitialized taint", m.Name)
			}).WithTimeout(f.Timeout(profile.NodeInitialize)).WithPolling(f.PollInterval()).Should(Succeed())
			return m
		}

		waitNotReady := func(ctx context.Context, name string) {
			Eventually(ctx, func(g Gomega) {
				n, err := f.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Ready(n)).To(BeFalse(), "node %s is still Ready although its kubelet went silent", name)
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).WithPolling(f.PollInterval()).Should(Succeed())
		}

		expectDeleted := func(ctx context.Context, name, why string) {
			Eventually(ctx, func(g Gomega) {
				n, err := f.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n).To(BeNil(), "node %s still exists (Ready=%v, taints %v) although %s", name, framework.Ready(n), n.Spec.Taints, why)
			}).WithTimeout(f.Timeout(profile.NodeDeletion)).WithPolling(f.PollInterval()).Should(Succeed())
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
			Eventually(ctx, func(g Gomega) {
				n, err := f.Client.CoreV1().Nodes().Get(ctx, m.Name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred(), "node %s of a stopped (not deleted) instance must be kept", m.Name)
				g.Expect(framework.HasTaint(n, cloudproviderapi.TaintNodeShutdown)).To(BeTrue(),
					"node %s: instance is stopped and the node NotReady, expected taint %s, saw taints %v", m.Name, cloudproviderapi.TaintNodeShutdown, n.Spec.Taints)
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).WithPolling(f.PollInterval()).Should(Succeed())

			Expect(f.Driver.StartInstance(ctx, m.Name)).To(Succeed())
			m.Kubelet.Resume()
			Eventually(ctx, func(g Gomega) {
				n, err := f.Client.CoreV1().Nodes().Get(ctx, m.Name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Ready(n)).To(BeTrue(), "node %s is not Ready after its instance started", m.Name)
				g.Expect(framework.HasTaint(n, cloudproviderapi.TaintNodeShutdown)).To(BeFalse(),
					"node %s: instance running again, yet the %s taint stays", m.Name, cloudproviderapi.TaintNodeShutdown)
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).WithPolling(f.PollInterval()).Should(Succeed())
		})

		It("keeps a Node whose instance never existed uninitialized, and deletes it once it is NotReady", func(ctx SpecContext) {
			f.RequireMachines()
			name := framework.UniqueName("ccm-phantom")
			k, err := f.Machines.StartKubelet(ctx, nodes.Spec{Name: name})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(f.Machines.Delete, name)

			Consistently(ctx, func(g Gomega) {
				n, err := f.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Uninitialized(n)).To(BeTrue(), "node %s has no instance in the cloud, yet the CCM initialized it (providerID %q)", name, n.Spec.ProviderID)
			}).WithTimeout(4 * f.PollInterval()).WithPolling(f.PollInterval()).Should(Succeed())

			k.Stop()
			expectDeleted(ctx, name, "no instance of that name exists and the node is NotReady")
		})

		It("keeps a NotReady Node while the cloud answers instance lookups with errors", func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbFaultInject, clouddriver.VerbFaultClear)
			m := initializedMachine(ctx)

			Expect(f.Driver.InjectFault(ctx, clouddriver.FaultTargetInstances, 1)).To(Succeed())
			DeferCleanup(f.Driver.ClearFaults)
			m.Kubelet.Stop()
			waitNotReady(ctx, m.Name)
			Consistently(ctx, func(g Gomega) {
				n, err := f.Client.CoreV1().Nodes().Get(ctx, m.Name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred(),
					"node %s was deleted while the cloud answered every instance lookup with an error: the CCM must not take an error for a missing instance", m.Name)
				g.Expect(n.Status.Conditions).NotTo(BeEmpty())
			}).WithTimeout(f.Timeout(profile.NodeKeep)).WithPolling(f.PollInterval()).Should(Succeed())
		})
	})
}
