// Package testbin serves the tests that run the project's executables as
// processes (the harness, the kubetest2 tester, the reference provider):
// it builds them once per test binary from this checkout, and writes copies
// of the reference profile that point at them.
//
// Floor: test support, for the project's own tests only; it may stand on
// any floor below the commands.
package testbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/internal/checkout"
	"github.com/ccm-conformance/ccm-conformance/internal/images"
)

// ReferenceProvider are the packages of the reference provider's binaries.
var ReferenceProvider = []string{
	"./providers/reference/cmd/reference-ccm",
	"./providers/reference/cmd/reference-cloud",
	"./providers/reference/cmd/reference-cloud-driver",
	"./providers/reference/cmd/reference-node-manager",
}

// VSphereProvider are the packages of the vSphere provider's simulator and
// driver (the CCM itself is built from its module into the binary cache).
var VSphereProvider = []string{
	"./providers/vsphere/cmd/vsphere-cloud",
	"./providers/vsphere/cmd/vsphere-cloud-driver",
}

// AWSProvider are the packages of the AWS provider's emulator and driver
// (the CCM itself is built from its module into the binary cache).
var AWSProvider = []string{
	"./providers/aws/cmd/aws-cloud",
	"./providers/aws/cmd/aws-cloud-driver",
}

// AWSProfile writes a copy of providers/profiles/aws.yaml into dir whose
// bin/ paths point into binDir, mutate (if not nil) applied to the text,
// and returns its path.
func AWSProfile(t testing.TB, dir, binDir string, mutate func(string) string) string {
	t.Helper()
	return writeProfile(t, "aws.yaml", dir, binDir, nil, mutate)
}

// AWSNLBProfile is AWSProfile for providers/profiles/aws-nlb.yaml: the
// AWS CCM with every LoadBalancer Service annotated for a Network Load
// Balancer.
func AWSNLBProfile(t testing.TB, dir, binDir string, mutate func(string) string) string {
	t.Helper()
	return writeProfile(t, "aws-nlb.yaml", dir, binDir, nil, mutate)
}

// AWSNLBManagedProfile is AWSProfile for
// providers/profiles/aws-nlb-managed.yaml: Network Load Balancers with
// security groups of their own (NLBSecurityGroupMode = Managed).
func AWSNLBManagedProfile(t testing.TB, dir, binDir string, mutate func(string) string) string {
	t.Helper()
	return writeProfile(t, "aws-nlb-managed.yaml", dir, binDir, nil, mutate)
}

// VSphereProfile writes a copy of providers/profiles/vsphere.yaml into dir
// whose bin/ paths point into binDir, mutate (if not nil) applied to the
// text, and returns its path.
func VSphereProfile(t testing.TB, dir, binDir string, mutate func(string) string) string {
	t.Helper()
	return writeProfile(t, "vsphere.yaml", dir, binDir, nil, mutate)
}

// RepoRoot is the checkout this package is part of (see package checkout).
func RepoRoot() string { return checkout.MustRoot() }

// Main is a TestMain body: it builds pkgs (paths relative to the repository
// root) into a new temporary directory, stores its path in *dir, runs the
// tests, removes the directory, and returns the exit code for os.Exit.
func Main(m *testing.M, dir *string, pkgs ...string) int {
	d, err := os.MkdirTemp("", "ccm-conformance-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(d)
	// One go command: it links the binaries side by side, each named after
	// its package's directory.
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-o", d + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = RepoRoot()
	// The checkout's go.work, whatever GOWORK says: the providers' packages
	// are in a module of their own (providers/go.mod).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK="+filepath.Join(cmd.Dir, "go.work"))
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n%s", strings.Join(pkgs, " "), err, out)
		return 2
	}
	*dir = d
	defer stopSharedCluster()
	defer removeSharedImages()
	return m.Run()
}

// The local clusters the tests of one test binary share: SharedCluster is
// the first of them, EachOnSharedClusters uses the others too.
var shared struct {
	mu       sync.Mutex
	clusters []*local.Cluster
}

