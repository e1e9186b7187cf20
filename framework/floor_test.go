package framework_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The framework is the floor the suites, the backends and the commands
// stand on: it links the leaves below it (internal/, labels, kubeversion,
// the driver SDK) and nothing above it. Capability, not provider, decides
// what runs, and results are written by the reports, so nothing here may
// know a provider, a suite, a report, a check or a command.
func TestFrameworkLinksNothingAboveIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const module = "github.com/ccm-conformance/ccm-conformance/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Deps}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	below := []string{"framework", "internal", "labels", "kubeversion", "driversdk"}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok || !under(rel, []string{"framework"}) {
			continue
		}
		checked++
		for _, d := range strings.Fields(strings.Trim(deps, "[]")) {
			if drel, ok := strings.CutPrefix(d, module); ok && !under(drel, below) {
				t.Errorf("%s links %s", rel, drel)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("go list named %d framework packages:\n%s", checked, out)
	}
}

// under says whether the package rel (relative to the module) is one of
// roots or below one.
func under(rel string, roots []string) bool {
	for _, r := range roots {
		if rel == r || strings.HasPrefix(rel, r+"/") {
			return true
		}
	}
	return false
}
