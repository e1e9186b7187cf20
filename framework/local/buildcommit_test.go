package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
)

// The commit of the cluster's build comes from the binary cache's build
// info beside kube-apiserver, and is unknown without one.
func TestBuildCommit(t *testing.T) {
	dir := t.TempDir()
	apiServer := filepath.Join(dir, "kube-apiserver")
	components := []Component{{Name: ComponentEtcd, Binary: filepath.Join(dir, "etcd")}, {Name: ComponentAPIServer, Binary: apiServer}}
	if got := buildCommit(components); got != "" {
		t.Errorf("buildCommit without build info = %q, want none", got)
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	if err := os.WriteFile(k8sbin.BuildInfoPath(apiServer), []byte(`{"module":"k8s.io/kubernetes","version":"v1.37.2","commit":"`+commit+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := buildCommit(components); got != commit {
		t.Errorf("buildCommit = %q, want %q", got, commit)
	}
}
