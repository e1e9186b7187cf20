package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccm-conformance/ccm-conformance/cmd/ccm-conformance/app"
	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// The system benchmarks run the real harness against the reference
// provider; `make bench` runs them once each and docs/performance.md keeps
// their figures. Each reports its figures as metrics.

// suiteFilters select one suite each by labels.
var suiteFilters = []struct{ suite, filter string }{
	{"nodeaddress", "InstancesV2 && !NodeIPAnnotation"},
	{"nodeip", "NodeIPAnnotation"},
	{"nodelifecycle", "NodeLifecycle"},
	{"loadbalancer", "LoadBalancer && !LeaderMigration"},
	{"routes", "Routes"},
	{"leadermigration", "LeaderMigration"},
}

// BenchmarkConformance times `ccm-conformance run` on a new local cluster
// with the reference provider: every spec (full), and each suite alone.
// The full run also reports the setup steps of its lanes and the
// observation lag of its watched waits.
func BenchmarkConformance(b *testing.B) {
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			artifacts := b.TempDir()
			wall := benchRun(b, artifacts, "")
			t := readTimings(b, artifacts)
			b.ReportMetric(wall.Seconds(), "wall-s")
			perSuite := map[string]float64{}
			var lags []float64
			for _, s := range t.Specs {
				perSuite[s.Suite] += s.DurationSeconds
				lags = append(lags, s.ObservationLagsSeconds...)
			}
			for suite, secs := range perSuite {
				b.ReportMetric(secs, suite+"-spec-s")
			}
			setup := map[string]float64{}
			worlds := map[string]bool{}
			for _, s := range t.Setup {
				setup[s.Step] += s.Seconds
				worlds[s.World] = true
			}
			for step, secs := range setup {
				b.ReportMetric(secs/float64(len(worlds)), "setup-"+strings.ReplaceAll(step, " ", "-")+"-s")
			}
			b.ReportMetric(float64(len(worlds)), "lanes")
			if len(lags) > 0 {
				slices.Sort(lags)
				b.ReportMetric(percentile(lags, 50)*1000, "lag-p50-ms")
				b.ReportMetric(percentile(lags, 99)*1000, "lag-p99-ms")
				b.ReportMetric(float64(len(lags)), "lag-samples")
			}
		}
	})
	for _, sf := range suiteFilters {
		b.Run(sf.suite, func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(benchRun(b, b.TempDir(), sf.filter).Seconds(), "wall-s")
			}
		})
	}
}

// benchRun runs the harness on the reference profile and returns its wall
// time, from the command to its exit.
func benchRun(b *testing.B, artifacts, labelFilter string) time.Duration {
	b.Helper()
	profile := testbin.ReferenceProfile(b, b.TempDir(), binDir, nil, nil)
	args := []string{"run", "--provider", profile, "--artifacts", artifacts}
	if labelFilter != "" {
		args = append(args, "--label-filter", labelFilter)
	}
	cmd := exec.Command(filepath.Join(binDir, "ccm-conformance"), args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+shortTempDir(b))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("ccm-conformance %s: %v\n%s", strings.Join(args, " "), err, tail(string(out), 40))
	}
	return wall
}

func readTimings(b *testing.B, artifacts string) *prow.Timings {
	b.Helper()
	f, err := os.Open(filepath.Join(artifacts, "artifacts", "timings.json"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	t, err := prow.DecodeTimings(f)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// percentile of sorted values, by the nearest rank.
func percentile(sorted []float64, p int) float64 {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i-1, len(sorted)-1))]
}

// BenchmarkNodeInitialization registers 100 and 1,000 simulated nodes on a
// local cluster with the reference CCM and cloud, and reports how long
// until the CCM has initialized all of them, and the peak RSS of the
// benchmark process, which runs the simulated kubelets as the harness does.
func BenchmarkNodeInitialization(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				benchNodeInitialization(b, n)
			}
		})
	}
}

