package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// On a cluster of real machines (--kubeconfig: the harness adds none), the
// node addressing specs run on a Node the harness registers for an instance
// it creates through the cloud driver, and the node lifecycle specs about a
// deleted and a stopped instance take down one of the cluster's own nodes
// through the cloud driver. The machines here
// are stand-ins the test runs outside the harness: an instance of the
// reference cloud each, and a kubelet that runs while its instance does.
func TestIntegrationNodeLifecycleOnRealNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := shortTempDir(t)
	c, err := local.Start(ctx, local.Options{Dir: filepath.Join(tmp, "cluster")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())

	endpoint := startReferenceCloud(t, ctx, tmp)
	api, err := clouddriver.New(ctx, clouddriver.Options{Command: []string{filepath.Join(binDir, "reference-cloud-driver")}, Env: append(os.Environ(), "REFERENCE_CLOUD_ENDPOINT="+endpoint)})
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	pool := nodes.NewPool(client, nodes.Options{KubeletVersion: c.KubernetesVersion(), HeartbeatInterval: time.Second})
	defer pool.Close(context.Background())
	names := []string{"machine-1", "machine-2", "machine-3", "machine-4"}
	kubelets := map[string]*nodes.Kubelet{}
	for _, name := range names {
		if _, err := api.CreateInstance(ctx, clouddriver.CreateInstanceRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
		if kubelets[name], err = pool.Register(ctx, nodes.Spec{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	// The machines: a kubelet goes silent when its instance stops or is
	// deleted, and speaks again when it runs.
	machinesDone := make(chan struct{})
	go func() {
		defer close(machinesDone)
		for ctx.Err() == nil {
			// One driver call a round: an instance missing from the
			// list is deleted, so its kubelet is silent too.
			instances, err := api.ListInstances(ctx)
			for name, k := range kubelets {
				running := slices.ContainsFunc(instances, func(in clouddriver.Instance) bool {
					return in.Name == name && in.State == clouddriver.StateRunning
				})
				switch {
				case err != nil:
				case running && !k.Running():
					k.Resume()
				case !running && k.Running():
					k.Stop()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { cancel(); <-machinesDone }()

	// The reference profile with its cloud already running, as a real
	// cloud would be.
	profileWith := func(defects string) string {
		return referenceProfile(t, shortTempDir(t), nil, func(s string) string {
			i, j := strings.Index(s, "services:"), strings.Index(s, "ccm:")
			s = strings.ReplaceAll(s[:i]+s[j:], "unix://${RUN_DIR}/cloud.sock", endpoint)
			if defects != "" {
				s = testbin.FailFast(strings.Replace(s, "      - --cloud-provider=reference\n", "      - --cloud-provider=reference\n      - --reference-defects="+defects+"\n", 1))
			}
			return s
		})
	}
	// First, on the untouched cluster: the node addressing specs watch a
	// node join. No kubelet can be added to this cluster, but the cloud
	// driver creates instances: the harness registers a Node for one as a
	// kubelet would, and the CCM must initialize it during the spec. A CCM
	// whose controllers do nothing fails them.
	join := joinSpecs
	for _, tt := range []struct {
		name   string
		edit   func(string) string
		code   int
		status string
	}{
		{name: "join specs, a correct CCM", code: 0, status: "passed"},
		{name: "join specs, a CCM that does nothing", code: 1, status: "failed", edit: func(s string) string {
			return testbin.FailFast(strings.Replace(s, "      - --cloud-provider=reference\n", "      - --cloud-provider=reference\n      - "+nullCCMArgs[0]+"\n", 1))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			profile := profileWith("")
			if tt.edit != nil {
				data, err := os.ReadFile(profile)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(profile, []byte(tt.edit(string(data))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			runDir := filepath.Join(shortTempDir(t), "run")
			res := runHarness(t, []string{"TMPDIR=" + tmp}, "run", "--provider", profile, "--kubeconfig", c.Kubeconfig(),
				"--label-filter", joinFilter, "--artifacts", runDir)
			if res.code != tt.code {
				t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", res.code, tt.code, tail(res.stdout, 60), res.stderr)
			}
			cases := readJUnit(t, runDir)
			for _, want := range join {
				found := false
				for _, jc := range cases {
					if strings.Contains(jc.Name, want) {
						found = true
						if jc.Status != tt.status {
							t.Errorf("%s: %s, want %s", jc.Name, jc.Status, tt.status)
						}
					}
				}
				if !found {
					t.Errorf("spec %q is not in the JUnit report", want)
				}
			}
			if tt.code == 0 {
				expectListForesaw(t, profile, joinFilter, cases)
			}
			// The registered Nodes and their instances are gone.
			list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range list.Items {
				if strings.HasPrefix(n.Name, "ccm-join-") {
					t.Errorf("node %s, registered by the harness, is still there", n.Name)
				}
			}
			if inst, err := api.ListInstances(context.Background()); err == nil {
				for _, in := range inst {
					if strings.HasPrefix(in.Name, "ccm-join-") {
						t.Errorf("instance %s, created by the harness, is still there", in.Name)
					}
				}
			}
		})
	}

	// Each run takes down two machines for good or for a while: the
	// first deletes machine-1 and stops machine-2; the second, whose CCM
	// never deletes a Node, deletes machine-2's instance and stops
	// machine-3, with machine-4 Ready besides.
	for _, tt := range []struct {
		name, defects string
		code          int
		status        string
	}{
		{name: "a correct CCM", code: 0, status: "passed"},
		{name: "a CCM that keeps Nodes of gone instances and never taints shut-down ones", defects: "instance-exists-always,no-shutdown", code: 1, status: "failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runDir := filepath.Join(shortTempDir(t), "run")
			res := runHarness(t, []string{"TMPDIR=" + tmp}, "run", "--provider", profileWith(tt.defects), "--kubeconfig", c.Kubeconfig(),
				"--label-filter", "NodeLifecycle", "--artifacts", runDir)
			if res.code != tt.code {
				t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", res.code, tt.code, tail(res.stdout, 60), res.stderr)
			}
			want := map[string]string{
				"deletes the Node of an instance deleted in the cloud":    tt.status,
				"taints the Node of a stopped instance as shut down":      tt.status,
				"keeps every NotReady Node whose instance still exists":   "skipped",
				"keeps a Node whose instance never existed uninitialized": "skipped",
				"keeps a NotReady Node while the cloud answers instance":  "skipped",
			}
			seen := 0
			for _, jc := range readJUnit(t, runDir) {
				for text, status := range want {
					if !strings.Contains(jc.Name, text) {
						continue
					}
					seen++
					if jc.Status != status {
						why := ""
						if jc.Skipped != nil {
							why = jc.Skipped.Message
						}
						if jc.Failure != nil {
							why = jc.Failure.Message
						}
						t.Errorf("%s: %s (%s), want %s", jc.Name, jc.Status, why, status)
					}
				}
			}
			if seen != len(want) {
				t.Errorf("found %d of the %d node lifecycle specs in the JUnit report", seen, len(want))
			}
			if tt.defects == "" {
				expectListForesaw(t, profileWith(""), "NodeLifecycle", readJUnit(t, runDir))
			}
		})
	}

}

// joinFilter selects the node addressing specs that watch a node join,
// joinSpecs: on an existing cluster they run on a Node the harness
// registers (framework.RegisterNode).
const joinFilter = "InstancesV2 && !NodeIPAnnotation"

var joinSpecs = []string{
	"removes the uninitialized taint from every node and sets a providerID",
	"sets each node's providerID to its instance's",
	"gives each node the addresses its instance has in the cloud",
	"labels each node with its instance type",
	"labels each node with its instance's zone and region",
}

// expectListForesaw checks that `list --backend kubeconfig` foresaw which
// specs of the run on an existing cluster were skipped and which ran.
func expectListForesaw(t *testing.T, profile, labelFilter string, cases []junitCase) {
	t.Helper()
	res := runHarness(t, nil, "list", "--provider", profile, "--backend", "kubeconfig", "--label-filter", labelFilter, "-o", "json")
	if res.code != 0 {
		t.Fatalf("list: exit %d: %s", res.code, res.stderr)
	}
	var listed []struct {
		Text string `json:"text"`
		Skip string `json:"skip"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &listed); err != nil {
		t.Fatalf("list -o json: %v", err)
	}
	if len(listed) == 0 {
		t.Fatal("list foresaw no spec")
	}
	for _, l := range listed {
		found := false
		for _, c := range cases {
			// A JUnit case is the spec's text and its labels.
			if c.Name != l.Text && !strings.HasPrefix(c.Name, l.Text+" [") {
				continue
			}
			found = true
			if foreseen, was := l.Skip != "", c.Status == "skipped"; foreseen != was {
				t.Errorf("spec %q: list --backend kubeconfig foresaw skipped=%v (%q), the run had %s", l.Text, foreseen, l.Skip, c.Status)
			}
		}
		if !found {
			t.Errorf("spec %q: foreseen by list, not in the run's JUnit report", l.Text)
		}
	}
}
