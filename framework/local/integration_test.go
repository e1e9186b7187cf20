package local

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
)

// The integration tests run the real binaries, from the cache or, on first
// use, built from the Go module proxy: a cold cache takes about 15 minutes,
// so run them with -timeout 30m then.
const integrationTimeout = 30 * time.Minute

// testWriter sends each line written to it to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// processesMentioning returns the pids of the processes whose command line
// mentions s.
func processesMentioning(t *testing.T, s string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) && pidAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestIntegrationLocalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd, kube-apiserver and kube-controller-manager")
	}
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()

	start := time.Now()
	c, err := Start(ctx, Options{Progress: testWriter{t}, Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1})})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("cluster ready %s after Start was called", time.Since(start).Round(time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			c.Stop(context.Background())
		}
	}()
	dir := c.Dir()
	components := c.Components()
	if len(components) != 3 {
		t.Fatalf("Components() = %+v, want three", components)
	}
	for _, comp := range components {
		if comp.PID <= 0 || !pidAlive(comp.PID) {
			t.Errorf("%s: pid %d is not running", comp.Name, comp.PID)
		}
		if comp.LogPath != c.LogPath(comp.Name) {
			t.Errorf("%s logs to %s, LogPath says %s", comp.Name, comp.LogPath, c.LogPath(comp.Name))
		}
		if _, err := os.Stat(comp.LogPath); err != nil {
			t.Errorf("%s: %v", comp.Name, err)
		}
	}

	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	if version.GitVersion != DefaultKubernetesVersion {
		t.Errorf("/version gitVersion = %q, want %q", version.GitVersion, DefaultKubernetesVersion)
	}

	// The kubeconfig on disk works as well as RESTConfig.
	fromFile, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	fileClient, err := kubernetes.NewForConfig(fromFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fileClient.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("reading kube-system through %s: %v", c.Kubeconfig(), err)
	}

	// A Node gets one podCIDR per family from kube-controller-manager.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "simulated-node-1"}}
	created := time.Now()
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Node: %v", err)
	}
	var podCIDRs []string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		podCIDRs = n.Spec.PodCIDRs
		return len(podCIDRs) == 2, nil
	})
	if err != nil {
		t.Fatalf("Node %s has podCIDRs %v, want two: %v", node.Name, podCIDRs, err)
	}
	t.Logf("node podCIDRs %v assigned %s after create", podCIDRs, time.Since(created).Round(time.Millisecond))
	for i, want := range []struct {
		cluster string
		bits    int
	}{{c.ClusterCIDRs()[0], DefaultNodeCIDRMaskSizeIPv4}, {c.ClusterCIDRs()[1], DefaultNodeCIDRMaskSizeIPv6}} {
		got, err := netip.ParsePrefix(podCIDRs[i])
		if err != nil {
			t.Fatal(err)
		}
		cluster := netip.MustParsePrefix(want.cluster)
		if got.Bits() != want.bits || !cluster.Contains(got.Addr()) {
			t.Errorf("podCIDR %s: want a /%d inside %s", got, want.bits, cluster)
		}
	}

	stopStart := time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	stopped = true
	t.Logf("stopped in %s", time.Since(stopStart).Round(time.Millisecond))
	for _, comp := range components {
		if pidAlive(comp.PID) {
			t.Errorf("%s (pid %d) still runs after Stop", comp.Name, comp.PID)
		}
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes %v mentioning %s still run after Stop", pids, dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s: %v", dir, err)
	}
}

// Environment of the helper process that TestIntegrationDetachedCluster and
// TestIntegrationClusterDiesWithHarness start.
const (
	helperDirEnv    = "CCM_LOCAL_TEST_HELPER_DIR"
	helperDetachEnv = "CCM_LOCAL_TEST_HELPER_DETACH"
)

// TestHelperStartAndExit is not a test: run by the tests below in a child
// process, it starts a cluster in $CCM_LOCAL_TEST_HELPER_DIR and exits
// without stopping it, as `ccm-conformance cluster up` does (detached) or as
// a harness that crashes does (attached).
func TestHelperStartAndExit(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("helper process for the detached-cluster tests")
	}
	_, err := Start(context.Background(), Options{Dir: dir, Detach: os.Getenv(helperDetachEnv) != ""})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// startInHelper starts a cluster in dir from a child process that exits
// right after, and returns the state it left.
func startInHelper(t *testing.T, ctx context.Context, dir string, detach bool) *State {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperStartAndExit$", "-test.v")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir)
	if detach {
		cmd.Env = append(cmd.Env, helperDetachEnv+"=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	state, err := ReadState(dir)
	if err != nil {
		t.Fatalf("after the helper process: %v", err)
	}
	return state
}

func TestIntegrationDetachedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd, kube-apiserver and kube-controller-manager")
	}
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "cluster")
	state := startInHelper(t, ctx, dir, true)
	defer StopDir(context.Background(), dir)

	if state.Kubeconfig != filepath.Join(dir, "kubeconfig") || state.KubernetesVersion != DefaultKubernetesVersion ||
		state.EtcdVersion != DefaultEtcdVersion || !state.Detached || len(state.Components) != 3 {
		t.Errorf("state = %+v", state)
	}
	// The components outlived the process that started them, and the
	// cluster still serves.
	for _, comp := range state.Components {
		if !sameProcess(comp) {
			t.Errorf("%s: pid %d from state.json is not running", comp.Name, comp.PID)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", state.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("the detached cluster does not serve: %v", err)
	}

	if err := StopDir(ctx, dir); err != nil {
		t.Fatalf("StopDir: %v", err)
	}
	for _, comp := range state.Components {
		if pidAlive(comp.PID) {
			t.Errorf("%s (pid %d) still runs after StopDir", comp.Name, comp.PID)
		}
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes %v mentioning %s still run after StopDir", pids, dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("StopDir left %s: %v", dir, err)
	}
}

