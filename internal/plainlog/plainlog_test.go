package plainlog

import (
	"bytes"
	"errors"
	"testing"
)

func TestLines(t *testing.T) {
	var out bytes.Buffer
	log := New(&out, "[ccm-conformance]", 1)
	log.Info("the CCM is ready")
	log.WithName("local-cluster").WithValues("dir", "/tmp/x").Info("Local cluster ready", "server", "https://127.0.0.1:6443")
	log.V(1).Info("Component ready", "component", "etcd", "elapsed", "1.2s")
	log.V(2).Info("not shown")
	log.WithName("nodes").WithName("kubelet").Error(errors.New("connection refused"), "heartbeat failed", "node", "ccm-node-1", "odd")
	log.Info("quoted", "value", "two words", "empty", "")
	want := `[ccm-conformance] the CCM is ready
[ccm-conformance] local-cluster: Local cluster ready dir=/tmp/x server=https://127.0.0.1:6443
[ccm-conformance] Component ready component=etcd elapsed=1.2s
[ccm-conformance] nodes/kubelet: heartbeat failed: connection refused node=ccm-node-1 odd=(missing)
[ccm-conformance] quoted value="two words" empty=""
`
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
