package kind

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/kind/nodeimage"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// uninitializedTaint is the taint a kubelet with --cloud-provider=external
// puts on its node until a CCM initializes it.
const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func docker(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.Fields(string(out))
}

// TestIntegrationKindClusterComesUp brings up a kind cluster of one
// control plane and one worker from the offline node image (built first
// if it is not cached: 20-40 CPU-minutes cold), waits for both nodes to
// register with the uninitialized taint, deletes the cluster and checks
// that none of its containers, volumes or network is left.
func TestIntegrationKindClusterComesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("brings up a kind cluster")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI")
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Skipf("the Docker engine does not answer: %s", strings.TrimSpace(string(out)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	dir := t.TempDir()
	start := time.Now()
	c, err := Backend(Options{}).Start(ctx, cluster.StartInput{Dir: dir, Nodes: 1, IPFamilies: []string{"IPv4"}, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	kc := c.(*Cluster)
	name := kc.Name()
	stopped := false
	defer func() {
		if !stopped {
			c.Stop(context.Background())
		}
	}()
	t.Logf("cluster %s up in %s; metadata %v", name, time.Since(start).Round(time.Second), kc.Metadata())
	// The run's metadata says which path the node image took: here, where
	// no registry answers, the offline build after a failed pull.
	switch src := nodeimage.Source(kc.Metadata()[prow.MetaKindNodeImageSource]); src {
	case nodeimage.SourceBuilt, nodeimage.SourceBuiltCached, nodeimage.SourcePublishedPulled, nodeimage.SourcePublishedInDocker:
		t.Logf("node image: %s", src)
	default:
		t.Errorf("%s %q", prow.MetaKindNodeImageSource, src)
	}

	containers := docker(t, "ps", "-a", "-q", "--filter", "label="+kindClusterLabel+"="+name)
	if len(containers) != 2 {
		t.Errorf("cluster %s has %d containers, want 2", name, len(containers))
	}
	var volumes []string
	for _, id := range containers {
		volumes = append(volumes, docker(t, "inspect", "--format", `{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}`, id)...)
	}
	if len(volumes) == 0 {
		t.Errorf("the node containers have no volume (kind gives each one for /var)")
	}

	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	var nodes []corev1.Node
	err = poll(ctx, time.Second, 3*time.Minute, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		nodes = list.Items
		if len(nodes) != 2 {
			return false, nil
		}
		for _, n := range nodes {
			if !hasTaint(n, uninitializedTaint) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		for _, n := range nodes {
			t.Logf("node %s taints %v", n.Name, n.Spec.Taints)
		}
		t.Fatalf("want 2 nodes with the %s taint, saw %d: %v", uninitializedTaint, len(nodes), err)
	}
	for _, n := range nodes {
		t.Logf("node %s: podCIDRs %v, taints %v, ready %v", n.Name, n.Spec.PodCIDRs, n.Spec.Taints, nodeReady(n))
	}
	if err := c.(cluster.Finisher).Ready(ctx); err != nil {
		t.Errorf("nodes with the static CNI configuration: %v", err)
	}

	// The control plane's static pods and kube-proxy (a DaemonSet, which
	// tolerates the uninitialized taint) run from the images made offline.
	// kubeadm's CoreDNS pods do not tolerate it: with no CCM here, they
	// wait, as on a cloud cluster before its CCM runs.
	var notRunning, dns []string
	err = poll(ctx, time.Second, 3*time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		notRunning, dns = notRunning[:0], dns[:0]
		proxies := 0
		for _, p := range pods.Items {
			switch p.Labels["k8s-app"] {
			case "kube-proxy":
				proxies++
			case "kube-dns":
				dns = append(dns, p.Name+" "+string(p.Status.Phase))
				if p.Status.Phase != corev1.PodPending {
					notRunning = append(notRunning, p.Name+" "+string(p.Status.Phase)+" (want Pending: no CCM removed the uninitialized taint)")
				}
				continue
			}
			if p.Status.Phase != corev1.PodRunning {
				notRunning = append(notRunning, p.Name+" "+string(p.Status.Phase))
			}
		}
		return proxies == 2 && len(dns) > 0 && len(pods.Items) >= 6+len(dns) && len(notRunning) == 0, nil
	})
	if err != nil {
		t.Errorf("kube-system pods (want etcd, kube-apiserver, kube-controller-manager, kube-scheduler and two kube-proxy Running, kubeadm's CoreDNS Pending): not so: %v; CoreDNS: %v: %v", notRunning, dns, err)
	}

	logs := filepath.Join(dir, "logs")
	if err := kc.ExportLogs(ctx, logs); err != nil {
		t.Errorf("ExportLogs: %v", err)
	} else if _, err := os.Stat(filepath.Join(logs, name+"-worker", "kubelet.log")); err != nil {
		t.Errorf("exported logs lack the worker's kubelet.log: %v", err)
	}

	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if left := docker(t, "ps", "-a", "-q", "--filter", "label="+kindClusterLabel+"="+name); len(left) > 0 {
		t.Errorf("containers left after Stop: %v", left)
	}
	for _, n := range docker(t, "network", "ls", "--format", "{{.Name}}") {
		if n == name {
			t.Errorf("network %s left after Stop", name)
		}
	}
	all := strings.Join(docker(t, "volume", "ls", "-q"), " ")
	for _, v := range volumes {
		if strings.Contains(all, v) {
			t.Errorf("volume %s left after Stop", v)
		}
	}
}

func hasTaint(n corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
