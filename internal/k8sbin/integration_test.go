package k8sbin

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestIntegrationBuildEtcd builds etcd from the Go module proxy into a fresh
// cache and runs it. With a warm go build cache this takes seconds; cold,
// about a minute.
func TestIntegrationBuildEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds etcd from the Go module proxy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	start := time.Now()
	path, err := Ensure(ctx, Request{
		Name:     Etcd,
		CacheDir: t.TempDir(),
		Progress: &progress,
		Getenv:   func(string) string { return "" },
	})
	if err != nil {
		t.Fatalf("Ensure: %v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("built %s in %s", path, time.Since(start).Round(time.Second))
	t.Logf("progress:\n%s", progress.String())

	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
	if want := "etcd Version: " + strings.TrimPrefix(DefaultEtcdVersion, "v"); !strings.Contains(string(out), want) {
		t.Errorf("%s --version printed %q, want it to contain %q", path, out, want)
	}
}
