package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/local"
)

// TestIntegrationSweep leaves on a cluster and in its cloud what a killed
// run leaves (a labelled namespace with a load balancer Service, an
// instance with its Node and a route), beside things that are not the
// harness's, and runs `sweep` against them: a dry run removes nothing; a
// sweep removes exactly the harness's, the load balancer through the CCM;
// and a load balancer the CCM cannot delete (it is stopped) is named as
// left, with exit code 1.
func TestIntegrationSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster, the reference cloud and CCM")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := shortTempDir(t)
	c, err := local.Start(ctx, local.Options{Dir: filepath.Join(tmp, "cluster")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)

	cloudEndpoint := startReferenceCloud(t, ctx, tmp)
	socket := strings.TrimPrefix(cloudEndpoint, "unix://")
	endpoint := "REFERENCE_CLOUD_ENDPOINT=unix://" + socket
	ccm := startLogged(t, ctx, filepath.Join(tmp, "ccm.log"), []string{endpoint}, filepath.Join(binDir, "reference-ccm"),
		"--cloud-provider=reference", "--leader-elect=false", "--configure-cloud-routes=false", "--controllers=service",
		"--kubeconfig="+c.Kubeconfig(), "--secure-port=0")
	defer stopProcess(ccm)

	profile := filepath.Join(tmp, "sweep.yaml")
	if err := os.WriteFile(profile, []byte(fmt.Sprintf(`apiVersion: ccm-conformance.dev/v1alpha1
kind: Profile
name: reference
ccm:
  deployed:
    labelSelector: k8s-app=reference-ccm
cloudDriver:
  command: [%s]
  env:
    REFERENCE_CLOUD_ENDPOINT: unix://%s
capabilities: [InstancesV2, LoadBalancer, Routes]
`, filepath.Join(binDir, "reference-cloud-driver"), socket)), 0o644); err != nil {
		t.Fatal(err)
	}
	drv, err := clouddriver.New(ctx, clouddriver.Options{Command: []string{filepath.Join(binDir, "reference-cloud-driver")}, Env: append(os.Environ(), endpoint)})
	if err != nil {
		t.Fatal(err)
	}

	// What a killed run leaves, and what is not the harness's.
	join := framework.UniqueName("ccm-join")
	ns := framework.UniqueName("ccm-lb")
	for _, name := range []string{join, "worker-keep"} {
		if _, err := drv.CreateInstance(ctx, clouddriver.CreateInstanceRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: join}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{join, "worker-keep"} {
		if _, err := drv.CreateRoute(ctx, node, "10.244."+map[string]string{join: "91", "worker-keep": "92"}[node]+".0/24"); err != nil {
			t.Fatal(err)
		}
	}
	loadBalancerIn := func(namespace string, labelled bool) {
		t.Helper()
		labels := map[string]string{}
		if labelled {
			labels[framework.NamespaceLabel] = "true"
		}
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 0}}},
		}
		if _, err := client.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			lbs, err := drv.ListLoadBalancers(ctx)
			return slices.ContainsFunc(lbs, func(lb clouddriver.LoadBalancer) bool { return lb.ServiceNamespace == namespace }), err
		}); err != nil {
			t.Fatalf("the CCM made no load balancer for %s/web: %v", namespace, err)
		}
	}
	loadBalancerIn(ns, true)
	loadBalancerIn("apps", false)

	state := func() (instances, routes, lbNamespaces, namespaces, nodes []string) {
		t.Helper()
		ins, err := drv.ListInstances(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			instances = append(instances, in.Name)
		}
		rs, err := drv.ListRoutes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			routes = append(routes, r.NodeName)
		}
		lbs, err := drv.ListLoadBalancers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, lb := range lbs {
			lbNamespaces = append(lbNamespaces, lb.ServiceNamespace)
		}
		nsl, _ := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		for _, n := range nsl.Items {
			namespaces = append(namespaces, n.Name)
		}
		nl, _ := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		for _, n := range nl.Items {
			nodes = append(nodes, n.Name)
		}
		return
	}

	// A dry run names the harness's things and removes nothing.
	res := runHarness(t, nil, "sweep", "--provider", profile, "--kubeconfig", c.Kubeconfig(), "--dry-run")
	for _, want := range []string{"would remove namespace " + ns, "would remove Node " + join, "would remove instance " + join, "would remove route ", "(10.244.91.0/24 to " + join + ")", "would leave load balancer", "sweep: would remove 4, left 0"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("dry run: stdout lacks %q:\n%s%s", want, res.stdout, res.stderr)
		}
	}
	if res.code != 0 || strings.Contains(res.stdout, "worker-keep") || strings.Contains(res.stdout, "namespace apps") {
		t.Errorf("dry run: exit %d, or it names what is not the harness's:\n%s%s", res.code, res.stdout, res.stderr)
	}
	if instances, _, _, _, nodes := state(); !slices.Contains(instances, join) || !slices.Contains(nodes, join) {
		t.Errorf("the dry run removed something: instances %v, Nodes %v", instances, nodes)
	}

	// The sweep removes exactly the harness's; the CCM takes the load
	// balancer down with the namespace.
	res = runHarness(t, nil, "sweep", "--provider", profile, "--kubeconfig", c.Kubeconfig(), "--wait", "2m")
	if res.code != 0 || !strings.Contains(res.stdout, "sweep: removed 4, left 0") {
		t.Fatalf("sweep: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	instances, routes, lbNamespaces, namespaces, nodes := state()
	for what, got := range map[string][]string{"instances": instances, "routes": routes, "load balancers": lbNamespaces, "namespaces": namespaces, "Nodes": nodes} {
		if slices.Contains(got, join) || slices.Contains(got, ns) {
			t.Errorf("after the sweep, %s still hold the harness's: %v", what, got)
		}
	}
	if !slices.Contains(instances, "worker-keep") || !slices.Contains(routes, "worker-keep") || !slices.Contains(lbNamespaces, "apps") || !slices.Contains(namespaces, "apps") {
		t.Errorf("the sweep removed what is not the harness's: instances %v, routes %v, load balancers of %v, namespaces %v", instances, routes, lbNamespaces, namespaces)
	}

	// With the CCM stopped, a load balancer stays with its namespace: it
	// is named as left, never deleted behind the CCM's back.
	ns2 := framework.UniqueName("ccm-lb")
	loadBalancerIn(ns2, true)
	stopProcess(ccm)
	res = runHarness(t, nil, "sweep", "--provider", profile, "--kubeconfig", c.Kubeconfig(), "--wait", "3s")
	if res.code != 1 || !strings.Contains(res.stdout, "left namespace "+ns2) || !strings.Contains(res.stdout, "left load balancer") || !strings.Contains(res.stdout, "Service "+ns2+"/web") {
		t.Errorf("sweep with the CCM stopped: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, ns2, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Errorf("namespace %s went without its load balancer", ns2)
	}
}

// startLogged starts a program with its output in a log file.
func startLogged(t *testing.T, ctx context.Context, logPath string, env []string, name string, args ...string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	cmd := exec.CommandContext(ctx, name, args...)
	// When ctx ends (the test returns before its cleanups run), stop it
	// as stopProcess does, not with SIGKILL.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// startReferenceCloud starts the reference cloud (no data path) on a unix
// socket in dir, waits until it listens, and stops it when the test ends.
// It returns the endpoint, unix://....
func startReferenceCloud(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	socket := filepath.Join(dir, "cloud.sock")
	cloud := startLogged(t, ctx, filepath.Join(dir, "cloud.log"), nil, filepath.Join(binDir, "reference-cloud"), "--listen", "unix://"+socket, "--no-data-path")
	t.Cleanup(func() { stopProcess(cloud) })
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := os.Stat(socket)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the reference cloud did not listen on %s: %v", socket, err)
	}
	return "unix://" + socket
}

// stopProcess stops a started program; stopping it twice is fine.
func stopProcess(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	// SIGTERM first, as a service manager stops it: the reference cloud
	// then closes its load balancers and removes the ingress route it
	// added on kind, which a SIGKILL would leave on the host.
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
