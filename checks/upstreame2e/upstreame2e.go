// Package upstreame2e runs upstream's "[sig-network] LoadBalancers" e2e
// specs (k8s.io/kubernetes/test/e2e/network/loadbalancer.go, built by
// internal/k8sbin as E2ELoadBalancers) against a cluster the harness brought
// up, so that their wall time can be set beside ccm-conformance's own on
// the same cluster and CCM (ccm-conformance compare-upstream,
// docs/performance.md).
//
// The reference cloud on kind gives its load balancers ingress addresses
// that its host routes to itself and that pods reach (kube-proxy takes a
// pod's packets to them), keeps a client's address, and the kind clusters
// run CoreDNS: Specs says which of upstream's specs run and why the others
// do not.
//
// Floor: the checks, which only commands call. This one stands on the
// leaves only.
package upstreame2e

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
	"github.com/ccm-conformance/ccm-conformance/labels"
)

// Describe is the container text of upstream's specs in a full spec name:
// "[sig-network] LoadBalancers should ..." (the Local traffic policy ones
// under "[sig-network] LoadBalancers ExternalTrafficPolicy: Local").
const Describe = "[sig-network] LoadBalancers"

// Spec is one upstream LoadBalancers spec, by the text of its It.
type Spec struct {
	Name string
	// Needs are the capabilities a profile must claim for the spec to
	// run (ForProfile): what upstream's spec asks of the cloud.
	Needs []labels.Capability
	// Run says it is run. A spec that is not run says why in Reason.
	Run    bool
	Reason string
}

// Capabilities upstream's specs need, besides LoadBalancer.
var (
	traffic     = []labels.Capability{labels.LoadBalancer, labels.DataPath}
	udpTraffic  = []labels.Capability{labels.LoadBalancer, labels.LoadBalancerUDP, labels.DataPath}
	affinity    = []labels.Capability{labels.LoadBalancer, labels.LoadBalancerSessionAffinity, labels.DataPath}
	healthCheck = []labels.Capability{labels.LoadBalancer, labels.LoadBalancerHealthCheckNodePort, labels.DataPath}
)

// Specs are upstream's LoadBalancers specs at v1.37.2, and which of them
// compare-upstream runs against the reference cloud's load balancers on
// kind, which forward to the nodes' NodePorts.
var Specs = []Spec{
	{Name: "should be able to change the type and ports of a TCP service", Needs: traffic, Run: true},
	{Name: "should be able to change the type and ports of a UDP service", Needs: udpTraffic, Run: true},
	{Name: "should only allow access from service loadbalancer source ranges", Needs: []labels.Capability{labels.LoadBalancer, labels.LoadBalancerSourceRanges, labels.DataPath}, Run: true},
	{Name: "should have session affinity work for LoadBalancer service with Local traffic policy", Needs: affinity, Run: true},
	{Name: "should be able to switch session affinity for LoadBalancer service with Local traffic policy", Needs: affinity, Run: true},
	{Name: "should have session affinity work for LoadBalancer service with Cluster traffic policy", Needs: affinity, Run: true},
	{Name: "should be able to switch session affinity for LoadBalancer service with Cluster traffic policy", Needs: affinity, Run: true},
	{Name: "should handle load balancer cleanup finalizer for service", Needs: []labels.Capability{labels.LoadBalancer}, Run: true},
	{Name: "should be able to create LoadBalancer Service without NodePort and change it", Needs: traffic,
		Reason: "the reference load balancer is a proxy on the host that forwards to NodePorts, so a Service without them gets no traffic; a cloud's pass-through load balancer delivers packets for the ingress address to a node, where kube-proxy answers, which needs a network the host does not have"},
	{Name: "should be able to preserve UDP traffic when server pod cycles for a LoadBalancer service on different nodes", Needs: udpTraffic, Run: true},
	{Name: "should be able to preserve UDP traffic when server pod cycles for a LoadBalancer service on the same nodes", Needs: udpTraffic, Run: true},
	// Five DaemonSet rollouts, each pod serving 60 s after it is told to
	// stop: about 11 minutes on two workers.
	{Name: "should not have connectivity disruption during rolling update with externalTrafficPolicy=Cluster", Needs: traffic, Run: true},
	{Name: "should not have connectivity disruption during rolling update with externalTrafficPolicy=Local", Needs: healthCheck,
		Reason: "another 11 minutes of the Cluster one's rollouts; only the load balancer's health checks differ, which \"should only target nodes with endpoints\" and ccm-conformance's health check specs judge"},
	{Name: "should work for type=LoadBalancer", Needs: healthCheck, Run: true},
	{Name: "should only target nodes with endpoints", Needs: healthCheck, Run: true},
	{Name: "should target all nodes with endpoints", Needs: healthCheck, Run: true},
	{Name: "should work from pods", Needs: healthCheck, Run: true},
}

