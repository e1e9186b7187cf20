package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

type plainCluster struct{}

func (plainCluster) Backend() string                { return "test" }
func (plainCluster) Kubeconfig() string             { return "kubeconfig" }
func (plainCluster) RESTConfig() *rest.Config       { return &rest.Config{} }
func (plainCluster) Stop(ctx context.Context) error { return nil }

type loadingCluster struct{ plainCluster }

func (loadingCluster) LoadImage(context.Context, string) error { return nil }

// The CCM's mode is chosen once, from the profile and the cluster; each
// launcher has exactly the optional capabilities its mode can give.
func TestChooseCCM(t *testing.T) {
	binary := profile.CCM{Binary: &profile.BinaryCCM{Path: "ccm"}}
	image := profile.CCM{Image: &profile.ImageCCM{Reference: "ccm:v1"}}
	deployed := profile.CCM{Deployed: &profile.DeployedCCM{LabelSelector: "app=ccm"}}
	staticPod := profile.CCM{Image: &profile.ImageCCM{Reference: "ccm:v1", Placement: profile.PlacementStaticPod}}
	for _, tt := range []struct {
		name          string
		ccm           profile.CCM
		loadsImages   bool
		want          string
		wantInstances bool
		wantAwaiting  bool
	}{
		{"binary", binary, false, "binary", true, false},
		{"binary on a cluster that loads images", binary, true, "binary", true, false},
		{"image beside the cluster", image, false, "container", true, false},
		{"image deployed into the cluster", image, true, "deployment", false, true},
		{"image as a static pod", staticPod, true, "static pod", false, true},
		{"already deployed", deployed, false, "deployed", false, false},
		{"already deployed, on a cluster that loads images", deployed, true, "deployed", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &world{profile: &profile.Profile{CCM: tt.ccm}, cluster: plainCluster{}}
			if tt.loadsImages {
				w.cluster = loadingCluster{}
			}
			l := chooseCCM(w)
			var got string
			switch l := l.(type) {
			case *processCCM:
				switch l.starter.(type) {
				case binaryCCM:
					got = "binary"
				case containerCCM:
					got = "container"
				}
			case *deploymentCCM:
				got = "deployment"
			case *deployedCCM:
				got = "deployed"
			case *staticPodCCM:
				got = "static pod"
			}
			if got != tt.want {
				t.Errorf("launcher %T (%s), want %s", l, got, tt.want)
			}
			if _, ok := l.(ccmInstanceLauncher); ok != tt.wantInstances {
				t.Errorf("starts extra instances: %v, want %v", ok, tt.wantInstances)
			}
			if _, ok := l.(ccmNodeWatcher); ok != tt.wantAwaiting {
				t.Errorf("records the nodes awaiting the CCM: %v, want %v", ok, tt.wantAwaiting)
			}
		})
	}
}

// The main CCM tells a process that ended on its own from one a spec
// stopped, and a restarted one runs again.
func TestMainCCMEndedOnItsOwn(t *testing.T) {
	dir := t.TempDir()
	start := func(path string) *ccm.Process {
		p, err := ccm.StartBinary(ccm.BinaryOptions{Path: path, Kubeconfig: "kubeconfig", LogPath: filepath.Join(dir, "ccm.log")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		return p
	}
	m := &mainCCM{current: start("/bin/false")}
	deadline := time.Now().Add(time.Minute)
	for !m.get().Exited() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := m.EndedOnItsOwn(); err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("a CCM that exited: EndedOnItsOwn() = %v, want its exit status", err)
	}
	sleeper := filepath.Join(dir, "sleeper")
	if err := os.WriteFile(sleeper, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m.set(start(sleeper))
	time.Sleep(100 * time.Millisecond)
	if err := m.EndedOnItsOwn(); err != nil {
		t.Errorf("a running CCM: EndedOnItsOwn() = %v", err)
	}
	if err := m.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.EndedOnItsOwn(); err != nil {
		t.Errorf("a CCM a spec stopped: EndedOnItsOwn() = %v", err)
	}
}

// A CCM image as a static pod runs only where the harness makes the
// cluster and can write on its control-plane node: kind.
func TestCheckCCMOnBackendStaticPod(t *testing.T) {
	p := &profile.Profile{Path: "p.yaml", CCM: profile.CCM{Image: &profile.ImageCCM{Reference: "ccm:v1", Placement: profile.PlacementStaticPod}}}
	for _, tt := range []struct {
		backend        string
		simulatesNodes bool
		refused        bool
	}{
		{"local", true, true},
		{"kubeconfig", false, true},
		{"kind", false, false},
	} {
		err := checkCCMOnBackend(p, tt.backend, tt.simulatesNodes)
		if (err != nil) != tt.refused {
			t.Errorf("on %s: %v, want refused %v", tt.backend, err, tt.refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "ccm.image.placement staticPod") || !strings.Contains(err.Error(), "not "+tt.backend)) {
			t.Errorf("on %s: %v does not name the field and the backend", tt.backend, err)
		}
	}
}