// SharedCluster returns the directory of a local cluster that every test
// of this test binary may run the harness on (`run --cluster-dir DIR`), one
// run at a time: starting a cluster per run would cost seconds each. It is
// started on first use and stopped when Main ends; its components die with
// the test binary.
func SharedCluster(t testing.TB) string {
	t.Helper()
	return sharedCluster(t, 0)
}

// sharedCluster returns the i-th shared cluster, starting it (and any
// before it) on first use.
func sharedCluster(t testing.TB, i int) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for len(shared.clusters) <= i {
		dir, err := os.MkdirTemp("/tmp", "ccmc-cluster-")
		if err != nil {
			t.Fatalf("starting shared local cluster %d: %v", len(shared.clusters), err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		c, err := local.Start(ctx, local.Options{Dir: dir, Progress: os.Stderr})
		cancel()
		if err != nil {
			os.RemoveAll(dir)
			t.Fatalf("starting shared local cluster %d: %v", len(shared.clusters), err)
		}
		shared.clusters = append(shared.clusters, c)
	}
	return shared.clusters[i].Dir()
}

// EachOnSharedClusters runs run for every case as a subtest of t, on up to
// n shared clusters at once: each subtest has a cluster to itself for as
// long as it runs, and gets it as clusterDir. The harness runs of defect
// and mutant tables mostly wait (a failing spec sits out its timeout), so
// running a few side by side shortens the tables without crowding two
// cores. It returns when every subtest has ended.
func EachOnSharedClusters[T any](t *testing.T, n int, cases []T, name func(T) string, run func(t *testing.T, c T, clusterDir string)) {
	t.Helper()
	free := make(chan string, n)
	for i := range n {
		free <- sharedCluster(t, i)
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		dir := <-free
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { free <- dir }()
			t.Run(name(c), func(t *testing.T) { run(t, c, dir) })
		}()
	}
	wg.Wait()
}

func stopSharedCluster() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, c := range shared.clusters {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := c.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "stopping shared local cluster %s: %v\n", c.Dir(), err)
		}
		cancel()
		os.RemoveAll(c.Dir())
	}
	shared.clusters = nil
}

// ReferenceProfile writes a copy of the reference profile into dir as
// profile.yaml, with its binaries taken from binDir, extraCCMArgs appended
// to the CCM's args, and mutate (if not nil) applied to the text. It
// returns the copy's path.
func ReferenceProfile(t testing.TB, dir, binDir string, extraCCMArgs []string, mutate func(string) string) string {
	t.Helper()
	return writeProfile(t, "reference.yaml", dir, binDir, extraCCMArgs, mutate)
}

// ReferenceImageProfile is ReferenceProfile for reference-image.yaml, the
// reference CCM run from an image: image replaces its ccm.image.reference.
func ReferenceImageProfile(t testing.TB, dir, binDir, image string, extraCCMArgs []string, mutate func(string) string) string {
	t.Helper()
	return imageProfile(t, "reference-image.yaml", dir, binDir, image, extraCCMArgs, mutate)
}

// ReferenceKindProfile is ReferenceProfile for reference-kind.yaml, the
// reference CCM image deployed on kind: image replaces its
// ccm.image.reference.
func ReferenceKindProfile(t testing.TB, dir, binDir, image string, extraCCMArgs []string, mutate func(string) string) string {
	t.Helper()
	return imageProfile(t, "reference-kind.yaml", dir, binDir, image, extraCCMArgs, mutate)
}

