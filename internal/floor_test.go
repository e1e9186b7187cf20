package internal_test

import (
	"os/exec"
	"strings"
	"testing"
)

// internal/ holds leaves: packages the rest of the harness stands on that
// link nothing of it but other leaves (kubeversion, labels). kubeversion and
// labels are leaves too, at the top of the tree because users' tools read
// them.
func TestLeavesLinkOnlyLeaves(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const module = "github.com/ccm-conformance/ccm-conformance/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Deps}}", "./...", "../kubeversion", "../labels").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	leaves := []string{"internal", "kubeversion", "labels"}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok || !under(rel, leaves) {
			continue
		}
		checked++
		for _, d := range strings.Fields(strings.Trim(deps, "[]")) {
			if drel, ok := strings.CutPrefix(d, module); ok && !under(drel, leaves) {
				t.Errorf("%s links %s: a leaf stands on nothing of the harness", rel, drel)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("go list named %d leaf packages:\n%s", checked, out)
	}
}

func under(rel string, roots []string) bool {
	for _, r := range roots {
		if rel == r || strings.HasPrefix(rel, r+"/") {
			return true
		}
	}
	return false
}
