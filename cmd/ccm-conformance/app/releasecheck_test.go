package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseCheckBadInput: bad input is exit code 2 and one line naming
// the input. The checks themselves are tested in checks/releasecheck.
func TestReleaseCheckBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.tar")
	if err := os.WriteFile(corrupt, []byte(strings.Repeat("x", 700)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no image", []string{"release-check"}, "--image"},
		{"missing tarball", []string{"release-check", "--image", filepath.Join(dir, "missing.tar")}, filepath.Join(dir, "missing.tar")},
		{"corrupt tarball", []string{"release-check", "--image", corrupt}, corrupt},
		{"missing layout", []string{"release-check", "--image", "oci-layout:" + filepath.Join(dir, "nope")}, "oci-layout:" + filepath.Join(dir, "nope")},
		{"bad output", []string{"release-check", "--image", corrupt, "-o", "yaml"}, `--output "yaml"`},
		{"bad kubernetes version", []string{"release-check", "--image", corrupt, "--kubernetes-version", "banana"}, `--kubernetes-version "banana"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := Main(tt.args, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", code, stderr.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q: want one line naming %s", msg, tt.want)
			}
		})
	}
}
