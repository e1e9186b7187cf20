package profile

import (
	"path/filepath"
	"reflect"
	"testing"
)

// The reference provider's profiles differ only in how the CCM runs
// (binary or image) and what a container needs; what they claim and how
// long they wait must agree, or `make conformance-image` would quietly run
// fewer specs than `make conformance`.
func TestReferenceProfilesAgree(t *testing.T) {
	dir := filepath.Join("..", "..", "providers", "profiles")
	binary, err := Load(filepath.Join(dir, "reference.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	image, err := Load(filepath.Join(dir, "reference-image.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(binary.Capabilities, image.Capabilities) {
		t.Errorf("reference-image.yaml claims %v, reference.yaml %v: expected the same capabilities", image.Capabilities, binary.Capabilities)
	}
	if !reflect.DeepEqual(binary.Timeouts, image.Timeouts) {
		t.Errorf("reference-image.yaml has timeouts %v, reference.yaml %v: expected the same", image.Timeouts, binary.Timeouts)
	}
}