// ForProfile returns specs with every spec that needs a capability the
// profile does not claim (has) left out, saying which.
func ForProfile(specs []Spec, has func(labels.Capability) bool) []Spec {
	out := make([]Spec, len(specs))
	for i, s := range specs {
		out[i] = s
		if !s.Run {
			continue
		}
		var missing []string
		for _, c := range s.Needs {
			if !has(c) {
				missing = append(missing, string(c))
			}
		}
		if len(missing) > 0 {
			out[i].Run = false
			out[i].Reason = "the profile does not claim " + strings.Join(missing, ", ")
		}
	}
	return out
}

// Focus is the ginkgo focus regexp that selects the specs of Specs that
// run. Ginkgo matches it against a spec's full text, which upstream's
// framework extends with tags such as "[Feature:LoadBalancer]" after the
// Describe and "[Slow]" after the spec, so nothing is anchored at the end.
func Focus(specs []Spec) string {
	var names []string
	for _, s := range specs {
		if s.Run {
			names = append(names, regexp.QuoteMeta(s.Name))
		}
	}
	return regexp.QuoteMeta(Describe) + ".* (?:" + strings.Join(names, "|") + ")"
}

// Options say how to run the e2e binary.
type Options struct {
	// Binary is the e2e test binary (k8sbin.E2ELoadBalancers). Required.
	Binary string
	// Kubectl is the kubectl the specs run (--kubectl-path). Required.
	Kubectl string
	// Kubeconfig is the cluster's. Required.
	Kubeconfig string
	// ReportDir receives the JUnit file; the binary's output goes to
	// ReportDir/e2e.log. Required.
	ReportDir string
	// Focus selects the specs; default Focus(Specs).
	Focus string
	// Nodes is the number of schedulable nodes (--num-nodes).
	Nodes int
	// Timeout bounds the whole run (--ginkgo.timeout). Default 45 minutes:
	// a spec that fails waits up to 15 minutes for a load balancer.
	Timeout time.Duration
	// Progress receives the binary's output as it runs, besides the log.
	// Default: discarded.
	Progress io.Writer
}

// DefaultTimeout bounds a run when Options.Timeout is 0.
const DefaultTimeout = 45 * time.Minute

// Args are the e2e binary's arguments for o.
func Args(o Options) []string {
	focus := cmpOr(o.Focus, Focus(Specs))
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	args := []string{
		"--kubeconfig=" + o.Kubeconfig,
		// "local" is the framework's provider for a cluster it knows
		// nothing about: no cloud-specific set-up or checks.
		"--provider=local",
		"--kubectl-path=" + o.Kubectl,
		"--report-dir=" + o.ReportDir,
		"--e2e-output-dir=" + o.ReportDir,
		"--ginkgo.focus=" + focus,
		"--ginkgo.timeout=" + timeout.String(),
		"--ginkgo.v",
		"--ginkgo.no-color",
	}
	if o.Nodes > 0 {
		args = append(args, fmt.Sprintf("--num-nodes=%d", o.Nodes))
	}
	return args
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// SpecResult is one spec of a run, from its JUnit file.
type SpecResult struct {
	Name    string        `json:"name"`
	State   string        `json:"state"` // passed, failed, skipped
	Time    time.Duration `json:"durationNanos"`
	Message string        `json:"message,omitempty"`
}

// Result is a run of the e2e binary.
type Result struct {
	// Wall is from starting the binary to its exit.
	Wall                    time.Duration `json:"wallNanos"`
	Passed, Failed, Skipped int
	Specs                   []SpecResult `json:"specs"`
	// ExitCode is the binary's (1 when a spec failed).
	ExitCode int `json:"exitCode"`
}

// Summary is "N passed, N failed, N skipped in D".
func (r Result) Summary() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped in %s", r.Passed, r.Failed, r.Skipped, r.Wall.Round(100*time.Millisecond))
}

