package internal_test

import (
	"testing"

	"github.com/ccm-conformance/ccm-conformance/testsupport/floors"
)

// internal/ holds leaves: packages the rest of the harness stands on that
// link nothing of it but other leaves. kubeversion and labels are leaves
// too, at the top of the tree because users' tools read them.
func TestLeavesLinkOnlyLeaves(t *testing.T) {
	leaves := []string{"internal", "kubeversion", "labels"}
	floors.Check(t, floors.Rule{Floor: leaves, May: leaves}, 10, "./...", "../kubeversion", "../labels")
}
