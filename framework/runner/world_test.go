package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// recordingBackend keeps what the world asked of it and makes no cluster.
type recordingBackend struct{ got *cluster.StartInput }

func (recordingBackend) Name() string         { return "test" }
func (recordingBackend) SimulatesNodes() bool { return false }
func (b recordingBackend) Start(_ context.Context, in cluster.StartInput) (cluster.Cluster, error) {
	*b.got = in
	return nil, errors.New("no cluster here")
}

// The Kubernetes release of the cluster reaches the backend in its start
// input: the run's flag over the profile's cluster.kubernetesVersion.
func TestStartClusterPassesTheKubernetesVersion(t *testing.T) {
	for _, tt := range []struct{ flag, profile, want string }{
		{"", "", ""},
		{"", "v1.36.1", "v1.36.1"},
		{"v1.35.4", "v1.36.1", "v1.35.4"},
		{"v1.35.4", "", "v1.35.4"},
	} {
		var got cluster.StartInput
		p := &profile.Profile{Cluster: profile.Cluster{KubernetesVersion: tt.profile, Nodes: 2, IPFamilies: []string{"IPv4"}}}
		w := &world{profile: p, backend: recordingBackend{&got}, kubernetesVersion: tt.flag, out: io.Discard}
		if err := w.startCluster(context.Background()); err == nil {
			t.Fatal("the backend failed, the world did not")
		}
		if got.KubernetesVersion != tt.want || got.Nodes != 2 {
			t.Errorf("flag %q, profile %q: backend got version %q (nodes %d), want %q", tt.flag, tt.profile, got.KubernetesVersion, got.Nodes, tt.want)
		}
	}
}

func TestNoteVersionIgnored(t *testing.T) {
	var out bytes.Buffer
	cluster.NoteVersionIgnored(cluster.StartInput{Progress: &out})
	if out.Len() != 0 {
		t.Errorf("no version asked, yet: %s", out.String())
	}
	cluster.NoteVersionIgnored(cluster.StartInput{KubernetesVersion: "v1.36.1", Progress: &out})
	if !strings.Contains(out.String(), "Kubernetes v1.36.1 (cluster.kubernetesVersion) is ignored") {
		t.Errorf("note: %q", out.String())
	}
}

// existingCluster is a cluster that loads no images: one given by
// --kubeconfig.
type existingCluster struct{ cluster.Cluster }

// On a cluster that loads no images the echo server image is the one
// named, used as it is (the cluster pulls it or has it), and none when
// none is named: the data path specs on real pods then skip. The default
// image, which only make images builds on this machine, is for clusters
// that load images.
func TestGiveEchoImageToAnExistingCluster(t *testing.T) {
	for _, tt := range []struct{ named, want string }{
		{"", ""},
		{"registry.example/echo-server:v1", "registry.example/echo-server:v1"},
	} {
		var out bytes.Buffer
		w := &world{cluster: existingCluster{}, echoRef: tt.named, log: Options{Out: &out}.logger()}
		if err := w.giveEchoImage(context.Background()); err != nil {
			t.Fatal(err)
		}
		if w.echoImage != tt.want {
			t.Errorf("--echo-image %q: the specs get %q, want %q", tt.named, w.echoImage, tt.want)
		}
		if said := strings.Contains(out.String(), tt.named+" as the cluster's own pods"); said != (tt.named != "") {
			t.Errorf("--echo-image %q: the log says %q", tt.named, out.String())
		}
	}
}