func benchNodeInitialization(b *testing.B, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tmp := shortTempDir(b)
	// The upstream node grace period: a thousand heartbeats every second
	// would measure the API server, not the harness.
	c, err := local.Start(ctx, local.Options{NodeMonitorGracePeriod: 50 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop(context.Background())

	socket := filepath.Join(tmp, "cloud.sock")
	endpoint := "unix://" + socket
	cloud := startBenchProcess(b, ctx, filepath.Join(tmp, "cloud.log"), nil,
		filepath.Join(binDir, "reference-cloud"), "--listen", endpoint, "--no-data-path", "--node-ip-range=127.80.0.0/16")
	defer cloud()
	api, err := clouddriver.New(ctx, clouddriver.Options{Command: []string{filepath.Join(binDir, "reference-cloud-driver")}, Env: append(os.Environ(), "REFERENCE_CLOUD_ENDPOINT="+endpoint)})
	if err != nil {
		b.Fatal(err)
	}
	waitFor(b, ctx, func() bool { _, err := os.Stat(socket); return err == nil })
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-node-%04d", i)
		if _, err := api.CreateInstance(ctx, clouddriver.CreateInstanceRequest{Name: names[i]}); err != nil {
			b.Fatal(err)
		}
	}
	ccm := startBenchProcess(b, ctx, filepath.Join(tmp, "ccm.log"), []string{"REFERENCE_CLOUD_ENDPOINT=" + endpoint},
		filepath.Join(binDir, "reference-ccm"), "--cloud-provider=reference", "--leader-elect=false",
		"--controllers=cloud-node-controller", "--concurrent-node-syncs=8",
		// The CCM's default of 20 requests a second would measure
		// client-go's throttle, not the harness.
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--kubeconfig="+c.Kubeconfig(), "--authentication-kubeconfig="+c.Kubeconfig(), "--authorization-kubeconfig="+c.Kubeconfig(),
		"--bind-address=127.0.0.1", "--secure-port=0")
	defer ccm()

	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	kubeletConfig := c.RESTConfig()
	kubeletConfig.QPS, kubeletConfig.Burst = 200, 400
	kubeletClient, err := kubernetes.NewForConfig(kubeletConfig)
	if err != nil {
		b.Fatal(err)
	}
	// The figures are the metrics below; b.Loop's own time also counts the
	// cluster's start.
	resetPeakRSS(b)
	start := time.Now()
	// A heartbeat every 20 s, within the 50 s grace period: a thousand
	// nodes then send about 100 requests a second, which two cores serve.
	pool := nodes.NewPool(kubeletClient, nodes.Options{KubeletVersion: c.KubernetesVersion(), HeartbeatInterval: 20 * time.Second})
	defer pool.Close(context.Background())
	for _, name := range names {
		if _, err := pool.Register(ctx, nodes.Spec{Name: name}); err != nil {
			b.Fatal(err)
		}
	}
	registered := time.Since(start)
	waitFor(b, ctx, func() bool {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false
		}
		done := 0
		for i := range list.Items {
			if !framework.Uninitialized(&list.Items[i]) && list.Items[i].Spec.ProviderID != "" {
				done++
			}
		}
		return done == n
	})
	b.ReportMetric(time.Since(start).Seconds(), "all-initialized-s")
	b.ReportMetric(registered.Seconds(), "registered-s")
	b.ReportMetric(float64(peakRSS(b))/1024, "peak-rss-MiB")
}

// startBenchProcess starts a child whose output goes to logPath and
// returns its stop function.
func startBenchProcess(b *testing.B, ctx context.Context, logPath string, env []string, name string, args ...string) func() {
	b.Helper()
	log, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	}
}

func waitFor(b *testing.B, ctx context.Context, cond func() bool) {
	b.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			b.Fatal("timed out")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// resetPeakRSS restarts the kernel's count of this process's peak resident
// set (VmHWM).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS (%v); it counts from the process start", err)
	}
}

// peakRSS is VmHWM from /proc/self/status, in KiB.
func peakRSS(b *testing.B) int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb
		}
	}
	return 0
}

// BenchmarkUpstreamLoadBalancersOnKind runs, on one new kind cluster with
// the reference CCM image, ccm-conformance's load balancer specs and then
// upstream's [sig-network] LoadBalancers e2e specs (compare-upstream), and
// reports both sides' wall time and spec counts. The first run builds
// upstream's e2e binary, kubectl, agnhost and its image into the cache.
func BenchmarkUpstreamLoadBalancersOnKind(b *testing.B) {
	if _, err := exec.LookPath("docker"); err != nil {
		b.Skip("no docker: the comparison runs on a kind cluster")
	}
	image, _ := testbin.ReferenceCCMImage(b)
	echo, _ := testbin.EchoServerImage(b)
	for b.Loop() {
		artifacts := filepath.Join(b.TempDir(), "cmp")
		profile := testbin.ReferenceKindProfile(b, b.TempDir(), binDir, image, nil, nil)
		cmd := exec.Command(filepath.Join(binDir, "ccm-conformance"), "compare-upstream", "--provider", profile,
			"--artifacts", artifacts, "--echo-image", echo, "--label-filter", "LoadBalancer && !LeaderMigration")
		cmd.Env = append(os.Environ(), "TMPDIR="+shortTempDir(b))
		out, err := cmd.CombinedOutput()
		c, rerr := readComparison(artifacts)
		if rerr != nil {
			b.Fatalf("compare-upstream: %v, and no comparison: %v\n%s", err, rerr, tail(string(out), 60))
		}
		// A benchmark's log keeps only its first lines: one per side.
		b.Logf("ours: %s: %d passed, %d failed, %d skipped in %.1fs", c.Ours.What, c.Ours.Passed, c.Ours.Failed, c.Ours.Skipped, c.Ours.WallSeconds)
		var specs []string
		for _, s := range c.UpstreamSpecs {
			specs = append(specs, fmt.Sprintf("%s %.1fs %s", s.State, s.Time.Seconds(), s.Name))
		}
		b.Logf("upstream: %d passed, %d failed, %d skipped in %.1fs: %s", c.Upstream.Passed, c.Upstream.Failed, c.Upstream.Skipped, c.Upstream.WallSeconds, strings.Join(specs, "; "))
		if err != nil {
			b.Errorf("compare-upstream: %v (a side failed; its wall time includes the failing waits)\n%s", err, tail(string(out), 8))
		}
		b.ReportMetric(c.Ours.WallSeconds, "ours-wall-s")
		b.ReportMetric(float64(c.Ours.Passed), "ours-passed")
		b.ReportMetric(c.Upstream.WallSeconds, "upstream-wall-s")
		b.ReportMetric(float64(c.Upstream.Passed), "upstream-passed")
		b.ReportMetric(float64(c.Upstream.Failed), "upstream-failed")
	}
}

func readComparison(artifacts string) (*app.Comparison, error) {
	data, err := os.ReadFile(filepath.Join(artifacts, filepath.FromSlash(prow.ComparisonFile)))
	if err != nil {
		return nil, err
	}
	var c app.Comparison
	return &c, json.Unmarshal(data, &c)
}
