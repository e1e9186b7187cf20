package floors

import "testing"

func TestUnder(t *testing.T) {
	for _, tt := range []struct {
		rel  string
		want bool
	}{
		{"providers/reference/driver", true},
		{"providers", true},
		{"driversdk/fakecloud", true},
		{"framework/clouddriver", false},
		{"driversdkx", false},
		{"providersx/a", false},
	} {
		if got := Under(tt.rel, []string{"providers", "driversdk"}); got != tt.want {
			t.Errorf("Under(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}
