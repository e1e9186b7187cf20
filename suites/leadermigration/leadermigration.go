// Package leadermigration checks leader migration (KEP-2436): a highly
// available control plane moves the cloud controllers (service, route,
// cloud-node-lifecycle) between controller managers under a shared
// migration lease, and no controller may run in two places at once.
//
// Every spec stops the main CCM, which runs all controllers without leader
// election, starts instances of the CCM under test with leader election
// and --enable-leader-migration, and restarts the main CCM at the end. The
// peers are CCM instances too: docs/leader-migration.md says why
// kube-controller-manager v1.37.2 cannot be one.
//
// Floor: the suites. They stand on the framework alone and name
// capabilities, never a provider.
package leadermigration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// Suite returns the leader migration suite.
func Suite() framework.Suite {
	return framework.Suite{Name: "leadermigration", Declare: declare, SpecSeconds: specSeconds}
}

// specSeconds is how long a typical spec takes: every spec waits for
// leases to change hands.
const specSeconds = 10

// handoverRounds is how many times the No overlap spec moves the migrated
// controllers from one replica to the other.
const handoverRounds = 2

func declare(f *framework.Framework) {
	Describe("Leader migration: the CCM runs the migrated cloud controllers only under the migration lease", framework.LongestFirst(specSeconds), Label(string(profile.LeaderMigration), string(profile.LoadBalancer)), func() {
		l := &lm{f: f}

		BeforeEach(func(ctx SpecContext) {
			f.RequireCCMs()
			l.migrated = migratedControllers(f.Profile)

			ns, err := f.CreateNamespace(ctx, "lm")
			Expect(err).NotTo(HaveOccurred(), "creating the spec's namespace")
			l.ns = ns
			DeferCleanup(f.DeleteNamespace, ns)

			l.dir, err = os.MkdirTemp("", "ccm-conformance-lm-")
			Expect(err).NotTo(HaveOccurred(), "making a directory for the migration configurations")
			DeferCleanup(os.RemoveAll, l.dir)

			// The main CCM runs every controller without leader election;
			// it must be out of the way, and back (before the namespace
			// goes, so that it finalizes the spec's Services) at the end.
			restart, err := f.CCMInstances.StopMain(ctx)
			Expect(err).NotTo(HaveOccurred(), "stopping the main CCM")
			DeferCleanup(func(ctx SpecContext) error { return restart(ctx) })
		})

		// keptAway watches, for the hold time, that u runs none of the
		// controllers in mustNot while holder keeps the migration lease,
		// and that the Service gets no ingress.
		keptAway := func(ctx context.Context, u, holder *manager, lease string, mustNot []string, svc, why string) {
			l.waitUntilRunsOthers(ctx, u, mustNot)
			Consistently(ctx, func(g Gomega) {
				holder.alive(ctx, g)
				u.alive(ctx, g)
				now, err := l.leaseHolder(ctx, lease)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(now).To(Equal(holder.identity), "lease %s/%s: expected it held by %s (%q) while that runs, saw holder %q",
					leaseNamespace, lease, holder.role, holder.identity, now)
				running, err := u.controllers(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(intersect(running, mustNot)).To(BeEmpty(),
					"%s: expected none of %v running, since %s; saw %v running (its /healthz?verbose lists %v)",
					u.role, mustNot, why, intersect(running, mustNot), running)
				s, err := l.service(ctx, svc)
				g.Expect(err).NotTo(HaveOccurred(), "reading Service %s/%s", l.ns, svc)
				g.Expect(s.Status.LoadBalancer.Ingress).To(BeEmpty(),
					"Service %s/%s: expected no ingress, since %s; saw %s: a service controller runs outside the migration lock",
					l.ns, svc, why, framework.IngressAddresses(s))
			}).WithTimeout(f.Timeout(profile.LeaderMigrationHold)).WithPolling(l.poll()).Should(Succeed())
		}

		// noCloudChanges checks, after the fact, that the cloud logged no
		// EnsureLoadBalancer since mark.
		noCloudChanges := func(ctx context.Context, mark int64, why string) {
			if !l.hasCallLog() {
				return
			}
			calls := l.callsAfter(ctx, mark, clouddriver.OpEnsureLoadBalancer)
			Expect(calls).To(BeEmpty(), "the cloud's call log: expected no %s, since %s; saw %s: a service controller ran outside the migration lock",
				clouddriver.OpEnsureLoadBalancer, why, formatCalls(calls))
		}

		// actsOnceItHolds is the positive control of a spec that watched u
		// stay away from the migrated controllers: once holder stops, u
		// takes the migration lease and the pending Service gets its
		// ingress, so the quiet before was the lease's doing, not a CCM
		// that never acts.
		actsOnceItHolds := func(ctx context.Context, u, holder *manager, lease, svc string) {
			Expect(holder.stop(ctx)).To(Succeed(), "stopping %s", holder.role)
			l.waitForHolder(ctx, lease, holder.identity, u)
			expectIngress(ctx, l, svc, fmt.Sprintf("%s holds the migration lease %s/%s now that %s stopped (the control)", u.role, leaseNamespace, lease, holder.role))
		}

		It("keeps the migrated controllers stopped while another manager holds the migration lease", func(ctx SpecContext) {
			l.spec = "lm-locked"
			f.RequireDriverVerbs(clouddriver.VerbCallsList)
			cfg := newMigrationConfig(l.ns+"-migration", componentCCM, l.migrated)
			file := l.writeConfig(cfg, "migration")
			DeferCleanup(l.deleteLeases, cfg.LeaderName, l.ns+"-holder", l.ns+"-ccm")

			holder := l.startHolder(ctx, cfg, file)
			mark := l.callMark(ctx)
			u := l.startUnderTest(ctx, file)
			l.createService(ctx, "web")

			why := fmt.Sprintf("%s holds the migration lease %s/%s", holder.role, leaseNamespace, cfg.LeaderName)
			keptAway(ctx, u, holder, cfg.LeaderName, l.migrated, "web", why)
			noCloudChanges(ctx, mark, why)
			actsOnceItHolds(ctx, u, holder, cfg.LeaderName, "web")
		})

		It("takes the migration lease once its holder stops, and the pending Service gets its load balancer", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			l.spec = "lm-handover"
			cfg := newMigrationConfig(l.ns+"-migration", componentCCM, l.migrated)
			file := l.writeConfig(cfg, "migration")
			DeferCleanup(l.deleteLeases, cfg.LeaderName, l.ns+"-holder", l.ns+"-ccm")

			holder := l.startHolder(ctx, cfg, file)
			u := l.startUnderTest(ctx, file)
			mark := l.callMark(ctx)
			l.createService(ctx, "web")

			Expect(holder.stop(ctx)).To(Succeed(), "stopping %s", holder.role)
			stopped := time.Now()
			l.waitForHolder(ctx, cfg.LeaderName, holder.identity, u)
			took := time.Since(stopped).Round(10 * time.Millisecond)
			AddReportEntry("handover", fmt.Sprintf("%s took the migration lease %s after its holder stopped (lease duration %s)",
				u.role, took, f.Timeout(profile.LeaderElectionLease)))

			Eventually(ctx, func(g Gomega) {
				running, err := u.controllers(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(missing(l.migrated, running)).To(BeEmpty(),
					"%s (holding the migration lease %s/%s): expected %v running, saw %v missing (its /healthz?verbose lists %v)",
					u.role, leaseNamespace, cfg.LeaderName, l.migrated, missing(l.migrated, running), running)
			}).WithTimeout(f.Timeout(profile.LeaderMigrationHandover)).WithPolling(l.poll()).Should(Succeed())
			l.waitForIngress(ctx, "web")

			if l.hasCallLog() {
				calls := l.callsAfter(ctx, mark, clouddriver.OpEnsureLoadBalancer)
				Expect(calls).NotTo(BeEmpty(), "Service %s/web (has ingress): expected a %s in the cloud's call log since its creation, saw none", l.ns, clouddriver.OpEnsureLoadBalancer)
				Expect(callers(calls)).To(HaveLen(1), "Service %s/web: expected one process to change load balancers since its creation, saw %d: %s",
					l.ns, len(callers(calls)), formatCalls(calls))
			}
		})

		It("never runs a migrated controller in two replicas at once while they take turns holding the migration lease", Label(framework.ReleaseBlocking), func(ctx SpecContext) {
			l.spec = "lm-overlap"
			f.RequireDriverVerbs(clouddriver.VerbCallsList)
			cfg := newMigrationConfig(l.ns+"-migration", componentCCM, l.migrated)
			file := l.writeConfig(cfg, "migration")
			// Each replica holds a main lease of its own, as the two sides
			// of a migration do, so only the migration lease keeps them
			// from running the migrated controllers together.
			DeferCleanup(l.deleteLeases, cfg.LeaderName)
			mark := l.callMark(ctx)

			lease := f.Timeout(profile.LeaderElectionLease)
			s := newSampler(l.migrated, lease/2)
			type replica struct {
				label      string
				generation int
				m          *manager
			}
			replicas := []*replica{{label: "a"}, {label: "b"}}
			// startReplica starts a replica (again) and returns once it holds
			// its main lease and so competes for the migration lease, and
			// the sampler has seen it so a few times. Each start gets a main
			// lease of its own, as a restarted pod whose old lease expires
			// would hold, without waiting for the expiry: only the
			// migration lease is shared.
			startReplica := func(ctx context.Context, r *replica) {
				r.generation++
				name := fmt.Sprintf("%s-%s-%d", l.spec, r.label, r.generation)
				mainLease := fmt.Sprintf("%s-%s-%d", l.ns, r.label, r.generation)
				DeferCleanup(l.deleteLeases, mainLease)
				r.m = l.start(ctx, managerSpec{name: name, mainLease: mainLease, configFile: file})
				s.add(r.m)
				l.waitForMainLease(ctx, r.m, "")
				seen := s.taken()
				Eventually(ctx, s.taken).WithTimeout(f.Timeout(profile.LeaderMigrationHandover)).WithPolling(l.poll()).
					Should(BeNumerically(">=", seen+3), "the /healthz sampler: expected 3 more samples after %s started, saw it stalled", r.m.role)
			}
			s.run(ctx, l.poll())
			DeferCleanup(func() { s.Stop() })

			startReplica(ctx, replicas[0])
			l.waitForHolder(ctx, cfg.LeaderName, "", replicas[0].m)
			startReplica(ctx, replicas[1])
			services := []string{"web-0"}
			l.createService(ctx, "web-0")
			l.waitForIngress(ctx, "web-0")

			// active waits until exactly one replica runs every migrated
			// controller, and returns it.
			active := func(ctx context.Context) *replica {
				var found *replica
				Eventually(ctx, func(g Gomega) {
					found = nil
					var runners []string
					for _, r := range replicas {
						if r.m.proc.Exited() {
							continue // the one just stopped
						}
						running, err := r.m.controllers(ctx)
						g.Expect(err).NotTo(HaveOccurred())
						if len(missing(l.migrated, running)) == 0 {
							found = r
							runners = append(runners, r.m.role)
						}
					}
					g.Expect(runners).To(HaveLen(1), "expected one replica to run %v, saw %d: %v", l.migrated, len(runners), runners)
				}).WithTimeout(f.Timeout(profile.LeaderMigrationHandover)).WithPolling(l.poll()).Should(Succeed())
				return found
			}

			for round := 1; round <= handoverRounds; round++ {
				from := active(ctx)
				s.remove(from.m)
				Expect(from.m.stop(ctx)).To(Succeed(), "stopping %s", from.m.role)
				svc := fmt.Sprintf("web-%d", round)
				l.createService(ctx, svc)
				services = append(services, svc)
				to := active(ctx)
				Expect(to).NotTo(BeIdenticalTo(from), "expected the migrated controllers to move away from the stopped %s, saw it run them", from.m.role)
				l.waitForIngress(ctx, svc)
				startReplica(ctx, from)
			}

			samples, overlaps := s.Stop()
			Expect(samples).To(BeNumerically(">", 0), "expected samples of the replicas' /healthz?verbose, saw none taken")
			shown := overlaps[:min(len(overlaps), 3)]
			Expect(overlaps).To(BeEmpty(), "expected each migrated controller in one replica at a time, saw one in two in %d of %d samples of their /healthz?verbose; the first: %s",
				len(overlaps), samples, strings.Join(shown, "; "))

			// Every Service converges, and its load balancer is in the cloud.
			for _, name := range services {
				svc := l.waitForIngress(ctx, name)
				if !f.Driver.Supports(clouddriver.VerbLoadBalancerGet) {
					continue
				}
				cloud, err := f.Driver.GetLoadBalancer(ctx, framework.ServiceRef(svc))
				Expect(err).NotTo(HaveOccurred(), "asking the cloud driver for the load balancer of Service %s/%s", l.ns, name)
				Expect(cloud.Exists).To(BeTrue(), "Service %s/%s (ingress %s): expected a load balancer in the cloud, saw none",
					l.ns, name, framework.IngressAddresses(svc))
			}

			calls := l.callsAfter(ctx, mark, changeOperations...)
			Expect(callerTakeBacks(calls)).To(BeEmpty(),
				"the cloud's call log: expected each process to change load balancers and routes in one turn, saw turns taken back: %s", strings.Join(callerTakeBacks(calls), "; "))
			if who := callers(calls); len(who) < 2 {
				AddReportEntry("call log", fmt.Sprintf("the cloud's call log names %d caller(s) %v for %d handovers, so it cannot tell the replicas apart; only /healthz was compared", len(who), who, handoverRounds))
			}
		})

		It("does not run a controller the configuration gives back to kube-controller-manager, whoever holds the lease, and runs the ones still given to it", func(ctx SpecContext) {
			l.spec = "lm-rollback"
			cfg := newMigrationConfig(l.ns+"-migration", componentCCM, l.migrated).assign(serviceController, componentKCM)
			file := l.writeConfig(cfg, "rollback")
			DeferCleanup(l.deleteLeases, cfg.LeaderName, l.ns+"-holder", l.ns+"-ccm")
			ours := cfg.ownedBy(componentCCM)

			holder := l.startHolder(ctx, cfg, file)
			mark := l.callMark(ctx)
			u := l.startUnderTest(ctx, file)
			l.createService(ctx, "web")
			why := fmt.Sprintf("%s holds the migration lease %s/%s and the configuration gives %s to %s",
				holder.role, leaseNamespace, cfg.LeaderName, serviceController, componentKCM)
			keptAway(ctx, u, holder, cfg.LeaderName, l.migrated, "web", why)

			// Now the CCM holds the lease itself.
			Expect(holder.stop(ctx)).To(Succeed(), "stopping %s", holder.role)
			l.waitForHolder(ctx, cfg.LeaderName, holder.identity, u)
			Eventually(ctx, func(g Gomega) {
				running, err := u.controllers(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(missing(ours, running)).To(BeEmpty(),
					"%s (holding the migration lease %s/%s): expected %v running, which the configuration still gives to %s, saw %v missing (its /healthz?verbose lists %v)",
					u.role, leaseNamespace, cfg.LeaderName, ours, componentCCM, missing(ours, running), running)
			}).WithTimeout(f.Timeout(profile.LeaderMigrationHandover)).WithPolling(l.poll()).Should(Succeed())
			why = fmt.Sprintf("the configuration gives %s to %s (%s holds the migration lease)", serviceController, componentKCM, u.role)
			Consistently(ctx, func(g Gomega) {
				u.alive(ctx, g)
				running, err := u.controllers(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(running).NotTo(ContainElement(serviceController), "%s: expected %s not running, since %s; saw it run (its /healthz?verbose lists %v)",
					u.role, serviceController, why, running)
				s, err := l.service(ctx, "web")
				g.Expect(err).NotTo(HaveOccurred(), "reading Service %s/web", l.ns)
				g.Expect(s.Status.LoadBalancer.Ingress).To(BeEmpty(), "Service %s/web: expected no ingress, since %s; saw %s",
					l.ns, why, framework.IngressAddresses(s))
			}).WithTimeout(f.Timeout(profile.LeaderMigrationHold)).WithPolling(l.poll()).Should(Succeed())
			noCloudChanges(ctx, mark, why)

			// The control, which holds also where only LoadBalancer is
			// claimed and nothing else is left to the CCM: the same CCM,
			// restarted with a configuration that gives the service
			// controller back to it, gives the same Service its ingress.
			full := l.writeConfig(newMigrationConfig(cfg.LeaderName, componentCCM, l.migrated), "migration")
			Expect(u.stop(ctx)).To(Succeed(), "stopping %s", u.role)
			mainBefore, err := l.leaseHolder(ctx, u.mainLease)
			Expect(err).NotTo(HaveOccurred(), "reading lease %s/%s", leaseNamespace, u.mainLease)
			migrationBefore, err := l.leaseHolder(ctx, cfg.LeaderName)
			Expect(err).NotTo(HaveOccurred(), "reading lease %s/%s", leaseNamespace, cfg.LeaderName)
			again := l.start(ctx, managerSpec{name: l.spec + "-ccm-again", mainLease: u.mainLease, configFile: full})
			l.waitForMainLease(ctx, again, mainBefore)
			l.waitForHolder(ctx, cfg.LeaderName, migrationBefore, again)
			expectIngress(ctx, l, "web", fmt.Sprintf("%s runs with a configuration that gives %s to %s and holds the migration lease %s/%s (the control)",
				again.role, serviceController, componentCCM, leaseNamespace, cfg.LeaderName))
		})

		It("covers every cloud controller it runs with the migration lock of the configuration it ships", func(ctx SpecContext) {
			l.spec = "lm-names"
			// Both managers use the configuration the provider ships (the
			// profile's leaderMigration.config) or, without one, their
			// default, whose lease is upstream's default one.
			configFile := f.Profile.LeaderMigrationConfig()
			lease := defaultMigrationLease
			if configFile != "" {
				shipped, err := readMigrationConfig(configFile)
				Expect(err).NotTo(HaveOccurred(), "the profile's leaderMigration.config")
				lease = shipped.LeaderName
			}
			DeferCleanup(l.deleteLeases, lease, l.ns+"-holder", l.ns+"-ccm")
			holder := l.startHolder(ctx, migrationConfig{LeaderName: lease}, configFile)
			mark := l.callMark(ctx)
			u := l.startUnderTest(ctx, configFile)
			l.createService(ctx, "web")

			// Watch what it runs while it cannot have the migration lease.
			l.waitUntilRunsOthers(ctx, u, cloudControllerNames())
			var seen []string
			Consistently(ctx, func(g Gomega) {
				holder.alive(ctx, g)
				u.alive(ctx, g)
				now, err := l.leaseHolder(ctx, lease)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(now).To(Equal(holder.identity), "lease %s/%s: expected it held by %s (%q) while that runs, saw holder %q",
					leaseNamespace, lease, holder.role, holder.identity, now)
				running, err := u.controllers(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				for _, c := range running {
					if !slices.Contains(seen, c) {
						seen = append(seen, c)
					}
				}
			}).WithTimeout(f.Timeout(profile.LeaderMigrationHold)).WithPolling(l.poll()).Should(Succeed())

			var outside []string
			for _, c := range seen {
				if isCloudController(c) {
					outside = append(outside, c)
				}
			}
			slices.Sort(outside)
			if len(outside) > 0 {
				Fail(l.uncoveredMessage(ctx, u, holder, configFile, lease, outside, mark))
			}
			actsOnceItHolds(ctx, u, holder, lease, "web")
		})
	})
}

// uncoveredMessage says precisely which cloud controllers ran outside the
// migration lock under the configuration the CCM was started with
// (configFile, or its default when that is empty), what that configuration
// names, and what else showed it.
func (l *lm) uncoveredMessage(ctx context.Context, u, holder *manager, configFile, lease string, outside []string, mark int64) string {
	var b strings.Builder
	them := "them"
	if len(outside) == 1 {
		them = "it"
	}
	started, which := "no --leader-migration-config", "default"
	if configFile != "" {
		started, which = "--leader-migration-config="+configFile+" (the profile's leaderMigration.config)", "shipped"
	}
	fmt.Fprintf(&b, "the CCM runs %s outside the migration lock: expected %s to wait for the migration lease %s/%s, "+
		"saw %s listed in the /healthz?verbose of %s while %s held the lease (started with --enable-leader-migration and %s).",
		strings.Join(outside, ", "), them, leaseNamespace, lease, them, u.role, holder.role, started)
	enabled, cfg, err := l.configz(ctx, u)
	switch {
	case err != nil:
		fmt.Fprintf(&b, " (Its migration configuration could not be read: %v.)", err)
	case !enabled:
		fmt.Fprintf(&b, " Its /configz says leader migration is off.")
	default:
		fmt.Fprintf(&b, " Its %s migration configuration (from /configz) names %s", which, strings.Join(cfg.controllerNames(), ", "))
		var notes []string
		for _, c := range outside {
			if k := kcmNameOf(c); k != c && slices.Contains(cfg.controllerNames(), k) {
				notes = append(notes, fmt.Sprintf("%s, not %s", k, c))
			}
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, ": kube-controller-manager's names (%s), which match no controller of the CCM", strings.Join(notes, "; "))
		}
		b.WriteString(".")
	}
	if svc, err := l.service(ctx, "web"); err == nil && len(svc.Status.LoadBalancer.Ingress) > 0 {
		fmt.Fprintf(&b, " Meanwhile Service %s/web got ingress %s.", l.ns, framework.IngressAddresses(svc))
	}
	if l.hasCallLog() {
		if calls := l.callsAfter(ctx, mark, clouddriver.OpEnsureLoadBalancer); len(calls) > 0 {
			fmt.Fprintf(&b, " The cloud logged %s.", formatCalls(calls))
		}
	}
	return b.String()
}

// expectIngress waits until the Service has a load balancer ingress; why
// says, for the failure message, why it must.
func expectIngress(ctx context.Context, l *lm, name, why string) {
	l.f.Eventually(ctx, func(g Gomega, v *framework.View) {
		svc, err := v.Service(l.ns, name)
		g.Expect(err).NotTo(HaveOccurred(), "Service %s/%s", l.ns, name)
		g.Expect(svc.Status.LoadBalancer.Ingress).NotTo(BeEmpty(), func() string {
			msg := fmt.Sprintf("Service %s/%s: expected a load balancer ingress, since %s; saw none", l.ns, name, why)
			if w := l.f.LastWarning(ctx, "Service", l.ns, name); w != "" {
				msg += "; last event: " + w
			}
			return msg
		})
	}).WithTimeout(l.f.Timeout(profile.LoadBalancerCreate)).Should(Succeed())
}
