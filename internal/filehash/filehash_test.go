package filehash

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSHA256(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The SHA-256 of "abc" (FIPS 180-2, appendix B.1).
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got, err := SHA256(path); err != nil || got != abc {
		t.Errorf("SHA256 = %q, %v; want %s", got, err, abc)
	}
	if got, err := Digest(path); err != nil || got != "sha256:"+abc {
		t.Errorf("Digest = %q, %v", got, err)
	}
	if _, err := SHA256(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file: no error")
	}
}
