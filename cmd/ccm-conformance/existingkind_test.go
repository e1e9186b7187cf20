package main_test

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/kind"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// existingClusterProfile is the profile a provider would write for a
// cluster its deployer made, with the CCM already deployed: ccm.deployed,
// the cloud driver reaching the cloud at endpoint, the pod network the
// cluster has, and the cloud's credential from the CI's environment.
const existingClusterProfile = `apiVersion: ccm-conformance.dev/v1alpha1
kind: Profile
name: reference-existing
ccm:
  deployed:
    namespace: kube-system
    labelSelector: %s
cloudDriver:
  command: [%s]
  env:
    REFERENCE_CLOUD_ENDPOINT: %s
    CLOUD_TOKEN: ${env:CCM_TEST_CLOUD_TOKEN}
capabilities: [InstancesV2, Zones, NodeLifecycle, LoadBalancer, LoadBalancerUDP, LoadBalancerMixedProtocol, LoadBalancerSourceRanges, LoadBalancerHealthCheckNodePort, DataPath, Routes]
cluster:
  clusterCIDRs: [10.244.0.0/16]
  podRoutes: cloud
timeouts:
  pollInterval: 250ms
  nodeInitialize: 60s
  nodeAddressUpdate: 60s
  cloudDriverCall: 30s
  nodeDeletion: 90s
  nodeShutdown: 90s
  nodeKeep: 10s
  loadBalancerCreate: 60s
  loadBalancerUpdate: 60s
  loadBalancerDelete: 60s
  loadBalancerIgnore: 2s
  routeSync: 60s
  leftoversGone: 3m
`

