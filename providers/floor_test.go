package providers_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A provider here is what a provider's own repository would hold: a CCM,
// an emulator of its cloud and a cloud driver. Like a real one it talks to
// the harness only through the cluster, the CCM's process or image and the
// cloud-driver protocol, so none of its packages links the harness. The one
// thing it may import from this repository is the driver SDK, a module of
// its own with no dependency beyond the standard library, which is what a
// provider's driver elsewhere would import too (docs/cloud-driver.md).
func TestProvidersLinkNothingOfTheHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const module = "github.com/ccm-conformance/ccm-conformance/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Deps}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(pkg, module+"providers/") {
			continue
		}
		checked++
		for _, d := range strings.Fields(strings.Trim(deps, "[]")) {
			if allowedForProviders(strings.TrimPrefix(d, module)) || !strings.HasPrefix(d, module) {
				continue
			}
			t.Errorf("%s links %s", strings.TrimPrefix(pkg, module), strings.TrimPrefix(d, module))
		}
	}
	if checked == 0 {
		t.Fatalf("go list named no package under providers/:\n%s", out)
	}
}

// allowedForProviders says whether a package of this repository (named
// relative to the module) may be linked by a provider.
func allowedForProviders(rel string) bool {
	for _, root := range []string{"providers", "driversdk"} {
		if rel == root || strings.HasPrefix(rel, root+"/") {
			return true
		}
	}
	return false
}

func TestAllowedForProviders(t *testing.T) {
	for _, c := range []struct {
		rel  string
		want bool
	}{
		{"providers/reference/driver", true},
		{"driversdk", true},
		{"driversdk/fakecloud", true},
		{"framework/clouddriver", false},
		{"internal/k8sbin", false},
		{"driversdkx", false},
		{"providersx/a", false},
	} {
		if got := allowedForProviders(c.rel); got != c.want {
			t.Errorf("allowedForProviders(%q) = %v, want %v", c.rel, got, c.want)
		}
	}
}
