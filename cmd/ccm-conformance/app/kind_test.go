package app

import "testing"

func TestChooseBackendKind(t *testing.T) {
	b, err := chooseBackend("kind", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "kind" || b.SimulatesNodes() {
		t.Errorf("--backend kind gave %s (simulates nodes: %v)", b.Name(), b.SimulatesNodes())
	}
	if b, err := chooseBackend("local", "", ""); err != nil || b.Name() != "local" {
		t.Errorf("--backend local: %v %v", b, err)
	}
	for _, bad := range [][3]string{{"kind", "kubeconfig", ""}, {"kind", "", "dir"}, {"kubeadm", "", ""}} {
		if _, err := chooseBackend(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("--backend %s --kubeconfig %q --cluster-dir %q accepted", bad[0], bad[1], bad[2])
		}
	}
}
