// Package filehash is the SHA-256 of a file's contents, which names what
// the harness ran (a CCM executable), built (a release's binaries) or
// cached (an image's root filesystem).
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package filehash

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// SHA256 is the hex SHA-256 of the file at path; errors name the file.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Digest is SHA256 as a digest: "sha256:<hex>".
func Digest(path string) (string, error) {
	sum, err := SHA256(path)
	if err != nil {
		return "", err
	}
	return "sha256:" + sum, nil
}
