package floors

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

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
			// driver SDK included (docs/cloud-driver.md). providers/ is a
			// Go module of its own that requires neither (providers/go.mod,
			// built alone by scripts/test.sh); this says it package by
			// package.
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

// TestProvidersModuleStandsAlone: the providers' go.mod requires and
// replaces nothing of this repository, so without go.work (a provider's
// own repository has none) an import of the harness or the SDK from
// providers/ cannot build.
func TestProvidersModuleStandsAlone(t *testing.T) {
	const file = "../../providers/go.mod"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(file, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	const repo = "github.com/ccm-conformance/ccm-conformance"
	if f.Module.Mod.Path != repo+"/providers" {
		t.Errorf("%s: module %s, want %s/providers", file, f.Module.Mod.Path, repo)
	}
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, repo) {
			t.Errorf("%s requires %s", file, r.Mod.Path)
		}
	}
	if len(f.Replace) != 0 {
		t.Errorf("%s has %d replace directives", file, len(f.Replace))
	}
}
