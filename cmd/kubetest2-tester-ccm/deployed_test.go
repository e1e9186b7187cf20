package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// A CCM that the provider deployed itself (ccm.deployed): the tester does
// not start it, and reads the image and digest it reports from the status
// of the CCM's pods. The local cluster runs no kubelet, so the test stands
// in for the deployment: it runs reference-ccm as a process against the
// cluster and creates the Pod object a kubelet would report for it.
func TestIntegrationTesterWithADeployedCCM(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts a local cluster and the reference provider")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cluster := startCluster(t, ctx)
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	dir := shortTempDir(t)
	socket := filepath.Join(dir, "cloud.sock")
	endpoint := "REFERENCE_CLOUD_ENDPOINT=unix://" + socket
	startProcess(t, filepath.Join(dir, "cloud.log"), nil, filepath.Join(binDir, "reference-cloud"), "--listen", "unix://"+socket)
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := os.Stat(socket)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("reference-cloud did not create %s: %v", socket, err)
	}
	startProcess(t, filepath.Join(dir, "ccm.log"), []string{endpoint}, filepath.Join(binDir, "reference-ccm"),
		"--cloud-provider=reference", "--leader-elect=false", "--configure-cloud-routes=false", "--kubeconfig="+cluster.Kubeconfig(), "--secure-port=0")

	// What a kubelet reports for the CCM's pod once its container runs.
	const (
		image  = "registry.example/ccm/reference-ccm:v1.37.2"
		digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reference-ccm-0", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "reference-ccm"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "cloud-controller-manager", Image: image}}},
	}
	pod, err = client.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "cloud-controller-manager", Image: image, ImageID: "registry.example/ccm/reference-ccm@" + digest, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}},
	}
	if _, err := client.CoreV1().Pods("kube-system").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	profile := filepath.Join(dir, "deployed.yaml")
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
capabilities: [InstancesV2, Zones, LoadBalancer, LoadBalancerUDP, LoadBalancerMixedProtocol, LoadBalancerSourceRanges, Routes]
timeouts:
  pollInterval: 250ms
  loadBalancerCreate: 30s
  loadBalancerUpdate: 30s
  loadBalancerDelete: 30s
`, filepath.Join(binDir, "reference-cloud-driver"), socket)), 0o644); err != nil {
		t.Fatal(err)
	}

	artifacts := filepath.Join(dir, "artifacts")
	env := map[string]string{
		"ARTIFACTS":         artifacts,
		"KUBECONFIG":        cluster.Kubeconfig(),
		"KUBETEST2_RUN_DIR": filepath.Join(dir, "rundir", "run-1"),
		"KUBETEST2_RUN_ID":  "run-1",
		"TMPDIR":            shortTempDir(t),
	}
	res := runTester(t, env, "--provider", profile, "--label-filter", lbLifeFilter)
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 60), res.stderr)
	}
	ran := 0
	for name, c := range junitCases(t, artifacts) {
		if strings.HasPrefix(name, "[loadbalancer]") && c.Status != "skipped" {
			ran++
		}
	}
	if ran != lbLifeSpecs {
		t.Errorf("%d release-blocking load balancer specs ran against the deployed CCM, want %d", ran, lbLifeSpecs)
	}
	var meta map[string]any
	data, err := os.ReadFile(filepath.Join(artifacts, "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{prow.MetaCCMImage: image, prow.MetaCCMDigest: digest, prow.MetaProvider: "reference"} {
		if meta[k] != want {
			t.Errorf("$ARTIFACTS/metadata.json %s = %v, want %q (from the CCM pod's status)", k, meta[k], want)
		}
	}
}

// startProcess runs a command with its output in logPath and stops it when
// the test ends.
func startProcess(t *testing.T, logPath string, env []string, name string, args ...string) {
	t.Helper()
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", filepath.Base(name), tail(string(out), 20))
		}
	})
}