// TestIntegrationClusterDiesWithHarness checks that the components of a
// cluster that is not detached die with the process that started them,
// even when it exits without stopping them.
func TestIntegrationClusterDiesWithHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd, kube-apiserver and kube-controller-manager")
	}
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "cluster")
	state := startInHelper(t, ctx, dir, false)
	defer StopDir(context.Background(), dir)

	// A dying process loses its command line before it stops running, so
	// both checks are polled together: the components get 10 seconds to
	// finish exiting, not to be found by one of the two checks.
	gone := func() bool {
		if len(processesMentioning(t, dir)) > 0 {
			return false
		}
		for _, comp := range state.Components {
			if sameProcess(comp) {
				return false
			}
		}
		return true
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return gone(), nil
	})
	if err == nil {
		return
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes %v outlived the process that started them", pids)
	}
	for _, comp := range state.Components {
		if sameProcess(comp) {
			t.Errorf("%s (pid %d) outlived the process that started it", comp.Name, comp.PID)
		}
	}
}

// TestIntegrationAPIServerFailureStopsEtcd starts a real etcd and a
// kube-apiserver that exits, and checks that etcd is stopped again.
func TestIntegrationAPIServerFailureStopsEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	bin := t.TempDir()
	t.Setenv(k8sbin.EnvKubeAPIServer, writeScript(t, bin, "kube-apiserver", "echo 'fake kube-apiserver: no luck' >&2\nexit 3\n"))
	dir := filepath.Join(t.TempDir(), "cluster")

	c, err := Start(ctx, Options{Dir: dir, Progress: testWriter{t}})
	if err == nil {
		c.Stop(context.Background())
		t.Fatal("Start succeeded with a kube-apiserver that exits")
	}
	var compErr *ComponentError
	if !errors.As(err, &compErr) || compErr.Component != ComponentAPIServer {
		t.Fatalf("error = %v, want a *ComponentError for kube-apiserver", err)
	}
	for _, want := range []string{"exit status 3", "fake kube-apiserver: no luck", "--etcd-servers=http://127.0.0.1:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes %v mentioning %s still run after Start failed", pids, dir)
	}
}

// The local backend hands a run its cluster as soon as the API server
// serves; Ready waits for kube-controller-manager. Attach reuses a running
// cluster without stopping it.
func TestIntegrationBackends(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd, kube-apiserver and kube-controller-manager")
	}
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()

	runDir := t.TempDir()
	c, err := Backend(Options{}).Start(ctx, cluster.StartInput{Dir: runDir, Progress: testWriter{t}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer c.Stop(context.Background())
	if c.Backend() != BackendName {
		t.Errorf("Backend() = %q, want %q", c.Backend(), BackendName)
	}
	fin, ok := c.(cluster.Finisher)
	if !ok {
		t.Fatal("the local backend's cluster is not a cluster.Finisher")
	}
	sim, ok := c.(cluster.NodeSimulator)
	if !ok {
		t.Fatal("the local backend's cluster is not a cluster.NodeSimulator")
	}
	if sim.KubeletVersion() != DefaultKubernetesVersion || sim.NodeHeartbeatInterval() != DefaultNodeMonitorGracePeriod/5 {
		t.Errorf("KubeletVersion, NodeHeartbeatInterval = %s, %s", sim.KubeletVersion(), sim.NodeHeartbeatInterval())
	}
	if err := fin.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if err := fin.Ready(ctx); err != nil {
		t.Fatalf("Ready, asked again: %v", err)
	}
	dir := filepath.Join(runDir, "cluster")
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err != nil {
		t.Fatalf("the cluster is not in the run's directory: %v", err)
	}

	// Attached, the same cluster serves a run and outlives it.
	attached, err := Attach(dir).Start(ctx, cluster.StartInput{})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	client, err := kubernetes.NewForConfig(attached.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		t.Errorf("the attached cluster does not answer: %v", err)
	}
	if got := attached.(cluster.PodNetworks).ClusterCIDRs(); len(got) != 2 {
		t.Errorf("attached ClusterCIDRs() = %v", got)
	}
	if err := attached.Stop(ctx); err != nil {
		t.Errorf("Stop of the attached cluster: %v", err)
	}
	for _, comp := range c.(runCluster).Components() {
		if !pidAlive(comp.PID) {
			t.Errorf("%s stopped when the attached run ended", comp.Name)
		}
	}

	// A directory without a cluster is bad input, named.
	_, err = Attach(t.TempDir()).Start(ctx, cluster.StartInput{})
	var inErr *cluster.InputError
	if !errors.As(err, &inErr) || !strings.Contains(err.Error(), "--cluster-dir") {
		t.Errorf("Attach of an empty directory: %v, want an InputError naming --cluster-dir", err)
	}

	if err := c.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes %v mentioning %s still run after Stop", pids, dir)
	}
}
