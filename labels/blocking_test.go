package labels

import (
	"strings"
	"testing"
)

func TestBlocks(t *testing.T) {
	tests := []struct {
		name    string
		labels  []string
		backend string
		want    bool
		why     string
	}{
		{"not labelled", []string{"LoadBalancer"}, BackendLocal, false, ""},
		{"labelled, no needs, local", []string{"LoadBalancer", ReleaseBlocking}, BackendLocal, true, ""},
		{"labelled, no needs, an existing cluster", []string{"LoadBalancer", ReleaseBlocking}, BackendKubeconfig, true, ""},
		{"simulated nodes on local", []string{ReleaseBlocking, string(SimulatedNodes)}, BackendLocal, true, ""},
		{"simulated nodes on kind", []string{ReleaseBlocking, string(SimulatedNodes)}, BackendKind, false, "needs simulated nodes, which the kind backend does not have"},
		{"a simulated cloud on kind", []string{ReleaseBlocking, string(SimulatedCloud)}, BackendKind, true, ""},
		{"a simulated cloud on an existing cluster", []string{ReleaseBlocking, string(SimulatedCloud)}, BackendKubeconfig, false, "needs a simulated cloud, which the kubeconfig backend"},
		{"both needs on an existing cluster", []string{ReleaseBlocking, string(SimulatedNodes), string(SimulatedCloud)}, BackendKubeconfig, false, "needs simulated nodes and a simulated cloud"},
		{"needs, but the backend is not recorded", []string{ReleaseBlocking, string(SimulatedNodes)}, "", true, ""},
		{"needs, on a backend the table does not know", []string{ReleaseBlocking, string(SimulatedNodes)}, "mystery", true, ""},
		{"a need without the label blocks nothing", []string{string(SimulatedNodes)}, BackendLocal, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Blocks(tt.labels, tt.backend)
			if got != tt.want || !strings.Contains(why, tt.why) || (tt.why == "" && why != "") {
				t.Errorf("Blocks(%v, %q) = %v, %q; want %v, %q", tt.labels, tt.backend, got, why, tt.want, tt.why)
			}
		})
	}
}

// Every need is met somewhere, and the local backend, where the project's
// own runs go, meets them all: a need no backend meets would make its
// specs block nowhere.
func TestEveryNeedIsMetOnTheLocalBackend(t *testing.T) {
	for _, n := range Needs {
		if !n.Known() || !n.MetOn(BackendLocal) {
			t.Errorf("need %s: known %v, met on local %v", n, n.Known(), n.MetOn(BackendLocal))
		}
	}
}
