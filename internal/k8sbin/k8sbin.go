// Package k8sbin provides Kubernetes binaries built from the Go module proxy:
// the control plane of the embedded local cluster (kube-apiserver and
// kube-controller-manager at a Kubernetes release, etcd at an etcd release),
// and what a kind node image holds besides (kubelet, kubeadm, kubectl,
// kube-scheduler, kube-proxy).
//
// A binary comes from one of two places. If its environment override
// (EnvKubeAPIServer, EnvKubeControllerManager, EnvEtcd) is set, that file is
// used as is. Otherwise it is built once from the Go module proxy and kept in a
// per-version cache:
//
//	<root>/bin/kubernetes-<version>/kube-apiserver (and the other Kubernetes binaries)
//	<root>/bin/etcd-<version>/etcd
//
// where <root> is $CCM_CONFORMANCE_CACHE, or os.UserCacheDir()/ccm-conformance.
// Builds of one binary are serialized by an flock on <name>.lock beside it, and
// a binary appears in the cache only by rename, complete; so parallel tests and
// concurrent processes share the cache safely.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package k8sbin

import (
	"context"
	"errors"
	"fmt"
	"github.com/ccm-conformance/ccm-conformance/kubeversion"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Names of the binaries Ensure and EnsureAll provide.
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	KubeProxy             = "kube-proxy"
	Kubelet               = "kubelet"
	Kubeadm               = "kubeadm"
	Kubectl               = "kubectl"
	Etcd                  = "etcd"

	// Agnhost is upstream's e2e test server and client
	// (k8s.io/kubernetes/test/images/agnhost), which upstream's e2e specs
	// run in their pods.
	Agnhost = "agnhost"
	// E2ELoadBalancers is an e2e test binary of upstream's
	// k8s.io/kubernetes/test/e2e/network specs, built to run their
	// "[sig-network] LoadBalancers" specs beside ccm-conformance's own
	// (e2etest.go; docs/performance.md).
	E2ELoadBalancers = "e2e-loadbalancers.test"
)

// kubernetesBinaries are the names built from k8s.io/kubernetes: the
// commands of cmd/<name>, agnhost, and the e2e test binary.
var kubernetesBinaries = []string{KubeAPIServer, KubeControllerManager, KubeScheduler, KubeProxy, Kubelet, Kubeadm, Kubectl, Agnhost, E2ELoadBalancers}

func isKubernetesBinary(name string) bool {
	for _, n := range kubernetesBinaries {
		if n == name {
			return true
		}
	}
	return false
}

// DefaultEtcdVersion is the etcd release built when a Request for Etcd names
// no version.
const DefaultEtcdVersion = "v3.6.16"

// Environment variables read by Ensure.
const (
	// EnvCacheDir overrides the cache root.
	EnvCacheDir = "CCM_CONFORMANCE_CACHE"
	// EnvKubeAPIServer names a pre-built kube-apiserver to use instead of building one.
	EnvKubeAPIServer = "CCM_CONFORMANCE_KUBE_APISERVER"
	// EnvKubeControllerManager names a pre-built kube-controller-manager.
	EnvKubeControllerManager = "CCM_CONFORMANCE_KUBE_CONTROLLER_MANAGER"
	// EnvEtcd names a pre-built etcd.
	EnvEtcd = "CCM_CONFORMANCE_ETCD"
)

// DefaultProgressInterval is how often a running build reports progress.
const DefaultProgressInterval = 10 * time.Second

// Request says which binary Ensure provides and how.
type Request struct {
	// Name is the binary: KubeAPIServer, KubeControllerManager or Etcd. Required.
	Name string

	// Version is a Kubernetes release such as "v1.37.2" for the Kubernetes
	// binaries (required), or an etcd v3 release such as "v3.6.16" for Etcd
	// (default DefaultEtcdVersion).
	Version string

	// CacheDir is the cache root. Default: $CCM_CONFORMANCE_CACHE if set,
	// else os.UserCacheDir()/ccm-conformance.
	CacheDir string

	// Progress receives human-readable lines while a binary is built or while
	// Ensure waits for another process's build. Default: discarded.
	Progress io.Writer

	// ProgressInterval is the least time between two progress lines of a
	// running build. Default: DefaultProgressInterval.
	ProgressInterval time.Duration

	// Getenv looks up the environment overrides. Default: os.Getenv.
	Getenv func(string) string

	// Go is the go command used to build. Default: "go" found in PATH.
	Go string

	// Releases is where Kubernetes publishes its release binaries
	// (download.go): a missing Kubernetes binary is downloaded from there
	// and checked against its published sha256, and built only when the
	// site cannot be reached. Default $CCM_CONFORMANCE_KUBERNETES_RELEASES,
	// else DefaultReleases; ReleasesOff always builds.
	Releases string
}

// Ensure returns the path of an executable for req, building it into the
// cache first if it is not there yet. A build honours ctx: cancelling it kills
// the go command and leaves the cache as it was.
func Ensure(ctx context.Context, req Request) (string, error) {
	paths, err := EnsureAll(ctx, req, req.Name)
	return paths[req.Name], err
}