// ReferenceNodeManagerProfile is ReferenceProfile for
// reference-node-manager.yaml, the reference CCM without its node
// controller and a reference-node-manager beside each node:
// extraNodeManagerArgs are added to the node manager's args.
func ReferenceNodeManagerProfile(t testing.TB, dir, binDir string, extraNodeManagerArgs []string, mutate func(string) string) string {
	t.Helper()
	return writeProfile(t, "reference-node-manager.yaml", dir, binDir, nil, func(s string) string {
		anchor := "    path: " + binDir + "/reference-node-manager\n    args:\n"
		if !strings.Contains(s, anchor) {
			t.Fatalf("reference-node-manager.yaml has no node manager args to add to (%q)", anchor)
		}
		s = addArgs(s, anchor, extraNodeManagerArgs)
		if mutate != nil {
			s = mutate(s)
		}
		return s
	})
}

// ReferenceKindNodeManagerProfile is ReferenceKindProfile for
// reference-kind-node-manager.yaml, with nodeManagerImage in place of its
// node manager's image and extraNodeManagerArgs added to its args.
func ReferenceKindNodeManagerProfile(t testing.TB, dir, binDir, image, nodeManagerImage string, extraNodeManagerArgs []string, mutate func(string) string) string {
	t.Helper()
	return imageProfile(t, "reference-kind-node-manager.yaml", dir, binDir, image, nil, func(s string) string {
		const anchor = "    image: ccm-conformance/reference-node-manager:latest\n    args:\n"
		if !strings.Contains(s, anchor) {
			t.Fatalf("reference-kind-node-manager.yaml has no node manager image and args to replace (%q)", anchor)
		}
		s = strings.Replace(s, anchor, "    image: "+nodeManagerImage+"\n    args:\n", 1)
		s = addArgs(s, "    image: "+nodeManagerImage+"\n    args:\n", extraNodeManagerArgs)
		if mutate != nil {
			s = mutate(s)
		}
		return s
	})
}

// imageProfile writes a profile of the tree that runs the reference CCM's
// image, with image in place of ccm.image.reference.
func imageProfile(t testing.TB, file, dir, binDir, image string, extraCCMArgs []string, mutate func(string) string) string {
	t.Helper()
	return writeProfile(t, file, dir, binDir, extraCCMArgs, func(s string) string {
		const line = "    reference: ccm-conformance/reference-ccm:latest\n"
		if !strings.Contains(s, line) {
			t.Fatalf("%s has no line %q to replace", file, line)
		}
		s = strings.Replace(s, line, "    reference: "+image+"\n", 1)
		if mutate != nil {
			s = mutate(s)
		}
		return s
	})
}

// addArgs puts args, as items of a YAML list of args, after the first
// anchor in text.
func addArgs(text, anchor string, args []string) string {
	var extra strings.Builder
	for _, a := range args {
		fmt.Fprintf(&extra, "      - %s\n", a)
	}
	return strings.Replace(text, anchor, anchor+extra.String(), 1)
}

func writeProfile(t testing.TB, file, dir, binDir string, extraCCMArgs []string, mutate func(string) string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "providers", "profiles", file))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "../../bin/", binDir+"/")
	// Files the reference provider ships stay where they are in the tree.
	text = strings.ReplaceAll(text, "../reference/", filepath.Join(RepoRoot(), "providers", "reference")+"/")
	text = strings.ReplaceAll(text, "../aws/", filepath.Join(RepoRoot(), "providers", "aws")+"/")
	text = addArgs(text, "      - --cloud-provider=reference\n", extraCCMArgs)
	if mutate != nil {
		text = mutate(text)
	}
	path := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ShortTempDir is a temporary directory with a short path: the reference
