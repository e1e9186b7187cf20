package runner

import (
	"context"
	"testing"

	"k8s.io/client-go/rest"

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
