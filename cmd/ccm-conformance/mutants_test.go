package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// A mutant is the reference provider with one defect switched on: a CCM
// that gets one thing wrong, as its author might under deadline. Run with
// the label filter, every spec in mustFail must fail; the mutant is killed
// when at least one spec failed. docs/mutants.md keeps what `make mutants`
// printed.
type mutant struct {
	defect      string // --reference-defects
	labelFilter string
	mustFail    []string // substrings of spec texts
}

// Label filters of the corpus.
const (
	nodeIPv4         = "NodeIPAnnotation && ReleaseBlocking"
	instancesBlocker = "InstancesV2 && ReleaseBlocking && !NodeIPAnnotation"
	// The load balancer specs without a capability of their own.
	lbPlain = "LoadBalancer && !DataPath && !LeaderMigration && !LoadBalancerUDP && !LoadBalancerSourceRanges && !LoadBalancerHealthCheckNodePort && !RelaxedServiceNameValidation"
	lbCore  = "LoadBalancer && ReleaseBlocking && !LeaderMigration"
)

// mutants is the corpus of defects that no other test switches on. The
// defect tables of TestIntegrationDefectsFailTheRightSpecs and
// TestIntegrationLeaderMigrationDefectsFailTheRightSpecs are the rest of
// it: they check that exactly their specs fail, so they are not run twice
// here, only counted (corpusKills).
var mutants = []mutant{
	// Node addressing and node IPs.
	{"no-provider-id", instancesBlocker, []string{"removes the uninitialized taint from every node and sets a providerID", "sets each node's providerID to its instance's"}},
	{"no-instance-type", instancesBlocker, []string{"labels each node with its instance type"}},
	// Only the Windows node (cluster.windowsNodes) is wrong.
	{"windows-no-instance-type", instancesBlocker, []string{"labels each node with its instance type"}},
	{"instances-cached-at-start", "InstancesV2 && !ReleaseBlocking && !NodeIPAnnotation", []string{"initializes a node that joins while the CCM runs"}},
	{"internal-ips-only", nodeIPv4, []string{"makes an IPv4 node IP the node's only InternalIP"}},
	{"trust-node-ip", nodeIPv4, []string{"leaves a node whose node IP the cloud does not know tainted and uninitialized"}},
	// Node lifecycle.
	{"error-means-gone", "NodeLifecycle", []string{"keeps a NotReady Node while the cloud answers instance lookups with errors"}},
	// Load balancers.
	{"wrong-ingress-ip", lbCore, []string{"gives a new Service an ingress, the cleanup finalizer"}},
	{"ports-fixed-at-create", lbCore, []string{"updates the cloud load balancer when the Service's ports change"}},
	{"recreate-lb-on-update", lbCore, []string{"updates the cloud load balancer when the Service's ports change"}},
	{"lb-named-by-service-name", lbCore, []string{"gives Services of the same name in two namespaces load balancers of their own"}},
	{"lb-named-per-process", lbPlain, []string{"keeps one cloud load balancer per Service, with its ingress, across a restart of the CCM"}},
	{"node-port-fallback", lbPlain, []string{"gives the cloud no node ports when allocateLoadBalancerNodePorts is false"}},
	{"serve-every-class", lbPlain, []string{"leaves a Service with a loadBalancerClass alone"}},
	{"old-service-name-rule", "RelaxedServiceNameValidation", []string{"gives a Service whose name starts with a digit"}},
	{"ignore-health-check-port", "LoadBalancerHealthCheckNodePort", []string{"health-checks the Service's healthCheckNodePort"}},
	{"drop-udp-ports", "LoadBalancerUDP", []string{"carries UDP ports", "carries TCP and UDP ports of one Service together", "delivers UDP traffic sent to the ingress"}},
	{"wrong-node-port", "DataPath && !LoadBalancerUDP && !LoadBalancerSourceRanges", []string{"delivers TCP traffic sent to the ingress"}},
	// Routes.
	{"create-route-fails", "Routes && ReleaseBlocking", []string{"clears NodeNetworkUnavailable with reason RouteCreated"}},
	{"prune-unmade-routes", "Routes && ReleaseBlocking", []string{"removes a route inside the cluster CIDR that belongs to no node and leaves routes outside it alone"}},
	// Leader migration.
	{"migration-lease-tried-once", "LeaderMigration", []string{"takes the migration lease once its holder stops"}},
}

