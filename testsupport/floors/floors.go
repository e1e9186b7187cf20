// Package floors checks the repository's layering from the project's
// tests: which packages of this module the packages of one floor link
// (go list -deps, so indirect links count too).
//
// Floor: test support, for the project's own tests only; it may stand on
// any floor below the commands.
package floors

import (
	"os/exec"
	"strings"
	"testing"
)

// Module is this repository's module path, with a trailing slash.
const Module = "github.com/ccm-conformance/ccm-conformance/"

// Rule says which packages a floor's packages may link: Floor names the
// folders (relative to the module) whose packages are checked; May names
// the folders they may link. A package outside the module is never a
// concern.
type Rule struct {
	Floor []string
	May   []string
}

// Check lists the packages patterns name (relative to the test's
// directory) with their dependencies and reports every link the rule
// forbids. At least min packages of the floor must be listed, so that a
// pattern that names nothing cannot pass.
func Check(t *testing.T, rule Rule, min int, patterns ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Deps}}"}, patterns...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		rel, ok := strings.CutPrefix(pkg, Module)
		if !ok || !Under(rel, rule.Floor) {
			continue
		}
		checked++
		for _, d := range strings.Fields(strings.Trim(deps, "[]")) {
			if drel, ok := strings.CutPrefix(d, Module); ok && !Under(drel, rule.May) {
				t.Errorf("%s links %s", rel, drel)
			}
		}
	}
	if checked < min {
		t.Fatalf("go list %s named %d packages of the floor %v, want at least %d:\n%s", strings.Join(patterns, " "), checked, rule.Floor, min, out)
	}
}

// Under says whether the package rel (relative to the module) is one of
// the folders or below one.
func Under(rel string, folders []string) bool {
	for _, f := range folders {
		if rel == f || strings.HasPrefix(rel, f+"/") {
			return true
		}
	}
	return false
}
