package app

import "testing"

func TestImageDigest(t *testing.T) {
	tests := []struct{ imageID, want string }{
		{"docker-pullable://registry.k8s.io/ccm@sha256:0123abcd", "sha256:0123abcd"},
		{"registry.example/my-cloud/ccm@sha256:feed", "sha256:feed"},
		{"sha256:4a5b6c", "sha256:4a5b6c"},
		{"registry.example/ccm:v1", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := imageDigest(tt.imageID); got != tt.want {
			t.Errorf("imageDigest(%q) = %q, want %q", tt.imageID, got, tt.want)
		}
	}
}

func TestWantsHelp(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"--help"}, true},
		{[]string{"--help", "--provider", "p.yaml"}, true},
		{[]string{"--provider", "p.yaml", "-h"}, true},
		{[]string{"--provider", "p.yaml"}, false},
		{[]string{"--", "--help"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := wantsHelp(tt.args); got != tt.want {
			t.Errorf("wantsHelp(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
