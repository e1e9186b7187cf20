package k8sbin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Kubernetes publishes every release's binaries (and a .sha256 beside
// each) at RELEASES/vX.Y.Z/bin/linux/ARCH/NAME. Where that can be reached,
// fetching them takes seconds where a build takes minutes; where it cannot
// (machines that reach only the Go module proxy), the cache is filled by
// building, as before. Request.Releases chooses.
const (
	// DefaultReleases is where Kubernetes publishes its release binaries.
	DefaultReleases = "https://dl.k8s.io/release"
	// EnvReleases overrides Request.Releases' default; ReleasesOff turns
	// downloads off, so every binary is built.
	EnvReleases = "CCM_CONFORMANCE_KUBERNETES_RELEASES"
	ReleasesOff = "off"
	// probeTimeout bounds the first request to the release site: an
	// unreachable site must not hold a run up for long before it builds.
	probeTimeout = 15 * time.Second
	// downloadTimeout bounds one binary's download.
	downloadTimeout = 10 * time.Minute
)

// downloadable are the binaries Kubernetes publishes per release (agnhost
// and the e2e test binary are built).
var downloadable = []string{KubeAPIServer, KubeControllerManager, KubeScheduler, KubeProxy, Kubelet, Kubeadm, Kubectl}

// releasesBase is req.Releases, else $CCM_CONFORMANCE_KUBERNETES_RELEASES,
// else DefaultReleases; "" when downloads are off.
func releasesBase(req Request) string {
	base := req.Releases
	if base == "" {
		base = req.Getenv(EnvReleases)
	}
	if base == "" {
		base = DefaultReleases
	}
	if base == ReleasesOff {
		return ""
	}
	return strings.TrimRight(base, "/")
}

// fetchReleases downloads the binaries among names that Kubernetes
// publishes, into paths, and returns the names still to build. The first
// failure to reach the site ends the attempt, with one line on Progress
// saying the binaries will be built instead; a checksum that does not
// match is an error, never a silent build.
func fetchReleases(ctx context.Context, req Request, paths map[string]string, names []string) ([]string, error) {
	base := releasesBase(req)
	if base == "" || req.Name == Etcd {
		return names, nil
	}
	var rest []string
	for i, n := range names {
		if !slices.Contains(downloadable, n) {
			rest = append(rest, n)
			continue
		}
		url := fmt.Sprintf("%s/%s/bin/linux/%s/%s", base, req.Version, runtime.GOARCH, n)
		start := time.Now()
		size, sum, err := download(ctx, url, paths[n])
		var unreachable *unreachableError
		if errors.As(err, &unreachable) {
			fmt.Fprintf(req.Progress, "Kubernetes release binaries: %s cannot be reached (%v); building from the Go module proxy instead\n", base, unreachable.err)
			for _, m := range names[i:] {
				if !slices.Contains(rest, m) {
					rest = append(rest, m)
				}
			}
			return rest, nil
		}
		if err != nil {
			return nil, fmt.Errorf("downloading %s %s: %w", n, req.Version, err)
		}
		bi := BuildInfo{Module: kubernetesModule, Version: req.Version, Source: url, SHA256: sum}
		if err := writeBuildInfo(paths[n], bi); err != nil {
			return nil, err
		}
		fmt.Fprintf(req.Progress, "%s %s: downloaded from %s (%.1f MB, sha256 checked) in %s\n", n, req.Version, url, float64(size)/1e6, time.Since(start).Round(100*time.Millisecond))
	}
	return rest, nil
}

// unreachableError is a failure to reach the release site at all (no
// connection, no DNS, a timeout, a 404 for the release): the cue to build.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }

// download fetches url and url.sha256 and writes the binary to dst,
// complete or not at all.
func download(ctx context.Context, url, dst string) (int64, string, error) {
	probe, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	want, err := get(probe, url+".sha256", 1<<10)
	if err != nil {
		return 0, "", &unreachableError{err}
	}
	fields := strings.Fields(string(want))
	if len(fields) == 0 || len(fields[0]) != 64 {
		return 0, "", fmt.Errorf("%s.sha256: %q is not a SHA-256 sum", url, strings.TrimSpace(string(want)))
	}
	ctx, cancel = context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(httpReq)
	if err != nil {
		return 0, "", &unreachableError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, "", &unreachableError{fmt.Errorf("GET %s: %s", url, resp.Status)}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".download-")
	if err != nil {
		return 0, "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(tmp, h), resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, "", fmt.Errorf("GET %s: %w", url, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if sum != fields[0] {
		return 0, "", fmt.Errorf("%s: sha256 %s, but %s.sha256 says %s", url, sum, url, fields[0])
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return 0, "", err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return 0, "", err
	}
	return size, sum, nil
}

// get reads a small document.
func get(ctx context.Context, url string, limit int64) ([]byte, error) {
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(httpReq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}