// EnsureAll is Ensure for several binaries of one release (req.Version):
// it returns the path of each by name. The ones missing from the cache are
// built by a single go command, which compiles the packages they share
// once and links them side by side; one go command per binary would link
// each alone, with a core idle. req.Name is not used. Kubernetes binaries
// and etcd are different modules: names must not mix them.
func EnsureAll(ctx context.Context, req Request, names ...string) (map[string]string, error) {
	if len(names) == 0 {
		return nil, errors.New("no binary named")
	}
	var etcd int
	for _, n := range names {
		if n == Etcd {
			etcd++
		}
	}
	if etcd > 0 && len(names) > etcd {
		return nil, fmt.Errorf("binaries %s: etcd and the Kubernetes binaries come from different modules and releases; ask for them apart", strings.Join(names, ", "))
	}
	req.Name = names[0]
	req, err := withDefaults(req)
	if err != nil {
		return nil, err
	}
	root := req.CacheDir
	paths := map[string]string{}
	var missing []string
	for _, n := range names {
		if _, err := withDefaults(Request{Name: n, Version: req.Version}); err != nil {
			return nil, err
		}
		if path, ok, err := override(n, req.Getenv); ok || err != nil {
			if err != nil {
				return nil, err
			}
			paths[n] = path
			continue
		}
		if root == "" {
			if root, err = CacheRoot(req.Getenv); err != nil {
				return nil, err
			}
		}
		path, err := BinaryPath(root, n, req.Version)
		if err != nil {
			return nil, err
		}
		paths[n] = path
		if isFile(path) {
			// Cached before builds recorded their commit: record it now.
			one := req
			one.Name = n
			recordBuildInfo(ctx, one, path)
			continue
		}
		if !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return paths, nil
	}
	built, err := build(ctx, req, root, missing)
	maps.Copy(paths, built)
	if err != nil {
		return nil, err
	}
	return paths, nil
}

func withDefaults(req Request) (Request, error) {
	if req.Getenv == nil {
		req.Getenv = os.Getenv
	}
	if req.Progress == nil {
		req.Progress = io.Discard
	}
	if req.ProgressInterval <= 0 {
		req.ProgressInterval = DefaultProgressInterval
	}
	if req.Go == "" {
		req.Go = "go"
	}
	switch {
	case isKubernetesBinary(req.Name):
		if _, err := parseKubernetesVersion(req.Version); err != nil {
			return req, err
		}
	case req.Name == Etcd:
		if req.Version == "" {
			req.Version = DefaultEtcdVersion
		}
		if !etcdVersionRE.MatchString(req.Version) {
			return req, fmt.Errorf("etcd version %q: want an etcd v3 release such as %s", req.Version, DefaultEtcdVersion)
		}
	default:
		return req, unknownBinary(req.Name)
	}
	return req, nil
}

// EnvVar returns the environment variable that overrides the binary name, or
// "" for an unknown name.
func EnvVar(name string) string {
	switch name {
	case KubeAPIServer:
		return EnvKubeAPIServer
	case KubeControllerManager:
		return EnvKubeControllerManager
	case Etcd:
		return EnvEtcd
	}
	return ""
}

// override reports the pre-built binary named by the environment, if any.
func override(name string, getenv func(string) string) (string, bool, error) {
	env := EnvVar(name)
	value := getenv(env)
	if env == "" || value == "" {
		return "", false, nil
	}
	path, err := filepath.Abs(value)
	if err != nil {
		return "", true, fmt.Errorf("%s=%q: %w", env, value, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", true, fmt.Errorf("%s=%q: pre-built %s: %w", env, value, name, err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return "", true, fmt.Errorf("%s=%q: pre-built %s is not an executable file", env, value, name)
	}
	return path, true, nil
}

// CacheRoot returns the root of the binary cache: $CCM_CONFORMANCE_CACHE if
// set (through getenv; nil means os.Getenv), else
// os.UserCacheDir()/ccm-conformance.
func CacheRoot(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if dir := getenv(EnvCacheDir); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %w", EnvCacheDir, dir, err)
		}
		return abs, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locating the binary cache (set %s to choose one): %w", EnvCacheDir, err)
	}
	return filepath.Join(dir, "ccm-conformance"), nil
}

// BinaryPath returns where the cache under root keeps binary name at version.
func BinaryPath(root, name, version string) (string, error) {
	switch {
	case isKubernetesBinary(name):
		if _, err := parseKubernetesVersion(version); err != nil {
			return "", err
		}
		return filepath.Join(root, "bin", "kubernetes-"+version, name), nil
	case name == Etcd:
		if !etcdVersionRE.MatchString(version) {
			return "", fmt.Errorf("etcd version %q: want an etcd v3 release such as %s", version, DefaultEtcdVersion)
		}
		return filepath.Join(root, "bin", "etcd-"+version, name), nil
	}
	return "", unknownBinary(name)
}

func unknownBinary(name string) error {
	return fmt.Errorf("unknown binary %q: want one of %s or %s", name, strings.Join(kubernetesBinaries, ", "), Etcd)
}

var etcdVersionRE = regexp.MustCompile(`^v3\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// kubernetesVersion is a parsed Kubernetes release version.
type kubernetesVersion struct {
	full    string // v1.37.2
	major   string // 1
	minor   string // 37
	staging string // v0.37.2: the release of the staging modules
}

// parseKubernetesVersion reads v with the project's one version parser.
func parseKubernetesVersion(v string) (kubernetesVersion, error) {
	kv, err := kubeversion.Parse(v)
	if err != nil {
		return kubernetesVersion{}, err
	}
	return kubernetesVersion{
		full:    kv.String(),
		major:   strconv.Itoa(kv.Major),
		minor:   strconv.Itoa(kv.Minor),
		staging: kv.Staging(),
	}, nil
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// errNoStaging is returned when a k8s.io/kubernetes go.mod has no staging
// replacements, which means it is not the go.mod it should be.
var errNoStaging = errors.New("no ./staging replacements found")
