package leadermigration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// leaseNamespace is where controller managers keep their leases unless
// told otherwise (--leader-elect-resource-namespace).
const leaseNamespace = "kube-system"

// lm bundles what the specs of this suite share.
type lm struct {
	f *framework.Framework
	// ns is the spec's namespace; its name also makes the spec's lease
	// names unique, so a lease left by an earlier spec never delays one.
	ns string
	// dir holds the spec's migration configuration files.
	dir string
	// migrated are the cloud controllers the profile says the CCM runs.
	migrated []string
	// spec prefixes the names of the spec's CCM instances, and so their
	// log files (logs/ccm-lm-handover-holder.log).
	spec string
}

func (l *lm) poll() time.Duration { return l.f.PollInterval() }

// manager is a controller manager a spec started: an instance of the CCM
// under test, either the one whose behaviour is checked or a peer.
type manager struct {
	// role names it in messages: `the CCM under test (instance lm-ccm)`.
	role      string
	mainLease string
	proc      *ccm.Process
	// identity is its holder identity in the migration lease, once known.
	identity string
}

// managerSpec says how to start a manager.
type managerSpec struct {
	// name is the CCM instance name (logs/ccm-NAME.log).
	name string
	// peer marks a manager that only stands in for another one; it shows
	// in messages.
	peer bool
	// mainLease is its --leader-elect-resource-name.
	mainLease string
	// configFile is its --leader-migration-config; empty for none, which
	// gives it its default migration configuration.
	configFile string
	// runsNothing disables every controller, for a peer that only holds
	// the migration lease.
	runsNothing bool
}

// leaderElectionArgs are the flags that turn on leader election with the
// profile's lease duration, the renew deadline at two thirds of it and the
// retry period at a fifth (upstream's 15s, 10s and 2s keep about these
// ratios).
func (l *lm) leaderElectionArgs(mainLease string) []string {
	lease := l.f.Timeout(profile.LeaderElectionLease)
	renew := (lease * 2 / 3).Round(time.Millisecond)
	retry := (lease / 5).Round(time.Millisecond)
	return []string{
		"--leader-elect=true",
		"--leader-elect-resource-name=" + mainLease,
		"--leader-elect-lease-duration=" + lease.String(),
		"--leader-elect-renew-deadline=" + renew.String(),
		"--leader-elect-retry-period=" + retry.String(),
	}
}

// start starts a manager with leader election and leader migration on,
// and stops it when the spec ends.
func (l *lm) start(ctx context.Context, ms managerSpec) *manager {
	args := append(l.leaderElectionArgs(ms.mainLease), "--enable-leader-migration")
	if ms.configFile != "" {
		args = append(args, "--leader-migration-config="+ms.configFile)
	}
	if ms.runsNothing {
		// --controllers without "*" enables only the controllers it names;
		// naming one as disabled (it must be a known name) leaves none.
		args = append(args, "--controllers=-"+serviceController)
	}
	m := &manager{role: "the CCM under test (instance " + ms.name + ")", mainLease: ms.mainLease}
	if ms.peer {
		m.role = "the peer (CCM instance " + ms.name + ")"
	}
	p, err := l.f.CCMInstances.Start(ctx, ms.name, args)
	Expect(err).NotTo(HaveOccurred(), "starting %s", m.role)
	m.proc = p
	DeferCleanup(m.stop)
	return m
}

func (m *manager) stop(ctx context.Context) error {
	if m.proc.Exited() {
		return nil
	}
	return m.proc.Stop(ctx)
}