// corpusKills are the specs the defect tables fail, each checked there.
func corpusKills(t *testing.T) map[string]string {
	kills := map[string]string{}
	for _, tt := range slices.Concat(defectCases(), leaderMigrationDefectCases(t), kindDefectCases()) {
		if tt.defects == "" {
			continue // a broken driver, not a mutant
		}
		for spec := range tt.failing {
			kills[spec] = tt.defects
		}
	}
	return kills
}

// mutantOutcome is what one mutant's run showed.
type mutantOutcome struct {
	m        mutant
	caughtBy []string // spec texts that failed
	message  string   // first line of the first failure
	took     time.Duration
	// unfiltered: the mutant ran as it would be published, without its
	// label filter; verdict and reason are then what the LKG rules made of
	// the published run, and at where its release-blocking failures were
	// asserted (file:line), so that a mutant caught only by a shared
	// precondition shows.
	unfiltered      bool
	verdict, reason string
	at              []string
}

// unfilteredEnv, set to 1 (make mutants sets it), runs every mutant of the
// corpus as it would be published: no label filter, its run published into
// a store and judged by the LKG rules, whose verdict must be fail. make test
// runs the corpus with label filters (about 150 s) and the release team's
// case unfiltered (TestIntegrationVerdictFailsTheReleaseTeamsCase, one
// full run).
const unfilteredEnv = "CCM_CONFORMANCE_MUTANTS_UNFILTERED"

// The mutant corpus: every mutant is killed (some spec fails), each fails
// the specs it names, and every spec of the suite is killed by at least
// one mutant. It prints the table that docs/mutants.md keeps.
func TestIntegrationMutants(t *testing.T) {
	skipUnlessIntegration(t)
	start := time.Now()
	specs := listSpecs(t)
	var (
		mu       sync.Mutex
		outcomes []mutantOutcome
	)
	testbin.EachOnSharedClusters(t, tableLanes, mutants, func(m mutant) string { return m.defect + " " + m.labelFilter },
		func(t *testing.T, m mutant, clusterDir string) {
			o := runMutant(t, m, clusterDir)
			mu.Lock()
			defer mu.Unlock()
			outcomes = append(outcomes, o)
		})
	slices.SortFunc(outcomes, func(a, b mutantOutcome) int {
		return slices.IndexFunc(mutants, func(m mutant) bool { return m.defect == a.m.defect }) -
			slices.IndexFunc(mutants, func(m mutant) bool { return m.defect == b.m.defect })
	})
	killed := corpusKills(t)
	for _, o := range outcomes {
		for _, s := range o.caughtBy {
			killed[s] = o.m.defect
		}
	}
	var unkilled []string
	for _, spec := range specs {
		found := false
		for s := range killed {
			if strings.Contains(s, spec) || strings.Contains(spec, s) {
				found = true
			}
		}
		if !found {
			unkilled = append(unkilled, spec)
		}
	}
	fmt.Print(mutantTable(outcomes, time.Since(start)))
	fmt.Print(defectTableRows(t))
	for _, spec := range unkilled {
		t.Errorf("no mutant kills spec %q", spec)
	}
}

// runMutant runs the harness against one mutant on the cluster of clusterDir.
func runMutant(t *testing.T, m mutant, clusterDir string) mutantOutcome {
	t.Helper()
	began := time.Now()
	artifacts := t.TempDir()
	profile := referenceProfile(t, t.TempDir(), []string{"--reference-defects=" + m.defect}, testbin.FailFast)
	args := []string{"run", "--provider", profile, "--artifacts", artifacts, "--cluster-dir", clusterDir}
	out := mutantOutcome{m: m, unfiltered: os.Getenv(unfilteredEnv) == "1"}
	if !out.unfiltered {
		args = append(args, "--label-filter", m.labelFilter)
	}
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, args...)
	if out.unfiltered {
		out.verdict, out.reason, out.at = publishedVerdict(t, artifacts)
		if out.verdict != "fail" {
			t.Errorf("mutant %s: run unfiltered and published, the LKG verdict is %s (%s), want fail", m.defect, out.verdict, out.reason)
		}
	}
	failed := map[string]string{}
	for _, c := range readJUnit(t, artifacts) {
		if c.Status != "failed" || c.Failure == nil {
			continue
		}
		failed[c.Name] = c.Failure.Message
		out.caughtBy = append(out.caughtBy, c.Name)
	}
	slices.Sort(out.caughtBy)
	if len(out.caughtBy) == 0 {
		t.Errorf("mutant %s survived: no spec failed (exit code %d)\nstdout:\n%s", m.defect, res.code, tail(res.stdout, 40))
	}
	for _, want := range m.mustFail {
		found := false
		for name, msg := range failed {
			if strings.Contains(name, want) {
				found = true
				if out.message == "" {
					out.message = firstLine(msg)
				}
			}
		}
		if !found {
			t.Errorf("mutant %s: spec %q did not fail", m.defect, want)
		}
	}
	if out.message == "" && len(out.caughtBy) > 0 {
		out.message = firstLine(failed[out.caughtBy[0]])
	}
	out.took = time.Since(began)
	t.Logf("mutant %s (%s) took %s, caught by %d spec(s): %s; %s", m.defect, m.labelFilter, out.took.Round(time.Second),
		len(out.caughtBy), strings.Join(out.caughtBy, "; "), out.message)
	return out
}

