package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, f flags)
	}{
		{name: "the node and the defaults", args: []string{"--node-name=n1"}, check: func(t *testing.T, f flags) {
			if f.nodeName != "n1" || f.statusUpdateFreq != 5*time.Minute || f.kubeconfig != "" || len(f.reference.Defects) != 0 {
				t.Errorf("flags = %+v", f)
			}
		}},
		{name: "every flag", args: []string{"--node-name", "n2", "--kubeconfig=/k", "--cloud-config=/c", "--node-status-update-frequency=1s", "--reference-defects=wrong-zone", "--v=2"}, check: func(t *testing.T, f flags) {
			if f.nodeName != "n2" || f.kubeconfig != "/k" || f.cloudConfig != "/c" || f.statusUpdateFreq != time.Second || !f.reference.Defects.Has("wrong-zone") {
				t.Errorf("flags = %+v", f)
			}
		}},
		{name: "no node", args: nil, wantErr: "--node-name is required"},
		{name: "a positional argument", args: []string{"--node-name=n1", "n2"}, wantErr: `unexpected arguments ["n2"]`},
		{name: "a frequency of zero", args: []string{"--node-name=n1", "--node-status-update-frequency=0s"}, wantErr: "must be positive"},
		{name: "an unknown defect", args: []string{"--node-name=n1", "--reference-defects=no-such-defect"}, wantErr: "no-such-defect"},
		{name: "an unknown flag", args: []string{"--node-name=n1", "--nodename=n2"}, wantErr: "unknown flag: --nodename"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, f)
		})
	}
}