// A kind cluster used as an existing cluster, the closest to a provider's
// cloud cluster these machines allow: the test makes it as a deployer
// would (cloud-provider external, kind's node image), runs the reference
// cloud beside it, deploys the reference CCM's image the way a provider's
// manifests do (the standard deployment, under a name of its own) and
// waits until the CCM has initialized every node. Only then does the
// harness come, with --kubeconfig and ccm.deployed: it adds no node and
// starts no CCM. The join specs must then run on a Node the harness
// registers for an instance it creates; the run must be judged pass by
// the LKG rules, not partial; the CCM's log (kept from its pods) holds the
// cloud's credential, which the profile names as ${env:...}, and no file
// of the run directory may show it. Then the same CCM, redeployed with
// every controller off, must fail the join specs.
func TestIntegrationKindAsExistingCluster(t *testing.T) {
	skipUnlessDocker(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	image, _ := testbin.ReferenceCCMImage(t)
	echo, _ := testbin.EchoServerImage(t)
	volumes := dockerVolumes(t)
	dir := shortTempDir(t)

	// The deployer's part: a cluster whose pod networks only the cloud's
	// routes join, as reference-kind.yaml's.
	progress, err := os.Create(filepath.Join(dir, "kind.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer progress.Close()
	started, err := kind.Backend(kind.Options{}).Start(ctx, cluster.StartInput{
		Dir: filepath.Join(dir, "kind"), Nodes: 2, IPFamilies: []string{"IPv4"}, CloudRoutesPods: true, Progress: progress,
	})
	if err != nil {
		t.Fatalf("making the kind cluster: %v", err)
	}
	kc := started.(*kind.Cluster)
	defer func() {
		if err := kc.Stop(context.Background()); err != nil {
			t.Errorf("deleting kind cluster %s: %v", kc.Name(), err)
		}
		if left := testbin.ContainersLabelled(t, "io.x-k8s.kind.cluster", kc.Name()); len(left) > 0 {
			t.Errorf("containers of kind cluster %s left: %v", kc.Name(), left)
		}
		for _, v := range newVolumesThatStay(t, volumes) {
			t.Errorf("docker volume %s, made during the test, left after it", v)
		}
	}()
	client, err := kubernetes.NewForConfig(kc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}

	// The cloud, on the host's address on the cluster's network.
	endpoint := "tcp://" + net.JoinHostPort(kc.HostIP(), freePort(t, kc.HostIP()))
	cloud := startLogged(t, ctx, filepath.Join(dir, "cloud.log"), nil, filepath.Join(binDir, "reference-cloud"),
		"--listen="+endpoint, "--kind-cluster="+kc.Name())
	t.Cleanup(func() {
		stopProcess(cloud)
		checkIngressRouteGone(t, filepath.Join(dir, "cloud.log"))
	})
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c, err := net.Dial("tcp", strings.TrimPrefix(endpoint, "tcp://"))
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the reference cloud does not listen on %s: %v", endpoint, err)
	}

	// The provider's part: its images on the nodes (kind load
	// docker-image), its CCM deployed with the credential it needs.
	for _, img := range []string{image, echo} {
		if err := kc.LoadImage(ctx, img); err != nil {
			t.Fatalf("loading %s: %v", img, err)
		}
	}
	secret := framework.UniqueName("ccmc-planted-secret") + "-" + framework.UniqueName("x")
	deploy := func(extraArgs ...string) ccm.StandardDeployment {
		d := ccm.StandardDeployment{
			Name: "reference-ccm", Image: image, RunID: "provider-manifests",
			Args: append([]string{
				"--cloud-provider=reference", "--v=2", "--cluster-name=" + secret,
				"--allocate-node-cidrs=true", "--configure-cloud-routes=true", "--cluster-cidr=10.244.0.0/16",
				"--node-status-update-frequency=1s", "--route-reconciliation-period=250ms", "--node-monitor-period=250ms",
				"--cloud-config=/etc/reference-cloud/cloud.yaml",
			}, extraArgs...),
			Files: []ccm.File{{Path: "/etc/reference-cloud/cloud.yaml", Secret: true, Content: "endpoint: " + endpoint + "\n"}},
		}
		if err := d.Apply(ctx, client); err != nil {
			t.Fatalf("deploying the CCM: %v", err)
		}
		if err := d.WaitAvailable(ctx, client, 3*time.Minute); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := deploy()
	defer func() {
		if err := d.Delete(context.Background(), client); err != nil {
			t.Errorf("deleting the CCM: %v", err)
		}
	}()
	if err := kc.Ready(ctx); err != nil {
		t.Fatalf("the kind cluster is not ready: %v", err)
	}
	// Handed over as a deployer hands a cluster over: every node
	// initialized by the CCM before the harness comes.
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		waiting, err := framework.UninitializedNodes(ctx, client)
		return err == nil && len(waiting) == 0, nil
	}); err != nil {
		t.Fatalf("the CCM did not initialize the cluster's nodes: %v", err)
	}

	profile := filepath.Join(dir, "existing.yaml")
	if err := os.WriteFile(profile, []byte(fmt.Sprintf(existingClusterProfile, d.Selector(), filepath.Join(binDir, "reference-cloud-driver"), endpoint)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"CCM_TEST_CLOUD_TOKEN=" + secret, "TMPDIR=" + shortTempDir(t)}

	t.Run("the deployed CCM is judged pass", func(t *testing.T) {
		runDir := filepath.Join(shortTempDir(t), "run")
		res := runHarness(t, env, "run", "--provider", profile, "--kubeconfig", kc.Kubeconfig(), "--echo-image", echo, "--artifacts", runDir)
		if res.code != 0 {
			t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
		}
		passed := map[string]bool{}
		for _, c := range readJUnit(t, runDir) {
			if c.Status == "passed" {
				passed[c.Name] = true
			}
		}
		checkPassed(t, passed, "on the existing kind cluster",
			"removes the uninitialized taint from every node and sets a providerID",
			"gives each node the addresses its instance has in the cloud",
			"labels each node with its instance's zone and region",
			"gives every node's podCIDRs a cloud route to that node",
			"carries traffic from the control plane to a pod on every other node over the cloud's routes",
			"delivers TCP traffic sent to the ingress to a backend",
			"with externalTrafficPolicy Local, sends traffic only to the node with the endpoint",
			"deletes the Node of an instance deleted in the cloud",
			"taints the Node of a stopped instance as shut down",
		)
		// The join specs saw the CCM act on a Node the harness
		// registered: the CCM's log, which the run keeps, names it.
		log, err := os.ReadFile(filepath.Join(runDir, "artifacts", "logs", "ccm.log"))
		if err != nil || !strings.Contains(string(log), "ccm-join-") {
			t.Errorf("the deployed CCM's log in the run directory names no Node the harness registered (ccm-join-...) (%v)", err)
		}
		// The image as the node's container runtime names it
		// (docker.io/ prefixed).
		meta := readMetadata(t, runDir)
		if got, _ := meta["ccm-image"].(string); meta["backend"] != "kubeconfig" || !strings.HasSuffix(got, "/"+image) {
			t.Errorf("metadata.json: backend %v, ccm-image %v; want kubeconfig and %s (read from the CCM's pods)", meta["backend"], meta["ccm-image"], image)
		}
		if verdict, reason, _ := publishedVerdict(t, runDir); verdict != "pass" {
			t.Errorf("LKG verdict %s (%s), want pass", verdict, reason)
		}
		checkSecretKeptOut(t, runDir, secret, res)
	})

	t.Run("a CCM that does nothing fails the join specs", func(t *testing.T) {
		d = deploy(nullCCMArgs...)
		p := filepath.Join(dir, "existing-failfast.yaml")
		data, err := os.ReadFile(profile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(testbin.FailFast(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
		runDir := filepath.Join(shortTempDir(t), "run")
		res := runHarness(t, env, "run", "--provider", p, "--kubeconfig", kc.Kubeconfig(), "--artifacts", runDir,
			"--label-filter", joinFilter)
		if res.code != 1 {
			t.Fatalf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 60), res.stderr)
		}
		failed := map[string]bool{}
		for _, c := range readJUnit(t, runDir) {
			if c.Status == "failed" {
				failed[c.Name] = true
			}
		}
		for _, want := range joinSpecs {
			found := false
			for name := range failed {
				found = found || strings.Contains(name, want)
			}
			if !found {
				t.Errorf("join spec %q did not fail against a CCM that does nothing", want)
			}
		}
	})

	// What the harness registered is gone with its specs.
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list.Items {
		if strings.HasPrefix(n.Name, "ccm-join-") {
			t.Errorf("node %s, registered by the harness, is still there", n.Name)
		}
	}
}

// freePort returns a TCP port free on host now.
func freePort(t *testing.T, host string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// checkSecretKeptOut fails t if the program's output or any file of the
// run directory holds secret, or if no file shows the mark that stands for
// it (then the secret never reached what would have leaked it, and the
// check proved nothing).
func checkSecretKeptOut(t *testing.T, runDir, secret string, res result) {
	t.Helper()
	if strings.Contains(res.stdout, secret) || strings.Contains(res.stderr, secret) {
		t.Errorf("the program's output shows the secret")
	}
	files, marked := 0, 0
	err := filepath.WalkDir(runDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(data), secret) {
			t.Errorf("%s holds the secret", p)
		}
		if strings.Contains(string(data), "[redacted CCM_TEST_CLOUD_TOKEN]") {
			marked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if marked == 0 {
		t.Errorf("no file of the run directory (%d files) shows where the secret was: did it reach the CCM's log?", files)
	}
	t.Logf("%d files, %d with the secret redacted", files, marked)
}

// checkIngressRouteGone fails the test when the reference cloud whose log
// is logPath routed its ingress range to this host (on kind, as root) and
// the route outlived it.
func checkIngressRouteGone(t *testing.T, logPath string) {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Errorf("the cloud's log: %v", err)
		return
	}
	m := regexp.MustCompile(`load balancer ingress IPs from (100\.72\.\d+\.0/24)`).FindSubmatch(data)
	if m == nil {
		return // loopback ingress: nothing routed
	}
	out, err := exec.Command("ip", "-4", "route", "show", "table", "local", string(m[1])).CombinedOutput()
	if err != nil {
		t.Errorf("ip route show table local %s: %v: %s", m[1], err, out)
	} else if strings.TrimSpace(string(out)) != "" {
		t.Errorf("the cloud's ingress route outlived it: %s", out)
	}
}