// publishedVerdict publishes a run directory into a store of its own and
// asks `lkg show` what the LKG rules make of it, as the release team would:
// the verdict, its reason, and where each release-blocking spec that failed
// was asserted (file:line, from specs.json).
func publishedVerdict(t *testing.T, artifacts string) (verdict, reason string, at []string) {
	t.Helper()
	storeURL := publishToNewStore(t, artifacts)
	res := runHarness(t, nil, "lkg", "show", "--store", storeURL, "-o", "json")
	if res.code != 0 {
		t.Fatalf("lkg show: exit code %d: %s", res.code, res.stderr)
	}
	var rep lkg.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("lkg show -o json: %v", err)
	}
	if len(rep.Providers) != 1 || len(rep.Providers[0].Runs) != 1 {
		t.Fatalf("lkg show: want one provider with one run, got %s", tail(res.stdout, 20))
	}
	v := rep.Providers[0].Runs[0]
	data, err := os.ReadFile(filepath.Join(artifacts, prow.SpecsFile))
	if err != nil {
		t.Fatal(err)
	}
	var specs prow.SpecRecords
	if err := json.Unmarshal(data, &specs); err != nil {
		t.Fatalf("%s: %v", prow.SpecsFile, err)
	}
	for _, sp := range specs.Specs {
		if sp.Failed() && slices.Contains(v.Failed, sp.Text) && sp.FailureLocation != "" {
			at = append(at, filepath.Base(sp.FailureLocation))
		}
	}
	return string(v.Verdict), v.Reason, at
}

// publishToNewStore publishes a run directory into a file:// store of its
// own, as a provider's CI would, and returns the store's URL.
func publishToNewStore(t *testing.T, artifacts string) string {
	t.Helper()
	storeURL := "file://" + t.TempDir()
	if res := runHarness(t, nil, "publish", "--store", storeURL, artifacts); res.code != 0 {
		t.Fatalf("publish: exit code %d: %s", res.code, res.stderr)
	}
	return storeURL
}

// The release team's case (issue: a CCM with every load balancer open and
// Nodes deleted when the cloud errs, when an instance is stopped, and in
// one zone): run as it would be published, with no label filter, its
// verdict is fail, and the reason names the release-blocking specs.
func TestIntegrationVerdictFailsTheReleaseTeamsCase(t *testing.T) {
	skipUnlessIntegration(t)
	artifacts := t.TempDir()
	profile := referenceProfile(t, t.TempDir(),
		[]string{"--reference-defects=ignore-source-ranges,error-means-gone,stopped-instance-gone,instances-gone-in-zone-c"}, testbin.FailFast)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts,
		"--cluster-dir", testbin.SharedCluster(t))
	if res.code != 1 {
		t.Fatalf("exit code %d, want 1 (specs failed)\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 40), tail(res.stderr, 20))
	}
	verdict, reason, at := publishedVerdict(t, artifacts)
	if verdict != "fail" {
		t.Fatalf("verdict %s (%s), want fail", verdict, reason)
	}
	for _, want := range []string{"passes loadBalancerSourceRanges to the cloud", "taints the Node of a stopped instance",
		"keeps a NotReady Node while the cloud answers instance lookups with errors", "keeps every NotReady Node whose instance still exists"} {
		if !strings.Contains(reason, want) {
			t.Errorf("the verdict's reason does not name %q: %s", want, reason)
		}
	}
	t.Logf("verdict %s: %s (asserted at %s)", verdict, reason, strings.Join(at, ", "))
}