// cloud listens on a unix socket below TMPDIR, and socket paths are limited
// to 108 bytes, which t.TempDir's long names can exceed.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ccmc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Tail returns the last n lines of s, for failure messages.
func Tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FailFast shortens the reference profile's waits that a failing spec sits
// out, for runs that switch defects on: to about twice what the slowest of
// them takes with a correct CCM on the local cluster (docs/performance.md),
// so that a spec that must fail gives up in seconds, not after the
// profile's generous minute. Waits on node lifecycle include kube-
// controller-manager's grace period (5s). The load balancer waits are
// longer: the service controller has one worker, and under CI's load (every
// integration test at once on two cores) a correct CCM once took more than
// 6 s to apply a port change while the other lanes' Services queued before it.
func FailFast(profileText string) string {
	for name, value := range map[string]string{
		"nodeInitialize": "6s", "nodeAddressUpdate": "6s", "loadBalancerCreate": "10s", "loadBalancerUpdate": "10s",
		"loadBalancerDelete": "10s", "routeSync": "6s",
		"nodeDeletion": "15s", "nodeShutdown": "15s", "leaderMigrationHandover": "15s", "leftoversGone": "15s",
	} {
		re := regexp.MustCompile(`(?m)^(  ` + name + `: ).*$`)
		profileText = re.ReplaceAllString(profileText, "${1}"+value)
	}
	return profileText
}

// testImage is an image from this checkout that the tests of one test
// binary share (ReferenceCCMImage, EchoServerImage).
type testImage struct {
	once      sync.Once
	reference string
	id        string
	err       error
}

var (
	sharedImagesMu sync.Mutex
	sharedImages   = map[string]*testImage{}
)

// DockerAvailable says whether the local Docker engine answers, or why
// not.
func DockerAvailable() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker version: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ReferenceCCMImage builds the reference CCM's image from this checkout
// once per test binary, loads it into the local Docker engine under a tag
// of its own (never :latest, which is the developer's), and returns the
// reference and image ID. Main removes the tag at the end.
func ReferenceCCMImage(t testing.TB) (reference, id string) {
	t.Helper()
	return buildTestImage(t, images.ReferenceTargets(), "reference-ccm")
}

// ReferenceNodeManagerImage is ReferenceCCMImage for the reference node
// manager, run as a DaemonSet on kind.
func ReferenceNodeManagerImage(t testing.TB) (reference, id string) {
	t.Helper()
	return buildTestImage(t, images.ReferenceTargets(), "reference-node-manager")
}

// EchoServerImage is ReferenceCCMImage for the echo server, the backend
// pods of the data path specs on kind.
func EchoServerImage(t testing.TB) (reference, id string) {
	t.Helper()
	return buildTestImage(t, images.EchoServerTargets(), "echo-server")
}

func buildTestImage(t testing.TB, from []images.Target, name string) (reference, id string) {
	t.Helper()
	sharedImagesMu.Lock()
	img := sharedImages[name]
	if img == nil {
		img = &testImage{}
		sharedImages[name] = img
	}
	sharedImagesMu.Unlock()
	img.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		tag := fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().Unix())
		var targets []images.Target
		for _, target := range from {
			if target.Name == name {
				targets = append(targets, target)
			}
		}
		out, err := os.MkdirTemp("", "ccm-conformance-test-images-")
		if err != nil {
			img.err = err
			return
		}
		defer os.RemoveAll(out)
		built, err := images.Build(ctx, images.Options{
			RepoDir:  RepoRoot(),
			OutDir:   out,
			Tags:     []string{tag},
			Load:     true,
			Progress: os.Stderr,
			Targets:  targets,
		})
		if err != nil {
			img.err = err
			return
		}
		img.reference, img.id = built[0].Tags[0], built[0].ImageID
	})
	if img.err != nil {
		t.Fatalf("building the %s image: %v", name, img.err)
	}
	return img.reference, img.id
}

func removeSharedImages() {
	sharedImagesMu.Lock()
	defer sharedImagesMu.Unlock()
	for _, img := range sharedImages {
		if img.reference == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if out, err := exec.CommandContext(ctx, "docker", "rmi", img.reference).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "removing the test image %s: %v: %s\n", img.reference, err, out)
		}
		cancel()
	}
}

// ContainersLabelled lists the containers, running or not, that carry
// label=value.
func ContainersLabelled(t testing.TB, label, value string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "--all", "--filter", "label="+label+"="+value, "--format", "{{.Names}} ({{.Status}})").CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v: %s", err, out)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" {
			names = append(names, line)
		}
	}
	return names
}