// logTail returns the last lines of the manager's log.
func (m *manager) logTail(ctx context.Context, n int) string {
	log, err := m.proc.Log(ctx)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// alive fails g if the manager has exited, quoting its last log lines.
func (m *manager) alive(ctx context.Context, g Gomega) {
	if m.proc.Exited() {
		g.Expect(m.proc.Exited()).To(BeFalse(), "%s: expected it running, saw it exited; its last log lines:\n%s", m.role, m.logTail(ctx, 8))
	}
}

// controllers returns the controllers the manager runs now, from its
// /healthz?verbose.
func (m *manager) controllers(ctx context.Context) ([]string, error) {
	if m.proc.Exited() {
		return nil, fmt.Errorf("%s: expected it running, saw it exited; its last log lines:\n%s", m.role, m.logTail(ctx, 8))
	}
	_, body, err := m.proc.Healthz(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: /healthz?verbose: %w", m.role, err)
	}
	return healthzControllers(body), nil
}

// leaseHolder returns the holder identity of a lease, "" when there is no
// such lease or nobody holds it.
func (l *lm) leaseHolder(ctx context.Context, name string) (string, error) {
	lease, err := l.f.Client.CoordinationV1().Leases(leaseNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading lease %s/%s: %w", leaseNamespace, name, err)
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// waitForHolder waits until lease name has a holder other than previous
// ("" for none), which must be m since nothing else competes for it, and
// records it as m's identity.
func (l *lm) waitForHolder(ctx context.Context, name, previous string, m *manager) {
	var holder string
	Eventually(ctx, func(g Gomega) {
		m.alive(ctx, g)
		var err error
		holder, err = l.leaseHolder(ctx, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(holder).NotTo(Or(BeEmpty(), Equal(previous)),
			"lease %s/%s: expected %s to take it, saw holder %q", leaseNamespace, name, m.role, holder)
	}).WithTimeout(l.f.Timeout(profile.LeaderMigrationHandover)).WithPolling(l.poll()).Should(Succeed())
	m.identity = holder
}

// deleteLeases removes the spec's leases once its managers are gone.
func (l *lm) deleteLeases(ctx context.Context, names ...string) error {
	for _, name := range names {
		err := l.f.Client.CoordinationV1().Leases(leaseNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting lease %s/%s: %w", leaseNamespace, name, err)
		}
	}
	return nil
}

// startHolder starts a peer that takes the migration lease of cfg and runs
// no controller at all: what kube-controller-manager v1.37 would be in a
// migration if it could hold the lease (it has no cloud controllers left;
// see docs/leader-migration.md for why the real one cannot stand in).
// It returns once the peer holds the lease.
func (l *lm) startHolder(ctx context.Context, cfg migrationConfig, configFile string) *manager {
	previous, err := l.leaseHolder(ctx, cfg.LeaderName)
	Expect(err).NotTo(HaveOccurred(), "reading the migration lease before the peer starts")
	h := l.start(ctx, managerSpec{name: l.spec + "-holder", peer: true, mainLease: l.ns + "-holder", configFile: configFile, runsNothing: true})
	l.waitForHolder(ctx, cfg.LeaderName, previous, h)
	return h
}

// startUnderTest starts the CCM under test and returns once it holds its
// main lease.
func (l *lm) startUnderTest(ctx context.Context, configFile string) *manager {
	u := l.start(ctx, managerSpec{name: l.spec + "-ccm", mainLease: l.ns + "-ccm", configFile: configFile})
	l.waitForMainLease(ctx, u, "")
	return u
}

// waitForMainLease waits until m holds its main lease, which had holder
// previous before m started: from then on m runs its non-migrated
// controllers and asks for the migration lease. A lease left by a stopped
// process is taken only a lease duration after m first sees it.
func (l *lm) waitForMainLease(ctx context.Context, m *manager, previous string) {
	Eventually(ctx, func(g Gomega) {
		m.alive(ctx, g)
		holder, err := l.leaseHolder(ctx, m.mainLease)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(holder).NotTo(Or(BeEmpty(), Equal(previous)), "lease %s/%s: expected %s to take it as its main lease, saw holder %q",
			leaseNamespace, m.mainLease, m.role, holder)
	}).WithTimeout(l.f.Timeout(profile.LeaderMigrationHandover)).WithPolling(l.poll()).Should(Succeed())
}

// waitUntilRunsOthers waits until m runs a controller that is not in
// mustNot: it has started the controllers of its main lease, the pass in
// which a CCM that ignores the migration lease would start the others too.
// Watching for what m must not run means something only after that.
func (l *lm) waitUntilRunsOthers(ctx context.Context, m *manager, mustNot []string) {
	Eventually(ctx, func(g Gomega) {
		running, err := m.controllers(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(missing(running, mustNot)).NotTo(BeEmpty(),
			"%s (holding its main lease %s/%s): expected a controller besides %v running, saw %v in its /healthz?verbose: it has not started its controllers",
			m.role, leaseNamespace, m.mainLease, mustNot, running)
	}).WithTimeout(l.f.Timeout(profile.LeaderMigrationHandover)).WithPolling(l.poll()).Should(Succeed())
}

// writeConfig saves a migration configuration in the spec's directory.
func (l *lm) writeConfig(cfg migrationConfig, name string) string {
	path, err := cfg.write(l.dir, name)
	Expect(err).NotTo(HaveOccurred(), "writing the migration configuration %s", name)
	return path
}

// createService makes a LoadBalancer Service and deletes it when the spec
// ends, while the spec's managers still run.
func (l *lm) createService(ctx context.Context, name string) *corev1.Service {
	svc, err := l.f.Client.CoreV1().Services(l.ns).Create(ctx, l.f.LoadBalancerService(l.ns, name), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "creating Service %s/%s", l.ns, name)
	DeferCleanup(l.f.DeleteService, l.ns, name)
	return svc
}

func (l *lm) service(ctx context.Context, name string) (*corev1.Service, error) {
	return l.f.Client.CoreV1().Services(l.ns).Get(ctx, name, metav1.GetOptions{})
}

// waitForIngress waits until the Service has a load balancer ingress.
func (l *lm) waitForIngress(ctx context.Context, name string) *corev1.Service {
	var svc *corev1.Service
	l.f.Eventually(ctx, func(g Gomega, v *framework.View) {
		var err error
		svc, err = v.Service(l.ns, name)
		g.Expect(err).NotTo(HaveOccurred(), "Service %s/%s", l.ns, name)
		g.Expect(svc.Status.LoadBalancer.Ingress).NotTo(BeEmpty(), func() string {
			// Built only when the wait gives up: it asks the API server.
			msg := fmt.Sprintf("Service %s/%s: expected a load balancer ingress, saw none", l.ns, name)
			if w := l.f.LastWarning(ctx, "Service", l.ns, name); w != "" {
				msg += "; last event: " + w
			}
			return msg
		})
	}).WithTimeout(l.f.Timeout(profile.LoadBalancerCreate)).Should(Succeed())
	return svc
}

// changeOperations are the calls that change load balancers and routes.
var changeOperations = []string{
	clouddriver.OpEnsureLoadBalancer, clouddriver.OpEnsureLoadBalancerDeleted,
	clouddriver.OpCreateRoute, clouddriver.OpDeleteRoute,
}

// hasCallLog reports whether the cloud driver can list the cloud's calls.
func (l *lm) hasCallLog() bool {
	return l.f.Driver != nil && l.f.Driver.Supports(clouddriver.VerbCallsList)
}

// callMark returns the position of the newest call in the cloud's log, or
// 0 without a call log.
func (l *lm) callMark(ctx context.Context) int64 {
	if !l.hasCallLog() {
		return 0
	}
	_, last, err := l.f.Driver.ListCalls(ctx, 0, changeOperations...)
	Expect(err).NotTo(HaveOccurred(), "reading the cloud's call log")
	return last
}

// callsAfter returns the calls of the given operations after mark.
func (l *lm) callsAfter(ctx context.Context, mark int64, operations ...string) []clouddriver.Call {
	calls, _, err := l.f.Driver.ListCalls(ctx, mark, operations...)
	Expect(err).NotTo(HaveOccurred(), "reading the cloud's call log")
	return calls
}

// formatCalls shows calls as "EnsureLoadBalancer by caller X (seq 12)".
func formatCalls(calls []clouddriver.Call) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = fmt.Sprintf("%s by caller %q (seq %d)", c.Operation, c.Caller, c.Seq)
		if c.Error != "" {
			parts[i] += fmt.Sprintf(" failing with %q", c.Error)
		}
	}
	return strings.Join(parts, ", ")
}

// configzTimeout bounds one read of a CCM's /configz, which answers from
// memory on loopback.
const configzTimeout = 5 * time.Second

// configz reads the migration configuration a CCM runs with from its
// /configz, which needs an authorized client: the harness presents the
// cluster's own credentials, and skips verifying the CCM's self-signed
// serving certificate as it does for /healthz.
func (l *lm) configz(ctx context.Context, m *manager) (bool, migrationConfig, error) {
	tlsConfig, err := rest.TLSConfigFor(l.f.Config)
	if err != nil || tlsConfig == nil {
		tlsConfig = &tls.Config{} //nolint:gosec // loopback, read only
	}
	tlsConfig = tlsConfig.Clone()
	tlsConfig.InsecureSkipVerify = true //nolint:gosec // the CCM's certificate is self-signed
	tlsConfig.RootCAs = nil
	client := &http.Client{Timeout: configzTimeout, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/configz", m.proc.SecurePort()), nil)
	if err != nil {
		return false, migrationConfig{}, err
	}
	if l.f.Config.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+l.f.Config.BearerToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, migrationConfig{}, fmt.Errorf("%s: /configz: %w", m.role, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, migrationConfig{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, migrationConfig{}, fmt.Errorf("%s: /configz: HTTP %d: %.200s", m.role, resp.StatusCode, body)
	}
	return configzMigration(body)
}

// intersect returns the names in a that are also in b, sorted.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// missing returns the names in want that are not in have, sorted.
func missing(want, have []string) []string {
	var out []string
	for _, x := range want {
		if !slices.Contains(have, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
