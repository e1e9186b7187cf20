// Package framework is the library the conformance suites are written
// against. A suite receives a *Framework when its specs are declared and
// uses it when they run: by then the runner has filled in the cluster
// clients, the profile, the cloud driver and, on clusters whose nodes the
// harness simulates, the machines.
//
// Helpers here return errors; only specs call Expect.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package framework

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/labels"
)

// Suite is one capability's set of specs.
type Suite struct {
	// Name is the suite's short name, also used in report file names.
	Name string
	// Declare declares the suite's specs; it runs before the cluster exists,
	// so it must only capture f, never use it.
	Declare func(f *Framework)
	// SpecSeconds is how long a typical spec of the suite takes on the
	// local cluster with the reference provider, a hint for spreading
	// specs over lanes. Default 1.
	SpecSeconds float64
}

// LongestFirst decorates a suite's top-level container with its
// SpecSeconds as ginkgo's SpecPriority. Ginkgo starts the top-level
// containers of higher priority first, still shuffling those of equal
// priority by the seed, and lanes take specs in ginkgo's order: so the
// suites whose specs wait longest (for leases, for nodes to turn NotReady)
// start at once, shorter specs fill in behind them, and the lanes finish
// together whatever the seed.
func LongestFirst(specSeconds float64) ginkgo.SpecPriority {
	return ginkgo.SpecPriority(math.Round(specSeconds))
}

// CCMLogs gives access to the log of the CCM under test, so that a spec can
// quote the CCM's own reason for a failure.
type CCMLogs interface {
	// Log returns everything the CCM has logged so far.
	Log(ctx context.Context) (string, error)
}

// CCMEnded is implemented by the CCMLogs of a CCM the harness runs as a
// process or a container beside the cluster.
type CCMEnded interface {
	// EndedOnItsOwn describes how the CCM ended when nothing stopped it
	// (its exit and last log lines), or is nil while it runs or while a
	// spec has stopped it.
	EndedOnItsOwn() error
}

// Framework is what a spec sees of the run.
type Framework struct {
	// Profile is the provider profile of this run.
	Profile *profile.Profile
	// Config and Client reach the cluster under test as its admin.
	Config *rest.Config
	Client kubernetes.Interface
	// Driver is the provider's cloud driver, or nil if the profile has none.
	Driver *clouddriver.Driver
	// Watch keeps the cluster's Nodes and Services as last watched; waits
	// on them read it through Eventually and Consistently.
	Watch *Watch
	// Machines adds simulated machines (a cloud instance plus a simulated
	// kubelet). Nil where the cluster's nodes are real.
	Machines *Machines
	// CCM is the log of the CCM under test, or nil when it is unknown.
	CCM CCMLogs
	// ClusterCIDRs are the cluster's pod networks, or nil when unknown.
	ClusterCIDRs []string
	// CCMInstances starts more instances of the CCM under test, or stops
	// the main one; nil when the harness does not run the CCM.
	CCMInstances CCMs
	// NodesAwaitingCCM are the real nodes that carried the uninitialized
	// taint when the harness deployed the CCM under test (kind): a spec
	// that sees them initialized has seen the CCM act, as it does on a
	// machine that joins. Empty where the nodes are simulated.
	NodesAwaitingCCM []string
	// EchoImage is the echo server image (cmd/echo-server) the data path
	// specs run as a Service's backend pods on real nodes; "" where the
	// nodes are simulated (their kube-proxy answers) or the harness has
	// none for the cluster.
	EchoImage string
	// Probes sends the data path's traffic through load balancers; its
	// resolver is the profile's loadBalancer.ingressNameserver, if any.
	Probes Prober
	// KubernetesVersion is the API server's version ("v1.36.3"), or ""
	// when unknown (listing specs without a cluster).
	KubernetesVersion string
	// KubernetesEmulation is the minor ("1.35") the API server emulates
	// when it runs with an older compatibility version (KEP-4330), else "".
	// Which upstream changes a cluster has follows it.
	KubernetesEmulation string
}

