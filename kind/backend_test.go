package kind

import "testing"

func TestFirstIPv4(t *testing.T) {
	tests := []struct {
		name string
		ips  []string
		want string
	}{
		{"none", nil, ""},
		{"IPv4 only", []string{"172.18.0.3"}, "172.18.0.3"},
		{"IPv6 first", []string{"fc00:f853:ccd:e793::3", "172.18.0.3"}, "172.18.0.3"},
		{"IPv6 only", []string{"fc00:f853:ccd:e793::3"}, ""},
		{"not an address", []string{"<no value>"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := firstIPv4(tt.ips); got != tt.want {
				t.Errorf("firstIPv4(%v) = %q, want %q", tt.ips, got, tt.want)
			}
		})
	}
}
