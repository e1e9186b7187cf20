package profile

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseReferenceProfile measures decoding and validating the
// reference provider's profile, which every command does first.
func BenchmarkParseReferenceProfile(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "providers", "profiles", "reference.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, "/profiles"); err != nil {
			b.Fatal(err)
		}
	}
}