// listSpecs returns the text of every spec the reference profile selects,
// as `ccm-conformance list -o json` gives it, without its "[suite] " prefix.
func listSpecs(t *testing.T) []string {
	t.Helper()
	res := runHarness(t, nil, "list", "-o", "json", "--provider", referenceProfile(t, t.TempDir(), nil, nil))
	if res.code != 0 {
		t.Fatalf("list: exit code %d: %s", res.code, res.stderr)
	}
	var list []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &list); err != nil {
		t.Fatalf("list -o json: %v", err)
	}
	var specs []string
	for _, s := range list {
		text := s.Text
		if i := strings.Index(text, "] "); strings.HasPrefix(text, "[") && i > 0 {
			text = text[i+2:]
		}
		specs = append(specs, text)
	}
	if len(specs) == 0 {
		t.Fatal("list gave no specs")
	}
	return specs
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// mutantTable is the Markdown table `make mutants` prints.
func mutantTable(outcomes []mutantOutcome, took time.Duration) string {
	var b strings.Builder
	if len(outcomes) > 0 && outcomes[0].unfiltered {
		fmt.Fprintf(&b, "\n| mutant (--reference-defects) | run as | specs that caught it | first line of the failure | LKG verdict | release-blocking failures asserted at | run |\n| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, o := range outcomes {
			verdict := "**" + o.verdict + "**"
			if o.verdict != "fail" {
				verdict += ": " + strings.ReplaceAll(o.reason, "|", `\|`)
			}
			fmt.Fprintf(&b, "| `%s` | published (no filter) | %s | %s | %s | %s | %.0fs |\n", o.m.defect, caughtCell(o),
				strings.ReplaceAll(o.message, "|", `\|`), verdict, strings.Join(o.at, ", "), o.took.Seconds())
		}
		fmt.Fprintf(&b, "\n%d mutants, all runs took %s\n", len(outcomes), took.Round(time.Second))
		return b.String()
	}
	fmt.Fprintf(&b, "\n| mutant (--reference-defects) | label filter | specs that caught it | first line of the failure | run |\n| --- | --- | --- | --- | --- |\n")
	for _, o := range outcomes {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %.0fs |\n", o.m.defect, o.m.labelFilter, caughtCell(o),
			strings.ReplaceAll(o.message, "|", `\|`), o.took.Seconds())
	}
	fmt.Fprintf(&b, "\n%d mutants, all runs took %s\n", len(outcomes), took.Round(time.Second))
	return b.String()
}

// caughtCell lists the specs that caught a mutant, for the table.
func caughtCell(o mutantOutcome) string {
	if len(o.caughtBy) == 0 {
		return "**none: survived**"
	}
	caught := make([]string, len(o.caughtBy))
	for i, c := range o.caughtBy {
		caught[i] = shortSpec(c)
	}
	return strings.Join(caught, "; ")
}

// shortSpec is the part of a spec's name after its Describe text.
func shortSpec(name string) string {
	for _, sep := range []string{"for each Service of type LoadBalancer ", "only under the migration lease ", "for every node's podCIDRs ",
		"from its cloud instance ", "deleted or stopped in the cloud ", "a kubelet announces "} {
		if i := strings.Index(name, sep); i >= 0 {
			name = name[i+len(sep):]
		}
	}
	name = strings.TrimPrefix(name, "data path ")
	if i := strings.Index(name, " ["); i > 0 {
		name = name[:i]
	}
	return name
}

// defectTableRows lists the defect tables' cases that the corpus counts,
// for the same table.
func defectTableRows(t *testing.T) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nCounted from the defect tables (each checked there that exactly these specs fail):\n\n| defects | label filter | specs that must fail |\n| --- | --- | --- |\n")
	for _, tt := range slices.Concat(defectCases(), leaderMigrationDefectCases(t), kindDefectCases()) {
		if tt.defects == "" {
			continue
		}
		var specs []string
		for spec := range tt.failing {
			specs = append(specs, spec)
		}
		slices.Sort(specs)
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", tt.defects, tt.labelFilter, strings.Join(specs, "; "))
	}
	return b.String()
}