func skip(message string) { ginkgo.Skip(message) }

// Timeout returns the profile's value for a named wait.
func (f *Framework) Timeout(n profile.TimeoutName) time.Duration {
	return f.Profile.Timeout(n)
}

// PollInterval is how often waits that cannot watch ask again.
func (f *Framework) PollInterval() time.Duration {
	return f.Profile.Timeout(profile.PollInterval)
}

// capabilityLabels are the ginkgo labels that name a required capability.
func capabilityLabels(labels []string) []profile.Capability {
	var out []profile.Capability
	for _, l := range labels {
		if c := profile.Capability(l); c.Known() {
			out = append(out, c)
		}
	}
	return out
}

// MissingCapabilities returns the capabilities among labels that the
// profile does not claim.
func (f *Framework) MissingCapabilities(labels []string) []profile.Capability {
	var missing []profile.Capability
	for _, c := range capabilityLabels(labels) {
		if !f.Profile.Has(c) {
			missing = append(missing, c)
		}
	}
	return missing
}

// SkipUnlessCapable skips the current spec when the profile lacks one of
// the capabilities its labels name, and says which. The runner calls it
// before every spec.
func (f *Framework) SkipUnlessCapable() {
	missing := f.MissingCapabilities(ginkgo.CurrentSpecReport().Labels())
	if len(missing) == 0 {
		return
	}
	names := make([]string, len(missing))
	for i, c := range missing {
		names[i] = string(c)
	}
	ginkgo.Skip(fmt.Sprintf("profile %q does not declare capability %s", f.Profile.Name, strings.Join(names, ", ")))
}

// RequireDriverVerbs skips the current spec when the cloud driver is
// missing or does not implement every verb.
func (f *Framework) RequireDriverVerbs(verbs ...clouddriver.Verb) {
	for _, v := range verbs {
		if v.SimulatorOnly() {
			mustDeclareNeed(labels.SimulatedCloud)
		}
	}
	if f.Driver == nil {
		ginkgo.Skip(fmt.Sprintf("profile %q has no cloud driver; this spec needs %s", f.Profile.Name, quoteVerbs(verbs)))
	}
	for _, v := range verbs {
		if !f.Driver.Supports(v) {
			ginkgo.Skip(fmt.Sprintf("cloud driver does not implement %q", string(v)))
		}
	}
}

// RequireMachines skips the current spec unless the harness can add
// simulated machines to this cluster.
func (f *Framework) RequireMachines() {
	mustDeclareNeed(labels.SimulatedNodes)
	if f.Machines == nil {
		ginkgo.Skip("this cluster's nodes are real machines; the spec needs simulated ones (local backend)")
	}
	f.RequireDriverVerbs(clouddriver.VerbInstanceCreate, clouddriver.VerbInstanceDelete)
}

// mustDeclareNeed fails the current spec when it is release-blocking and
// does not carry the label of a need it has: the verdict and `list` read
// the label to know on which backends the spec blocks, so a missing one
// is a harness bug, caught by the first run of the spec anywhere.
func mustDeclareNeed(n labels.Need) {
	have := ginkgo.CurrentSpecReport().Labels()
	if slices.Contains(have, labels.ReleaseBlocking) && !slices.Contains(have, string(n)) {
		ginkgo.Fail(fmt.Sprintf("[harness] this release-blocking spec needs %s but lacks the label %s (package labels)", n.What(), n))
	}
}

