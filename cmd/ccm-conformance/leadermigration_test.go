package main_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// The leader migration suite fails for a CCM that runs a migrated
// controller outside the migration lease, and its controller-names spec
// fails, precisely, for a CCM that keeps k8s.io/cloud-provider v0.37.2's
// default migration configuration (docs/leader-migration.md).
func TestIntegrationLeaderMigrationDefectsFailTheRightSpecs(t *testing.T) {
	skipUnlessIntegration(t)
	testbin.EachOnSharedClusters(t, tableLanes, leaderMigrationDefectCases(t), defectCase.caseName, runDefectCaseOn)
}

// leaderMigrationDefectCases is the table of
// TestIntegrationLeaderMigrationDefectsFailTheRightSpecs; the mutant corpus
// counts the specs it fails as killed (mutants_test.go).
func leaderMigrationDefectCases(t *testing.T) []defectCase {
	const (
		locked   = "keeps the migrated controllers stopped while another manager holds the migration lease"
		overlap  = "never runs a migrated controller in two replicas at once"
		rollback = "does not run a controller the configuration gives back to kube-controller-manager"
		names    = "covers every cloud controller it runs with the migration lock of the configuration it ships"
	)
	return []defectCase{
		{
			name: "service controller outside the migration lease", defects: "service-outside-migration-lease",
			labelFilter: "LeaderMigration",
			failing: map[string][]string{
				locked: {"the CCM under test (instance lm-locked-ccm): expected none of [",
					"running, since the peer (CCM instance lm-locked-holder) holds the migration lease kube-system/ccm-lm-", "saw [service-lb-controller] running"},
				overlap: {"expected each migrated controller in one replica at a time, saw one in two", "service-lb-controller ran in the CCM under test (instance lm-overlap-a-",
					" and the CCM under test (instance lm-overlap-b-"},
				rollback: {"saw [service-lb-controller] running", "since the peer (CCM instance lm-rollback-holder) holds the migration lease",
					"the configuration gives service-lb-controller to kube-controller-manager"},
				names: {"the CCM runs service-lb-controller outside the migration lock: expected it to wait for the migration lease kube-system/cloud-provider-extraction-migration, " +
					"saw it listed in the /healthz?verbose of the CCM under test (instance lm-names-ccm) while the peer (CCM instance lm-names-holder) held the lease",
					"(started with --enable-leader-migration and --leader-migration-config=" + filepath.Join(repoRoot(), "providers", "reference", "deploy", "leader-migration.yaml") +
						" (the profile's leaderMigration.config))",
					"Its shipped migration configuration (from /configz) names ",
					"The cloud logged EnsureLoadBalancer by caller"},
			},
		},
		{
			// What every CCM built on k8s.io/cloud-provider v0.37.2 does
			// when it is run without the configuration its provider ships:
			// the reference CCM leaves upstream's default as it is.
			name: "upstream default migration configuration", labelFilter: "LeaderMigration",
			profileEdit: func(s string) string {
				const block = "leaderMigration:\n  config: "
				i := strings.Index(s, block)
				if i < 0 {
					t.Fatalf("the reference profile has no %q", block)
				}
				end := i + strings.Index(s[i:], ".yaml\n") + len(".yaml\n")
				return s[:i] + s[end:]
			},
			failing: map[string][]string{
				names: {"the CCM runs node-route-controller, service-lb-controller outside the migration lock: expected them to wait for the migration lease",
					"(started with --enable-leader-migration and no --leader-migration-config)",
					"Its default migration configuration (from /configz) names route-controller, service-controller, cloud-node-lifecycle-controller: " +
						"kube-controller-manager's names (route-controller, not node-route-controller; service-controller, not service-lb-controller), which match no controller of the CCM"},
			},
		},
	}
}

// kube-controller-manager v1.37.2 cannot take part in a leader migration:
// with --enable-leader-migration it takes the migration lease, fails to
// build a second controller context, and exits 1, leaving the lease to
// expire. This is why the leader migration suite's peers are CCM
// instances. If this test fails after a Kubernetes update, the real
// kube-controller-manager may have become usable as a peer: see
// docs/leader-migration.md.
func TestIntegrationKubeControllerManagerCannotHoldTheMigrationLease(t *testing.T) {
	skipUnlessIntegration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err := local.ReadState(testbin.SharedCluster(t))
	if err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}

	var kcm *local.Component
	for _, c := range cluster.Components {
		if c.Name == local.ComponentControllerManager {
			kcm = &c
		}
	}
	if kcm == nil {
		t.Fatal("the local cluster has no kube-controller-manager")
	}
	// The cluster's own flags, with leader election and migration on, a
	// lease of its own, and no serving port (the cluster's KCM has it).
	var args []string
	for _, a := range kcm.Args {
		if !strings.HasPrefix(a, "--leader-elect") && !strings.HasPrefix(a, "--secure-port") {
			args = append(args, a)
		}
	}
	const lease = "cloud-provider-extraction-migration"
	// The exited manager leaves its leases held; the other tests on the
	// shared cluster must not wait them out.
	t.Cleanup(func() {
		for _, name := range []string{lease, "kcm-migration-test"} {
			_ = client.CoordinationV1().Leases("kube-system").Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	args = append(args, "--secure-port=0", "--leader-elect=true", "--leader-elect-resource-name=kcm-migration-test",
		"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=1s",
		"--enable-leader-migration")
	logPath := filepath.Join(t.TempDir(), "kube-controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, kcm.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	runErr := cmd.Run()
	logData, _ := os.ReadFile(logPath)
	log := string(logData)

	var exitErr *exec.ExitError
	if !errors.As(runErr, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("kube-controller-manager %s with --enable-leader-migration ended with %v, want exit code 1; last log lines:\n%s",
			cluster.KubernetesVersion, runErr, tail(log, 15))
	}
	for _, want := range []string{
		`"Successfully acquired lease" lock="kube-system/` + lease + `"`,
		`"leader migration: starting migrated controllers."`,
		`"Error building controller context" err="failed to create informer name: informer name \"kube-controller-manager\" is already registered"`,
		// Which of its two leader elections reports the end first
		// varies: "migration leaderelection lost/stopped" or
		// "leaderelection lost/stopped".
		`leaderelection lost/stopped"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("kube-controller-manager's log lacks %s; last log lines:\n%s", want, tail(log, 15))
		}
	}
	// It went without releasing the lease: another manager waits out the
	// lease duration.
	l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the migration lease: %v", err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		t.Errorf("the migration lease %s has no holder; want the exited kube-controller-manager's identity", lease)
	}
}
