package blocking

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
		{"not labelled", []string{"LoadBalancer"}, Local, false, ""},
		{"labelled, no needs, local", []string{"LoadBalancer", Label}, Local, true, ""},
		{"labelled, no needs, an existing cluster", []string{"LoadBalancer", Label}, Kubeconfig, true, ""},
		{"simulated nodes on local", []string{Label, string(SimulatedNodes)}, Local, true, ""},
		{"simulated nodes on kind", []string{Label, string(SimulatedNodes)}, Kind, false, "needs simulated nodes, which the kind backend does not have"},
		{"a simulated cloud on kind", []string{Label, string(SimulatedCloud)}, Kind, true, ""},
		{"a simulated cloud on an existing cluster", []string{Label, string(SimulatedCloud)}, Kubeconfig, false, "needs a simulated cloud, which the kubeconfig backend"},
		{"both needs on an existing cluster", []string{Label, string(SimulatedNodes), string(SimulatedCloud)}, Kubeconfig, false, "needs simulated nodes and a simulated cloud"},
		{"needs, but the backend is not recorded", []string{Label, string(SimulatedNodes)}, "", true, ""},
		{"needs, on a backend the table does not know", []string{Label, string(SimulatedNodes)}, "mystery", true, ""},
		{"a need without the label blocks nothing", []string{string(SimulatedNodes)}, Local, false, ""},
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
		if !n.Known() || !n.MetOn(Local) {
			t.Errorf("need %s: known %v, met on local %v", n, n.Known(), n.MetOn(Local))
		}
	}
}
