package k8sbin

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestGoModGeneration(t *testing.T) {
	tests := []struct {
		fixture string
		// generate is KubernetesGoMod or EtcdGoMod.
		generate func([]byte, string) ([]byte, error)
		version  string
		// golden is the expected output, under testdata/; "" when an error is expected.
		golden  string
		wantErr string
	}{
		{fixture: "valid-kubernetes.mod", generate: KubernetesGoMod, version: "v1.37.2", golden: "valid-kubernetes.golden.mod"},
		{fixture: "valid-kubernetes.mod", generate: KubernetesGoMod, version: "v1.38.0-rc.1", golden: "valid-kubernetes-rc.golden.mod"},
		{fixture: "valid-kubernetes.mod", generate: KubernetesGoMod, version: "1.37.2", wantErr: `Kubernetes version "1.37.2"`},
		{fixture: "valid-kubernetes.mod", generate: KubernetesGoMod, version: "v2.0.0", wantErr: `Kubernetes version "v2.0.0"`},
		{fixture: "invalid-kubernetes-no-staging.mod", generate: KubernetesGoMod, version: "v1.37.2", wantErr: "no ./staging replacements"},
		{fixture: "invalid-kubernetes-other-module.mod", generate: KubernetesGoMod, version: "v1.37.2", wantErr: "declares another module"},
		{fixture: "invalid-kubernetes-syntax.mod", generate: KubernetesGoMod, version: "v1.37.2", wantErr: "parsing the go.mod of k8s.io/kubernetes@v1.37.2"},
		{fixture: "valid-etcd.mod", generate: EtcdGoMod, version: "v3.6.16", golden: "valid-etcd.golden.mod"},
		{fixture: "valid-etcd.mod", generate: EtcdGoMod, version: "v2.3.8", wantErr: `etcd version "v2.3.8"`},
		{fixture: "invalid-etcd-other-module.mod", generate: EtcdGoMod, version: "v3.6.16", wantErr: "declares another module"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"@"+tt.version, func(t *testing.T) {
			upstream, err := os.ReadFile(filepath.Join("testdata", tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.generate(upstream, tt.version)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			// Whatever it looks like, the output must be a go.mod the go
			// command accepts, without a toolchain line that would make it
			// download another Go.
			f, err := modfile.Parse("go.mod", got, nil)
			if err != nil {
				t.Fatalf("generated go.mod does not parse: %v\n%s", err, got)
			}
			if f.Toolchain != nil {
				t.Errorf("generated go.mod has a toolchain line:\n%s", got)
			}
			goldenPath := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("generated go.mod differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", goldenPath, got, want)
			}
		})
	}
}

func TestKubernetesLDFlags(t *testing.T) {
	v, err := parseKubernetesVersion("v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	got := kubernetesLDFlags(v, "2026-10-27T12:01:04Z", commit)
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for _, want := range []string{
			"-X " + pkg + ".gitVersion=v1.37.2",
			"-X " + pkg + ".gitMajor=1",
			"-X " + pkg + ".gitMinor=37",
			"-X " + pkg + ".gitTreeState=clean",
			"-X " + pkg + ".buildDate=2026-10-27T12:01:04Z",
			"-X " + pkg + ".gitCommit=" + commit,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("ldflags %q lack %q", got, want)
			}
		}
	}
	if got := kubernetesLDFlags(v, "", ""); strings.Contains(got, "buildDate") || strings.Contains(got, "gitCommit") {
		t.Errorf("ldflags without a known release time and commit set buildDate or gitCommit: %q", got)
	}
}
