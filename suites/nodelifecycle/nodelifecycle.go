// Package nodelifecycle checks the CCM's cloud node lifecycle controller:
// the Node of a deleted instance is deleted, the Node of a stopped instance
// is tainted as shut down and kept, and a NotReady Node is not deleted
// while the cloud cannot say whether its instance exists.
//
// Floor: the suites. They stand on the framework alone and name
// capabilities, never a provider.
package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
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

// minKeptNodes is how many NotReady nodes whose instances exist a spec
// watches at least.
const minKeptNodes = 3

// clusterZones returns the distinct zones of the instances of the
// cluster's Nodes, sorted; none when the driver cannot list instances.
func clusterZones(ctx context.Context, f *framework.Framework) ([]string, error) {
	if !f.Driver.Supports(clouddriver.VerbInstancesList) {
		return nil, nil
	}
	nodeList, err := f.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes: %w", err)
	}
	instances, err := f.Driver.ListInstances(ctx)
	if err != nil {
		return nil, err
	}
	isNode := map[string]bool{}
	for _, n := range nodeList.Items {
		isNode[n.Name] = true
	}
	var zones []string
	for _, in := range instances {
		if isNode[in.Name] && in.Zone != "" && !slices.Contains(zones, in.Zone) {
			zones = append(zones, in.Zone)
		}
	}
	slices.Sort(zones)
	return zones, nil
}

// Suite returns the node lifecycle suite.
func Suite() framework.Suite {
	return framework.Suite{Name: "nodelifecycle", Declare: declare, SpecSeconds: specSeconds}
}

// specSeconds is how long a typical spec takes: every spec waits for a
// node to turn NotReady.
const specSeconds = 6

