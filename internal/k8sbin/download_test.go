package k8sbin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// releaseSite serves Kubernetes release binaries as dl.k8s.io lays them
// out: each a shell script that prints "released NAME", with its .sha256;
// corrupt names a binary whose .sha256 does not match.
func releaseSite(t *testing.T, version string, corrupt string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for _, n := range downloadable {
		body := "#!/bin/sh\necho released " + n + "\n"
		sum := sha256.Sum256([]byte(body))
		hexSum := hex.EncodeToString(sum[:])
		if n == corrupt {
			hexSum = strings.Repeat("0", 64)
		}
		path := "/" + version + "/bin/linux/" + runtime.GOARCH + "/" + n
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
		mux.HandleFunc(path+".sha256", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(hexSum)) })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// The choice: where the release site answers, its binaries fill the cache
// (checked against their sums) and nothing is built; the build info says
// where each came from. Binaries it does not publish (agnhost) are built.
func TestReleaseBinariesAreDownloaded(t *testing.T) {
	site := releaseSite(t, "v1.37.2", "")
	goPath, logPath := fakeGo(t, false)
	cache := t.TempDir()
	var progress syncBuffer
	req := Request{Version: "v1.37.2", CacheDir: cache, Progress: &progress, Getenv: env(map[string]string{EnvReleases: site.URL}), Go: goPath}
	paths, err := EnsureAll(context.Background(), req, KubeAPIServer, KubeControllerManager, Agnhost)
	if err != nil {
		t.Fatalf("EnsureAll: %v\nprogress:\n%s", err, progress.String())
	}
	for _, n := range []string{KubeAPIServer, KubeControllerManager} {
		if out, err := exec.Command(paths[n]).Output(); err != nil || string(out) != "released "+n+"\n" {
			t.Errorf("%s ran with %q, %v; want the released binary", n, out, err)
		}
		bi, err := ReadBuildInfo(paths[n])
		if err != nil {
			t.Fatal(err)
		}
		if want := site.URL + "/v1.37.2/bin/linux/" + runtime.GOARCH + "/" + n; bi.Source != want || len(bi.SHA256) != 64 || !strings.HasPrefix(bi.How(), "downloaded from "+want) {
			t.Errorf("%s build info %+v, want source %s", n, bi, want)
		}
		if !strings.Contains(progress.String(), n+" v1.37.2: downloaded from "+site.URL) {
			t.Errorf("progress does not say %s was downloaded:\n%s", n, progress.String())
		}
	}
	if out, err := exec.Command(paths[Agnhost]).Output(); err != nil || !strings.HasPrefix(string(out), "built") {
		t.Errorf("agnhost ran with %q, %v; want it built", out, err)
	}
	log, _ := os.ReadFile(logPath)
	if strings.Contains(string(log), "kube-apiserver") {
		t.Errorf("the go command built a binary the site published:\n%s", log)
	}
}

// The fallback: a site that cannot be reached (a closed port, a release it
// does not have) means building, with one line saying so.
func TestUnreachableReleasesFallBackToBuilding(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	for name, site := range map[string]string{
		"a closed port":        closedURL,
		"a release not served": releaseSite(t, "v1.36.0", "").URL,
	} {
		t.Run(name, func(t *testing.T) {
			goPath, _ := fakeGo(t, false)
			var progress syncBuffer
			req := Request{Name: KubeAPIServer, Version: "v1.37.2", CacheDir: t.TempDir(), Progress: &progress, Getenv: env(map[string]string{EnvReleases: site}), Go: goPath}
			path, err := Ensure(context.Background(), req)
			if err != nil {
				t.Fatalf("Ensure: %v\nprogress:\n%s", err, progress.String())
			}
			if out, err := exec.Command(path).Output(); err != nil || !strings.HasPrefix(string(out), "built") {
				t.Errorf("kube-apiserver ran with %q, %v; want it built", out, err)
			}
			if !strings.Contains(progress.String(), "Kubernetes release binaries: "+site+" cannot be reached") || !strings.Contains(progress.String(), "building from the Go module proxy instead") {
				t.Errorf("progress does not say why it built:\n%s", progress.String())
			}
			if bi, err := ReadBuildInfo(path); err == nil && bi.Source != "" {
				t.Errorf("a built binary's build info names a source: %+v", bi)
			}
		})
	}
}

// A binary whose sum does not match is an error, and nothing is cached:
// never a silent build over a tampered download.
func TestReleaseChecksumMismatchIsAnError(t *testing.T) {
	site := releaseSite(t, "v1.37.2", KubeAPIServer)
	goPath, _ := fakeGo(t, false)
	cache := t.TempDir()
	req := Request{Name: KubeAPIServer, Version: "v1.37.2", CacheDir: cache, Getenv: env(map[string]string{EnvReleases: site.URL}), Go: goPath}
	_, err := Ensure(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("Ensure error %v, want a checksum mismatch", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "bin", "kubernetes-v1.37.2", KubeAPIServer)); !os.IsNotExist(err) {
		t.Errorf("the mismatched binary is in the cache: %v", err)
	}
}

func TestReleasesBase(t *testing.T) {
	for _, tt := range []struct {
		req  Request
		want string
	}{
		{Request{Getenv: func(string) string { return "" }}, DefaultReleases},
		{Request{Getenv: env(map[string]string{EnvReleases: "https://mirror.example/k8s/"})}, "https://mirror.example/k8s"},
		{Request{Releases: "https://other.example", Getenv: env(map[string]string{EnvReleases: "off"})}, "https://other.example"},
		{Request{Getenv: env(nil)}, ""},
	} {
		if got := releasesBase(tt.req); got != tt.want {
			t.Errorf("releasesBase(%+v) = %q, want %q", tt.req.Releases, got, tt.want)
		}
	}
}