// Run runs the e2e binary with o and reads its JUnit file. A run whose
// specs failed is a Result with Failed > 0, not an error; an error means
// the binary could not run or wrote no report. Cancelling ctx interrupts
// the binary (SIGINT, then SIGKILL after 30 s), which lets ginkgo run the
// specs' cleanup.
func Run(ctx context.Context, o Options) (Result, error) {
	for flag, v := range map[string]string{"Binary": o.Binary, "Kubectl": o.Kubectl, "Kubeconfig": o.Kubeconfig, "ReportDir": o.ReportDir} {
		if v == "" {
			return Result{}, fmt.Errorf("upstream e2e run: %s not set", flag)
		}
	}
	if err := os.MkdirAll(o.ReportDir, 0o755); err != nil {
		return Result{}, err
	}
	logPath := filepath.Join(o.ReportDir, "e2e.log")
	log, err := os.Create(logPath)
	if err != nil {
		return Result{}, err
	}
	defer log.Close()
	var out io.Writer = log
	if o.Progress != nil {
		out = io.MultiWriter(log, o.Progress)
	}
	cmd := exec.CommandContext(ctx, o.Binary, Args(o)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	res := Result{Wall: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("interrupted after %s; its output so far: %s", res.Wall.Round(time.Second), logPath)
	case errors.As(runErr, &exit):
		res.ExitCode = exit.ExitCode()
	case runErr != nil:
		return res, fmt.Errorf("running %s: %w", o.Binary, runErr)
	}
	specs, err := ReadJUnit(o.ReportDir)
	if err != nil {
		return res, fmt.Errorf("%s exited with code %d and its report: %w (its output: %s)", filepath.Base(o.Binary), res.ExitCode, err, logPath)
	}
	res.Specs = specs
	for _, s := range specs {
		switch s.State {
		case "passed":
			res.Passed++
		case "failed":
			res.Failed++
		default:
			res.Skipped++
		}
	}
	return res, nil
}

// ReadJUnit reads the specs of the JUnit file the e2e binary wrote into
// dir (junit_01.xml). Specs the focus left out, and ginkgo's suite nodes
// (BeforeSuite and the like), are not in the result.
func ReadJUnit(dir string) ([]SpecResult, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "junit*.xml"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no junit*.xml in %s", dir)
	}
	var specs []SpecResult
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var suites reporters.JUnitTestSuites
		if err := xml.NewDecoder(bytes.NewReader(data)).Decode(&suites); err != nil {
			return nil, fmt.Errorf("%s: not a JUnit file: %w", f, err)
		}
		for _, suite := range suites.TestSuites {
			for _, c := range suite.TestCases {
				r, ok := specResult(c)
				if ok {
					specs = append(specs, r)
				}
			}
		}
	}
	slices.SortStableFunc(specs, func(a, b SpecResult) int { return strings.Compare(a.Name, b.Name) })
	return specs, nil
}

// specResult turns a JUnit test case into a SpecResult; ok is false for
// cases that are not specs that ran or were skipped for a reason.
func specResult(c reporters.JUnitTestCase) (SpecResult, bool) {
	// Ginkgo names a spec's leaf node type first ("[It] "), unless told
	// not to; the spec's text is the name.
	name := strings.TrimPrefix(strings.TrimSpace(c.Name), "[It] ")
	if strings.HasPrefix(name, "[SynchronizedBeforeSuite]") || strings.HasPrefix(name, "[SynchronizedAfterSuite]") ||
		strings.HasPrefix(name, "[BeforeSuite]") || strings.HasPrefix(name, "[AfterSuite]") || strings.HasPrefix(name, "[ReportAfterSuite]") ||
		strings.HasPrefix(name, "[ReportBeforeSuite]") {
		return SpecResult{}, false
	}
	r := SpecResult{Name: name, State: "passed", Time: time.Duration(c.Time * float64(time.Second))}
	switch {
	case c.Failure != nil:
		r.State, r.Message = "failed", firstline.Of(c.Failure.Message)
	case c.Error != nil:
		r.State, r.Message = "failed", firstline.Of(c.Error.Message)
	case c.Skipped != nil:
		// Ginkgo writes "skipped" for a spec the focus left out (the JUnit
		// lists every spec of the binary) and "pending" for a pending one:
		// neither is part of the run. A spec that skipped itself says why:
		// "skipped - REASON".
		reason, ok := strings.CutPrefix(c.Skipped.Message, "skipped - ")
		if !ok {
			return SpecResult{}, false
		}
		r.State, r.Message = "skipped", firstline.Of(reason)
	}
	return r, true
}

// AgnhostImage returns the agnhost image that binary's specs run, as its
// --list-images prints it: registry.k8s.io/e2e-test-images/agnhost:2.66.1
// at v1.37.2. The list also names the previous agnhost, which a few other
// specs use; the newest one is upstream's Agnhost.
func AgnhostImage(ctx context.Context, binary string) (string, error) {
	out, err := exec.CommandContext(ctx, binary, "--list-images").Output()
	if err != nil {
		return "", fmt.Errorf("%s --list-images: %w", binary, err)
	}
	return newestAgnhost(string(out), binary)
}

// newestAgnhost picks the newest e2e-test-images agnhost of an image list.
func newestAgnhost(list, binary string) (string, error) {
	best, bestVersion := "", []int(nil)
	for _, l := range strings.Split(list, "\n") {
		l = strings.TrimSpace(l)
		repo, tag, ok := strings.Cut(l, ":")
		if !ok || !strings.HasSuffix(repo, "/e2e-test-images/agnhost") {
			continue
		}
		v, ok := parseDotted(tag)
		if ok && (best == "" || slices.Compare(v, bestVersion) > 0) {
			best, bestVersion = l, v
		}
	}
	if best == "" {
		return "", fmt.Errorf("%s --list-images names no e2e-test-images/agnhost image", binary)
	}
	return best, nil
}

// parseDotted parses "2.66.1" into [2 66 1].
func parseDotted(s string) ([]int, bool) {
	var v []int
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, false
		}
		v = append(v, n)
	}
	return v, true
}