func declare(f *framework.Framework) {
	Describe("Node lifecycle: the CCM follows instances that are deleted or stopped in the cloud", framework.LongestFirst(specSeconds), Label(string(profile.NodeLifecycle)), func() {

		// The lifecycle controller acts only on nodes that are not Ready;
		// kube-controller-manager marks a silent node so after its
		// --node-monitor-grace-period, which the node timeouts include.

		// gone reports whether a View's answer for a Node says it is
		// deleted or being deleted.
		gone := func(n *corev1.Node, err error) bool {
			return apierrors.IsNotFound(err) || err == nil && n.DeletionTimestamp != nil
		}

		// addInitializedMachine adds a machine where the harness simulates
		// nodes and waits until the CCM has initialized its node; a spec
		// that needs one everywhere calls initializedMachine instead.
		addInitializedMachine := func(ctx context.Context, req framework.MachineRequest) *framework.Machine {
			m, err := f.Machines.Add(ctx, req)
			Expect(err).NotTo(HaveOccurred(), "adding a machine")
			DeferCleanup(f.Machines.Delete, m.Name)
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.Name)
				if gone(n, err) {
					StopTrying(fmt.Sprintf("node %s was deleted before it was initialized, although its instance exists: expected the CCM to initialize it", m.Name)).Now()
				}
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				g.Expect(framework.Uninitialized(n)).To(BeFalse(), "node %s: expected the uninitialized taint gone, saw taints %s", m.Name, framework.FormatTaints(n.Spec.Taints))
			}).WithTimeout(f.Timeout(profile.NodeInitialize)).Should(Succeed())
			return m
		}
		initializedMachine := func(ctx context.Context, req framework.MachineRequest) *framework.Machine {
			f.RequireMachines()
			return addInitializedMachine(ctx, req)
		}

		// waitNotReady waits until the node is NotReady. A node deleted
		// meanwhile is a failure at once: ifDeleted says why.
		waitNotReady := func(ctx context.Context, name, ifDeleted string) {
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(name)
				if gone(n, err) {
					StopTrying(fmt.Sprintf("node %s was deleted %s", name, ifDeleted)).Now()
				}
				g.Expect(err).NotTo(HaveOccurred(), "node %s", name)
				g.Expect(framework.Ready(n)).To(BeFalse(), "node %s: expected NotReady once its kubelet went silent, saw Ready", name)
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).Should(Succeed())
		}

		expectDeleted := func(ctx context.Context, name, why string) {
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(name)
				if apierrors.IsNotFound(err) {
					return
				}
				g.Expect(err).NotTo(HaveOccurred(), "node %s", name)
				g.Expect(n.DeletionTimestamp).NotTo(BeNil(), "node %s: expected it deleted, since %s; saw it still there (Ready=%v, taints %s)",
					name, why, framework.Ready(n), framework.FormatTaints(n.Spec.Taints))
			}).WithTimeout(f.Timeout(profile.NodeDeletion)).Should(Succeed())
		}

		// subject is the node whose instance a spec deletes or stops.
		type subject struct {
			name string
			// machine is the spec's own simulated machine; nil for a
			// real node, whose kubelet goes down with its instance.
			machine *framework.Machine
		}
		// subjectFor picks the node a spec takes down (planSubject): a
		// machine of its own where the harness simulates nodes, one of the
		// cluster's worker nodes where they are real.
		subjectFor := func(ctx context.Context, need ...clouddriver.Verb) subject {
			in := subjectInput{Driver: f.Driver, Need: need, Simulated: f.Machines != nil}
			plan := planSubject(in)
			// A CCM that has just started may still be initializing the
			// cluster's nodes: one may fit within nodeInitialize.
			deadline := time.Now().Add(f.Timeout(profile.NodeInitialize))
			for plan.NoNode {
				list, err := f.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
				Expect(err).NotTo(HaveOccurred(), "listing the nodes")
				in.Nodes = list.Items
				if plan = planSubject(in); !plan.NoNode || time.Now().After(deadline) {
					break
				}
				select {
				case <-ctx.Done():
					Fail(fmt.Sprintf("choosing a node to take down: %v", ctx.Err()))
				case <-time.After(f.PollInterval()):
				}
			}
			switch {
			case plan.Skip != "":
				Skip(plan.Skip)
			case plan.Simulated:
				// Simulated nodes are one way to a subject, not a need:
				// on real nodes the spec takes one of them.
				m := addInitializedMachine(ctx, framework.MachineRequest{})
				return subject{name: m.Name, machine: m}
			}
			if f.Driver.Supports(clouddriver.VerbInstanceGet) {
				inst, err := f.Driver.GetInstance(ctx, plan.Node)
				Expect(err).NotTo(HaveOccurred(), "node %s (Ready, initialized): expected the cloud driver to have its instance, by the node's name", plan.Node)
				Expect(inst.State).To(Equal(clouddriver.StateRunning), "node %s (Ready): expected its instance %s running before the spec takes it down, saw state %q", plan.Node, inst.ID, inst.State)
			}
			By(fmt.Sprintf("taking down the instance of node %s, a real machine of the cluster", plan.Node))
			return subject{name: plan.Node}
		}
		// silence stops the subject's kubelet, as its instance going down
		// would; a real node's goes down with its instance.
		silence := func(s subject) {
			if s.machine != nil {
				s.machine.Kubelet.Stop()
			}
		}

		It("deletes the Node of an instance deleted in the cloud and keeps the others", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbInstanceDelete)
			m := subjectFor(ctx, clouddriver.VerbInstanceDelete)
			before, err := f.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred(), "listing the nodes")

			// The machine is gone: its kubelet with it.
			silence(m)
			Expect(f.Driver.DeleteInstance(ctx, m.name)).To(Succeed(), "deleting the instance of node %s", m.name)
			expectDeleted(ctx, m.name, "its instance was deleted from the cloud")

			for _, n := range before.Items {
				if n.Name == m.name {
					continue
				}
				_, err := f.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					Fail(fmt.Sprintf("node %s: expected it kept, since its instance still exists, saw it deleted along with node %s", n.Name, m.name))
				}
				Expect(err).NotTo(HaveOccurred(), "reading node %s", n.Name)
			}
		})

		It("keeps every NotReady Node whose instance still exists, in every zone of the cluster, while it deletes the Node of a deleted instance", Label(framework.ReleaseBlocking, framework.NeedsSimulatedNodes), func(ctx SpecContext) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbInstanceDelete)
			// Several nodes, one in each zone the cluster's instances are
			// in, made after the cluster's own: a CCM that gets instance
			// existence wrong for some instances (a zone it does not
			// search, a list it reads only the first page of) cannot pass
			// by the luck of one node's draw.
			zones, err := clusterZones(ctx, f)
			Expect(err).NotTo(HaveOccurred(), "finding the zones of the cluster's instances")
			var kept []*framework.Machine
			for i := range max(minKeptNodes, len(zones)) {
				req := framework.MachineRequest{}
				if len(zones) > 0 {
					req.Zone = zones[i%len(zones)]
				}
				kept = append(kept, initializedMachine(ctx, req))
			}
			victim := initializedMachine(ctx, framework.MachineRequest{})

			deleted := "although its instance is running: expected it kept, since its instance exists"
			keptGone := func(m *framework.Machine) string {
				return fmt.Sprintf("node %s (NotReady, instance %s in zone %s running) was deleted: expected it kept, since its instance exists", m.Name, m.Instance.ID, m.Instance.Zone)
			}
			for _, m := range append(kept, victim) {
				m.Kubelet.Stop()
			}
			for _, m := range kept {
				waitNotReady(ctx, m.Name, deleted)
			}
			// The control: with every kept node NotReady, the same CCM
			// deletes the Node of an instance that is gone.
			Expect(f.Driver.DeleteInstance(ctx, victim.Name)).To(Succeed(), "deleting the instance of node %s", victim.Name)
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				for _, m := range kept {
					if n, err := v.Node(m.Name); gone(n, err) {
						StopTrying(keptGone(m)).Now()
					}
				}
				n, err := v.Node(victim.Name)
				if apierrors.IsNotFound(err) {
					return
				}
				g.Expect(err).NotTo(HaveOccurred(), "node %s", victim.Name)
				g.Expect(n.DeletionTimestamp).NotTo(BeNil(), "node %s: expected it deleted, since its instance was deleted from the cloud (the control: the CCM acts while the other NotReady nodes must be kept); saw it still there", victim.Name)
			}).WithTimeout(f.Timeout(profile.NodeDeletion)).Should(Succeed())
			// The pass of the lifecycle controller that deleted the victim
			// may reach the kept nodes after it: they are watched a little
			// longer.
			// A failed g.Expect ends a Consistently; StopTrying must not:
			// after polls that passed, gomega (v1.44.0) describes a
			// StopTrying with the matcher's failure message for the last
			// passing value, which for Succeed and nil panics, so the
			// spec was reported panicked instead of failed.
			f.Consistently(ctx, func(g Gomega, v *framework.View) {
				for _, m := range kept {
					n, err := v.Node(m.Name)
					g.Expect(gone(n, err)).To(BeFalse(), keptGone(m))
					g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				}
			}).WithTimeout(4 * f.PollInterval()).Should(Succeed())
		})

		It("taints the Node of a stopped instance as shut down, keeps it, and lifts the taint when the instance starts again", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbInstanceStop, clouddriver.VerbInstanceStart)
			m := subjectFor(ctx, clouddriver.VerbInstanceStop, clouddriver.VerbInstanceStart)

			// A real machine must not stay stopped when the spec fails
			// half-way (a simulated one goes with the spec's machine).
			stopped := false
			if m.machine == nil {
				DeferCleanup(func(ctx context.Context) error {
					if !stopped {
						return nil
					}
					return f.Driver.StartInstance(ctx, m.name)
				})
			}
			silence(m)
			Expect(f.Driver.StopInstance(ctx, m.name)).To(Succeed(), "stopping the instance of node %s", m.name)
			stopped = true
			// Deleted: what a CCM that takes a stopped instance for a
			// gone one does. It cannot be undone, so the spec fails at once.
			deleted := fmt.Sprintf("although its instance was only stopped: expected the Node kept and tainted %s", cloudproviderapi.TaintNodeShutdown)
			waitNotReady(ctx, m.name, deleted)
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.name)
				if gone(n, err) {
					StopTrying(fmt.Sprintf("node %s was deleted %s", m.name, deleted)).Now()
				}
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.name)
				g.Expect(framework.HasTaint(n, cloudproviderapi.TaintNodeShutdown)).To(BeTrue(),
					"node %s (instance stopped, node NotReady): expected taint %s, saw taints %s", m.name, cloudproviderapi.TaintNodeShutdown, framework.FormatTaints(n.Spec.Taints))
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).Should(Succeed())

			Expect(f.Driver.StartInstance(ctx, m.name)).To(Succeed(), "starting the instance of node %s", m.name)
			stopped = false
			if m.machine != nil {
				m.machine.Kubelet.Resume()
			}
			f.Eventually(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(m.name)
				if gone(n, err) {
					StopTrying(fmt.Sprintf("node %s was deleted after its instance started again: expected it Ready and without taint %s", m.name, cloudproviderapi.TaintNodeShutdown)).Now()
				}
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.name)
				g.Expect(framework.Ready(n)).To(BeTrue(), "node %s: expected Ready once its instance started and its kubelet resumed, saw NotReady", m.name)
				g.Expect(framework.HasTaint(n, cloudproviderapi.TaintNodeShutdown)).To(BeFalse(),
					"node %s (instance running again): expected taint %s gone, saw taints %s", m.name, cloudproviderapi.TaintNodeShutdown, framework.FormatTaints(n.Spec.Taints))
			}).WithTimeout(f.Timeout(profile.NodeShutdown)).Should(Succeed())

			// A started instance may come back on other addresses (a
			// restarted kind node container gets whichever IP is free):
			// the Node then has them, not those from before the stop.
			if f.Driver.Supports(clouddriver.VerbInstanceGet) {
				Eventually(ctx, func(g Gomega) {
					inst, err := f.Driver.GetInstance(ctx, m.name)
					g.Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the instance of node %s", m.name)
					n, err := f.View().Node(m.name)
					g.Expect(err).NotTo(HaveOccurred(), "node %s", m.name)
					want, err := framework.ExpectedAddresses(inst.Addresses, framework.RegisteredBy(n))
					g.Expect(err).NotTo(HaveOccurred(), "node %s after its instance started again", m.name)
					g.Expect(framework.SameAddressSet(n.Status.Addresses, want)).To(BeTrue(),
						"node %s after its instance started again: expected addresses [%s] (from the cloud), saw [%s]",
						m.name, framework.FormatAddresses(want), framework.FormatAddresses(n.Status.Addresses))
				}).WithTimeout(f.Timeout(profile.NodeAddressUpdate)).WithPolling(f.PollInterval()).Should(Succeed())
			}
		})

		It("keeps a Node whose instance never existed uninitialized, and deletes it once it is NotReady", func(ctx SpecContext) {
			f.RequireMachines()
			f.RequireDriverVerbs(clouddriver.VerbInstanceGet)
			// A random name is not enough: the cloud must say that no
			// instance has it, or a correct CCM would initialize the node.
			name, err := framework.NameWithoutInstance(ctx, framework.NameWithoutInstanceInput{Driver: f.Driver, Prefix: "ccm-phantom"})
			var taken *framework.InstanceNamesTakenError
			if errors.As(err, &taken) {
				Skip(taken.Error())
			}
			Expect(err).NotTo(HaveOccurred(), "choosing a node name no instance has")
			k, err := f.Machines.StartKubelet(ctx, nodes.Spec{Name: name})
			Expect(err).NotTo(HaveOccurred(), "registering node %s, which has no instance", name)
			DeferCleanup(f.Machines.Delete, name)

			f.Consistently(ctx, func(g Gomega, v *framework.View) {
				n, err := v.Node(name)
				g.Expect(err).NotTo(HaveOccurred(), "node %s (no instance in the cloud, Ready): expected it kept while Ready", name)
				g.Expect(framework.Uninitialized(n)).To(BeTrue(), "node %s (no instance in the cloud): expected it uninitialized, saw it initialized (providerID %q)", name, n.Spec.ProviderID)
			}).WithTimeout(4 * f.PollInterval()).Should(Succeed())

			k.Stop()
			expectDeleted(ctx, name, "no instance of that name exists and the node is NotReady")
		})

		It("keeps a NotReady Node while the cloud answers instance lookups with errors, and deletes it once the cloud says the instance is gone", Label(framework.ReleaseBlocking, framework.NeedsSimulatedNodes, framework.NeedsSimulatedCloud), func(ctx SpecContext) {
			f.RequireDriverVerbs(clouddriver.VerbFaultInject, clouddriver.VerbFaultClear, clouddriver.VerbInstanceDelete)
			m := initializedMachine(ctx, framework.MachineRequest{})

			Expect(f.Driver.InjectFault(ctx, clouddriver.FaultTargetInstances, 1)).To(Succeed(), "making the cloud's instance API fail")
			DeferCleanup(f.Driver.ClearFaults)
			m.Kubelet.Stop()
			// Deleted while the cloud cannot say whether the instance
			// exists: that cannot be undone, so the spec fails at once.
			deleted := "while the cloud answered every instance lookup with an error: expected it kept, since an error is no sign that the instance is gone"
			waitNotReady(ctx, m.Name, deleted)
			var mark int64
			callLog := f.Driver.Supports(clouddriver.VerbCallsList)
			if callLog {
				_, last, err := f.Driver.ListCalls(ctx, 0)
				Expect(err).NotTo(HaveOccurred(), "reading the cloud's call log")
				mark = last
			}

			nodeKept := func(g Gomega) {
				n, err := f.View().Node(m.Name)
				if gone(n, err) {
					StopTrying(fmt.Sprintf("node %s was deleted %s", m.Name, deleted)).Now()
				}
				g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
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
					g.Expect(err).NotTo(HaveOccurred(), "reading the cloud's call log")
					failed := 0
					for _, c := range calls {
						if c.Resource == m.Name && c.Error != "" {
							failed++
						}
					}
					g.Expect(failed).To(BeNumerically(">=", failedLookups),
						"node %s (NotReady, the cloud's instance API failing): expected the cloud to log %d failed lookups of its instance by the CCM, saw %d (of %d calls since): is the fault in effect, does the CCM look?",
						m.Name, failedLookups, failed, len(calls))
				}).WithTimeout(f.Timeout(profile.NodeKeep)).WithPolling(f.PollInterval()).Should(Succeed())
			} else {
				// g.Expect, not StopTrying, in a Consistently (see the
				// spec of NotReady nodes in every zone).
				Consistently(ctx, func(g Gomega) {
					n, err := f.View().Node(m.Name)
					g.Expect(gone(n, err)).To(BeFalse(), "node %s was deleted %s", m.Name, deleted)
					g.Expect(err).NotTo(HaveOccurred(), "node %s", m.Name)
				}).WithTimeout(f.Timeout(profile.NodeKeep)).WithPolling(f.PollInterval()).Should(Succeed())
			}

			// The same CCM acts once the cloud answers again and the
			// instance is gone.
			Expect(f.Driver.ClearFaults(ctx)).To(Succeed(), "clearing the cloud's faults")
			Expect(f.Driver.DeleteInstance(ctx, m.Name)).To(Succeed(), "deleting the instance of node %s", m.Name)
			expectDeleted(ctx, m.Name, "the cloud answers again and says its instance is gone")
		})
	})
}