// RegisterNode creates an instance through the cloud driver and registers
// a Node for it as a kubelet run with --cloud-provider=external would (the
// uninitialized taint, no providerID, its Hostname address), so that the
// CCM must initialize it during the spec. No kubelet runs behind it: it
// turns NotReady after the node monitor's grace period, and no pod can run
// there. Node and instance are deleted when the spec ends, in that order.
func (f *Framework) RegisterNode(ctx context.Context) (string, error) {
	name := UniqueName("ccm-join")
	if _, err := f.Driver.CreateInstance(ctx, clouddriver.CreateInstanceRequest{Name: name}); err != nil {
		return "", fmt.Errorf("creating instance %s through the cloud driver: %w", name, err)
	}
	ginkgo.DeferCleanup(func(ctx context.Context) error {
		if err := f.Driver.DeleteInstance(ctx, name); err != nil && !clouddriver.IsNotFound(err) {
			return fmt.Errorf("deleting instance %s: %w", name, err)
		}
		return nil
	})
	node, err := nodes.NewNode(nodes.Spec{Name: name}, f.KubernetesVersion, metav1.Now())
	if err != nil {
		return "", err
	}
	if _, err := f.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("registering node %s: %w", name, err)
	}
	ginkgo.DeferCleanup(func(ctx context.Context) error {
		err := f.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", name, err)
		}
		return nil
	})
	// As a machine's kubelet does: what the spec reads next includes it.
	if f.Watch != nil {
		if err := f.Watch.waitNode(ctx, name, true); err != nil {
			return "", err
		}
	}
	return name, nil
}

func quoteVerbs(verbs []clouddriver.Verb) string {
	q := make([]string, len(verbs))
	for i, v := range verbs {
		q[i] = fmt.Sprintf("%q", string(v))
	}
	return strings.Join(q, ", ")
}

// ReleaseBlocking labels the specs whose results decide a last-known-good
// pair (docs/lkg.md): the core behaviour every CCM with the capability must
// have. It is not a capability, so it never causes a skip.
const ReleaseBlocking = labels.ReleaseBlocking

// The report entries a spec records for the reports (package labels says
// what each holds): how long the CCM took to initialize a joining node,
// and a load balancer to get its ingress.
const (
	EntryNodeInitialized   = labels.EntryNodeInitialized
	EntryLoadBalancerReady = labels.EntryLoadBalancerReady
)

// NeedsSimulatedNodes and NeedsSimulatedCloud label a release-blocking spec
// that only some backends can run (package labels says which): it blocks
// there and nowhere else. They go with the checks that skip the spec
// elsewhere (RequireMachines; RequireDriverVerbs of a simulator-only verb).
const (
	NeedsSimulatedNodes = string(labels.SimulatedNodes)
	NeedsSimulatedCloud = string(labels.SimulatedCloud)
)

// JoiningNode returns the name of a node on which the spec can see the CCM
// act (what it does, as in "program a route", is for the skip message): a
// machine it adds, which goes when the spec ends; on real nodes the harness
// cannot add to, one that still carried the uninitialized taint when the
// harness deployed the CCM (kind); else, where the cloud driver creates and
// deletes instances (an existing cluster), a Node the harness registers
// for an instance it creates, as a kubelet would (RegisterNode). On a
// cluster with none of these the spec skips: there it would only read what
// was written before the run, perhaps by another CCM, and could not tell a
// CCM that acts from one that does nothing.
func (f *Framework) JoiningNode(ctx context.Context, does string) (string, error) {
	if f.Machines == nil {
		if len(f.NodesAwaitingCCM) > 0 {
			return f.NodesAwaitingCCM[0], nil
		}
		if f.Driver != nil && f.Driver.Supports(clouddriver.VerbInstanceCreate) && f.Driver.Supports(clouddriver.VerbInstanceDelete) {
			return f.RegisterNode(ctx)
		}
		ginkgo.Skip("the harness cannot add a machine to this cluster, no node awaited the CCM when the run began, and the cloud driver does not create and delete instances, so the spec cannot see the CCM " +
			does + "; reading the cluster as it is would only show what was written before the run")
	}
	m, err := f.Machines.Add(ctx, MachineRequest{})
	if err != nil {
		return "", fmt.Errorf("adding a machine: %w", err)
	}
	ginkgo.DeferCleanup(f.Machines.Delete, m.Name)
	return m.Name, nil
}
