package k8sbin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env returns a Getenv over a fixed map.
// env is the environment a test gives; downloads of Kubernetes release
// binaries are off unless it names a site, so that no unit test reaches
// the network.
func env(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		if k == EnvReleases {
			return ReleasesOff
		}
		return ""
	}
}

func TestOverride(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "etcd")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		binary   string
		env      map[string]string
		wantPath string
		wantOK   bool
		wantErr  string
	}{
		{name: "unset", binary: Etcd, env: nil},
		{name: "set", binary: Etcd, env: map[string]string{EnvEtcd: exe}, wantPath: exe, wantOK: true},
		{name: "other binary's variable", binary: KubeAPIServer, env: map[string]string{EnvEtcd: exe}},
		{name: "apiserver", binary: KubeAPIServer, env: map[string]string{EnvKubeAPIServer: exe}, wantPath: exe, wantOK: true},
		{name: "controller-manager", binary: KubeControllerManager, env: map[string]string{EnvKubeControllerManager: exe}, wantPath: exe, wantOK: true},
		{name: "missing file", binary: KubeAPIServer, env: map[string]string{EnvKubeAPIServer: filepath.Join(dir, "nope")}, wantOK: true, wantErr: EnvKubeAPIServer},
		{name: "directory", binary: KubeControllerManager, env: map[string]string{EnvKubeControllerManager: dir}, wantOK: true, wantErr: EnvKubeControllerManager},
		{name: "not executable", binary: Etcd, env: map[string]string{EnvEtcd: plain}, wantOK: true, wantErr: EnvEtcd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, ok, err := override(tt.binary, env(tt.env))
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if path != tt.wantPath {
				t.Errorf("path = %q, want %q", path, tt.wantPath)
			}
		})
	}
}

func TestEnsureUsesOverrideWithoutBuilding(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "kube-apiserver")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := Ensure(context.Background(), Request{
		Name:    KubeAPIServer,
		Version: "v1.37.2",
		Getenv:  env(map[string]string{EnvKubeAPIServer: exe, EnvCacheDir: filepath.Join(dir, "cache")}),
		Go:      filepath.Join(dir, "no-go-here"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if path != exe {
		t.Errorf("path = %q, want %q", path, exe)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache")); !os.IsNotExist(err) {
		t.Errorf("the cache was touched: %v", err)
	}

	_, err = Ensure(context.Background(), Request{
		Name:    KubeAPIServer,
		Version: "v1.37.2",
		Getenv:  env(map[string]string{EnvKubeAPIServer: filepath.Join(dir, "missing")}),
	})
	if err == nil || !strings.Contains(err.Error(), EnvKubeAPIServer) {
		t.Errorf("error = %v, want one naming %s", err, EnvKubeAPIServer)
	}
}

func TestCacheRoot(t *testing.T) {
	t.Run("override", func(t *testing.T) {
		got, err := CacheRoot(env(map[string]string{EnvCacheDir: "/var/cache/ccm"}))
		if err != nil || got != "/var/cache/ccm" {
			t.Errorf("CacheRoot = %q, %v; want /var/cache/ccm", got, err)
		}
	})
	t.Run("relative override is made absolute", func(t *testing.T) {
		got, err := CacheRoot(env(map[string]string{EnvCacheDir: "rel"}))
		wd, _ := os.Getwd()
		if err != nil || got != filepath.Join(wd, "rel") {
			t.Errorf("CacheRoot = %q, %v; want %s", got, err, filepath.Join(wd, "rel"))
		}
	})
	t.Run("default", func(t *testing.T) {
		xdg := t.TempDir()
		t.Setenv("XDG_CACHE_HOME", xdg)
		got, err := CacheRoot(env(nil))
		if err != nil || got != filepath.Join(xdg, "ccm-conformance") {
			t.Errorf("CacheRoot = %q, %v; want %s", got, err, filepath.Join(xdg, "ccm-conformance"))
		}
	})
}

func TestBinaryPath(t *testing.T) {
	tests := []struct {
		name, binary, version string
		want                  string
		wantErr               string
	}{
		{name: "apiserver", binary: KubeAPIServer, version: "v1.37.2", want: "/c/bin/kubernetes-v1.37.2/kube-apiserver"},
		{name: "controller-manager", binary: KubeControllerManager, version: "v1.37.2", want: "/c/bin/kubernetes-v1.37.2/kube-controller-manager"},
		{name: "pre-release", binary: KubeAPIServer, version: "v1.38.0-alpha.1", want: "/c/bin/kubernetes-v1.38.0-alpha.1/kube-apiserver"},
		{name: "etcd", binary: Etcd, version: "v3.6.16", want: "/c/bin/etcd-v3.6.16/etcd"},
		{name: "no v", binary: KubeAPIServer, version: "1.37.2", wantErr: "Kubernetes version"},
		{name: "path in version", binary: KubeAPIServer, version: "v1.37.2/../../x", wantErr: "Kubernetes version"},
		{name: "etcd v2", binary: Etcd, version: "v2.3.8", wantErr: "etcd version"},
		{name: "kubelet", binary: Kubelet, version: "v1.37.2", want: "/c/bin/kubernetes-v1.37.2/kubelet"},
		{name: "kubeadm", binary: Kubeadm, version: "v1.37.2", want: "/c/bin/kubernetes-v1.37.2/kubeadm"},
		{name: "unknown", binary: "kube-frobnicator", version: "v1.37.2", wantErr: "unknown binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BinaryPath("/c", tt.binary, tt.version)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("BinaryPath = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestEnsureRejectsBadRequests(t *testing.T) {
	tests := []struct {
		name    string
		req     Request
		wantErr string
	}{
		{name: "no name", req: Request{Version: "v1.37.2"}, wantErr: "unknown binary"},
		{name: "unknown name", req: Request{Name: "kube-frobnicator", Version: "v1.37.2"}, wantErr: "unknown binary"},
		{name: "kubelet without a version", req: Request{Name: Kubelet}, wantErr: "Kubernetes version"},
		{name: "no kubernetes version", req: Request{Name: KubeAPIServer}, wantErr: "Kubernetes version"},
		{name: "etcd given a kubernetes version", req: Request{Name: Etcd, Version: "v1.37.2"}, wantErr: "etcd version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.CacheDir = t.TempDir()
			tt.req.Getenv = env(nil)
			_, err := Ensure(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
