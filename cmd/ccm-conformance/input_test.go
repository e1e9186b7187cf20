package main_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input is reported in one line that names the input, with exit code 2,
// before any cluster is started.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "malformed.yaml")
	if err := os.WriteFile(malformed, []byte("apiVersion: ccm-conformance.dev/v1alpha1\nkind: Profile\nname: x\nccm: {binary: {path: /bin/true}}\ncapabilities: [InstancesV2]\ntimeouts: {nodeInitialize: soon}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingBinary := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, binDir+"/reference-ccm", "/nonexistent/reference-ccm", 1)
	})
	missingMigrationConfig := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, "deploy/leader-migration.yaml", "deploy/no-such-migration.yaml", 1)
	})

	// An unreachable cluster: a kubeconfig pointing at a port nothing
	// listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := l.Addr().String()
	l.Close()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "https://`+deadAddr+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: dead, context: {cluster: dead, user: u}}]
current-context: dead
`), 0o644); err != nil {
		t.Fatal(err)
	}
	good := referenceProfile(t, t.TempDir(), nil, nil)

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"malformed profile", []string{"run", "--provider", malformed}, []string{malformed, "timeouts.nodeInitialize", `"soon"`}},
		{"missing profile", []string{"run", "--provider", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml", "no such file"}},
		{"missing CCM binary", []string{"run", "--provider", missingBinary}, []string{"ccm.binary.path", "/nonexistent/reference-ccm", "no such file"}},
		{"missing leader migration configuration", []string{"run", "--provider", missingMigrationConfig},
			[]string{missingMigrationConfig, "leaderMigration.config", "no-such-migration.yaml", "no such file"}},
		{"unreachable cluster", []string{"run", "--provider", good, "--kubeconfig", kubeconfig}, []string{"unreachable", deadAddr, kubeconfig}},
		{"bad label filter", []string{"run", "--provider", good, "--label-filter", "A &&"}, []string{"--label-filter"}},
		{"no provider flag", []string{"run"}, []string{"provider"}},
		{"unknown command", []string{"frobnicate"}, []string{"frobnicate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, tt.args...)
			if res.code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			oneLine(t, res.stderr)
			for _, w := range tt.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr %q does not contain %q", res.stderr, w)
				}
			}
		})
	}
}

func TestListShowsLabelsAndSkips(t *testing.T) {
	profile := referenceProfile(t, t.TempDir(), nil, func(s string) string {
		return strings.Replace(s, "  - DualStack\n", "", 1)
	})
	res := runHarness(t, nil, "list", "--provider", profile)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stdout, "[NodeIPAnnotation, InstancesV2, DualStack] (skipped: missing DualStack)") {
		t.Errorf("list does not mark the DualStack specs as skipped:\n%s", res.stdout)
	}
	if !strings.Contains(res.stdout, "sets each node's providerID to its instance's [InstancesV2, ReleaseBlocking]\n") {
		t.Errorf("list does not show a runnable spec unmarked:\n%s", res.stdout)
	}
}
