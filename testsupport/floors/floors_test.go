package floors

import "testing"

// The floors of the repository, bottom up, each with what its packages may
// link of this module (go list -deps: indirect links count too). The
// package doc comments name the same floors.
func TestFloors(t *testing.T) {
	leaves := []string{"internal", "kubeversion", "labels"}
	for _, tt := range []struct {
		name     string
		rule     Rule
		min      int
		patterns []string
	}{
		{
			// Leaves stand on nothing of the harness but other leaves.
			name: "leaves", rule: Rule{Floor: leaves, May: leaves}, min: 10,
			patterns: []string{"../../internal/...", "../../kubeversion", "../../labels"},
		},
		{
			// The framework links nothing above it: no suite, report,
			// check, backend, provider or command.
			name: "framework", min: 10, patterns: []string{"../../framework/..."},
			rule: Rule{Floor: []string{"framework"}, May: append([]string{"framework", "driversdk"}, leaves...)},
		},
		{
			// A suite stands on the framework alone.
			name: "suites", min: 7, patterns: []string{"../../suites/..."},
			rule: Rule{Floor: []string{"suites"}, May: append([]string{"suites", "framework", "driversdk"}, leaves...)},
		},
		{
			// What reads and judges results links nothing of the harness,
			// so a dashboard job or a release-team check does not build the
			// framework. Only reports/rundir, the run directory's writer,
			// knows the runner.
			name: "reports", min: 6,
			patterns: []string{"../../reports/prow", "../../reports/store", "../../reports/store/storetest", "../../reports/lkg", "../../reports/dashboard", "../../reports/testgrid"},
			rule: Rule{
				Floor: []string{"reports/prow", "reports/store", "reports/lkg", "reports/dashboard", "reports/testgrid"},
				May:   append([]string{"reports/prow", "reports/store", "reports/lkg"}, leaves...),
			},
		},
		{
			// A provider here is what a provider's own repository would
			// hold. It talks to the harness only through the cluster, the
			// CCM's process or image and the cloud-driver protocol, so it
			// links nothing of this repository outside providers/, the
			// driver SDK included (docs/cloud-driver.md).
			name: "providers", min: 5, patterns: []string{"../../providers/..."},
			rule: Rule{Floor: []string{"providers"}, May: []string{"providers"}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { Check(t, tt.rule, tt.min, tt.patterns...) })
	}
}

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
