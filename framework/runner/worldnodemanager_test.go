package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// The node manager's command line: the profile's args expanded, then
// --node-name and --kubeconfig unless the args set them.
func TestNodeManagerCommand(t *testing.T) {
	p := &profile.Profile{Dir: "/profiles"}
	e := p.NewExpander(profile.ExpanderInput{RunDir: "/run/1", Kubeconfig: "/run/1/kubeconfig"})
	for _, tt := range []struct {
		name    string
		nm      profile.NodeManager
		want    []string
		wantEnv string
		wantErr string
	}{
		{
			name:    "flags added",
			nm:      profile.NodeManager{Path: "bin/nm", Args: []string{"--v=2", "--cloud-config=${RUN_DIR}/cloud.yaml"}, Env: map[string]string{"ENDPOINT": "unix://${RUN_DIR}/cloud.sock"}},
			want:    []string{"bin/nm", "--v=2", "--cloud-config=/run/1/cloud.yaml", "--node-name=ccm-node-1", "--kubeconfig=/k"},
			wantEnv: "ENDPOINT=unix:///run/1/cloud.sock",
		},
		{
			name: "a kubeconfig of the profile's kept",
			nm:   profile.NodeManager{Path: "/opt/nm", Args: []string{"--kubeconfig", "${KUBECONFIG}"}},
			want: []string{"/opt/nm", "--kubeconfig", "/run/1/kubeconfig", "--node-name=ccm-node-1"},
		},
		{
			name:    "an unknown variable",
			nm:      profile.NodeManager{Path: "/opt/nm", Args: []string{"--zone=${ZONE}"}},
			wantErr: "ccm.nodeManager.args",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			command, env, err := nodeManagerCommand(&tt.nm, e, "ccm-node-1", "/k")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(command, tt.want) {
				t.Errorf("command = %q, want %q", command, tt.want)
			}
			if tt.wantEnv != "" && !slices.Contains(env, tt.wantEnv) {
				t.Errorf("env lacks %s", tt.wantEnv)
			}
		})
	}
}
