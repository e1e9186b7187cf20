package reports_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The reports stand on their own floor: what reads and judges results
// (the Prow layout, the store, the LKG rules, the dashboard, TestGrid's
// configuration, and the store's test emulators) links nothing of the
// harness, so a dashboard job or a release-team check does not build the
// framework. Only reports/rundir, the run directory's writer, knows the
// runner.
func TestReportsImportNothingOfTheFramework(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const module = "github.com/ccm-conformance/ccm-conformance/"
	pkgs := []string{"./prow", "./store", "./store/storetest", "./lkg", "./dashboard", "./testgrid"}
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Deps}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(pkg, module+"reports/") {
			continue
		}
		for _, d := range strings.Fields(strings.Trim(deps, "[]")) {
			if strings.HasPrefix(d, module+"framework") || strings.HasPrefix(d, module+"suites") {
				t.Errorf("%s links %s", strings.TrimPrefix(pkg, module), strings.TrimPrefix(d, module))
			}
		}
	}
}
