package app

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClusterKubernetesVersion(t *testing.T) {
	dir := t.TempDir()
	write := func(name, cluster string) string {
		path := filepath.Join(dir, name)
		body := "apiVersion: ccm-conformance.dev/v1alpha1\nkind: Profile\nname: p\nccm:\n  binary:\n    path: /bin/ccm\ncapabilities: [InstancesV2]\n" + cluster
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	pinned := write("pinned.yaml", "cluster:\n  kubernetesVersion: v1.36.3\n")
	unpinned := write("unpinned.yaml", "")
	broken := write("broken.yaml", "cluster:\n  kubernetesVersion: [\n")
	tests := []struct {
		name, flag, profile, want string
	}{
		{"the flag wins", "v1.35.4", pinned, "v1.35.4"},
		{"the profile's version", "", pinned, "v1.36.3"},
		{"neither: the pinned release", "", unpinned, ""},
		{"a profile that does not load: left to the run to report", "", broken, ""},
		{"no profile file", "", filepath.Join(dir, "missing.yaml"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clusterKubernetesVersion(tt.flag, tt.profile); got != tt.want {
				t.Errorf("clusterKubernetesVersion(%q, %s) = %q, want %q", tt.flag, filepath.Base(tt.profile), got, tt.want)
			}
		})
	}
}
