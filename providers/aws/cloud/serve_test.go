package cloud

import (
	"strings"
	"testing"
)

// The cloud config's [Global] carries NLBSecurityGroupMode only when the
// emulator is given one, and before the first [ServiceOverride], where
// the CCM reads it as a [Global] key.
func TestCloudConfigNLBSecurityGroupMode(t *testing.T) {
	for _, tt := range []struct {
		mode, want string // want: the line, or "" for none
	}{
		{"", ""},
		{"Managed", "NLBSecurityGroupMode = Managed"},
	} {
		t.Run("mode "+tt.mode, func(t *testing.T) {
			conf := New(Options{NLBSecurityGroupMode: tt.mode}).CloudConfig("http://127.0.0.1:9")
			global, _, _ := strings.Cut(conf, "[ServiceOverride")
			if !strings.Contains(global, "KubernetesClusterID = ccm-conformance\n") {
				t.Fatalf("no [Global] with the cluster ID before the overrides:\n%s", conf)
			}
			line := ""
			for l := range strings.SplitSeq(conf, "\n") {
				if strings.HasPrefix(l, "NLBSecurityGroupMode") {
					line = l
				}
			}
			if line != tt.want || (tt.want != "" && !strings.Contains(global, tt.want+"\n")) {
				t.Errorf("NLBSecurityGroupMode line %q, want %q in [Global]:\n%s", line, tt.want, conf)
			}
		})
	}
}
