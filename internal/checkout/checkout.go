// Package checkout finds the checkout of this module that a test runs in.
// Tests use it to reach files outside their package (profiles, the
// Makefile, artifacts) instead of their own source file's path, which
// -trimpath, used by the project's builds and tests, turns into a module
// path.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package checkout

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// ModulePath is this module's path, as its go.mod names it.
const ModulePath = "github.com/ccm-conformance/ccm-conformance"

var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?\s*$`)

// Root returns the nearest directory, from dir up, whose go.mod is this
// module's.
func Root(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("locating the checkout of %s: %w", ModulePath, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if m := moduleLine.FindSubmatch(data); err == nil && m != nil && string(m[1]) == ModulePath {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no checkout of %s at or above %s", ModulePath, abs)
		}
	}
}

// MustRoot is Root of the working directory (go test runs a package's
// tests in its directory); it panics when there is none.
func MustRoot() string {
	wd, err := os.Getwd()
	if err == nil {
		var root string
		if root, err = Root(wd); err == nil {
			return root
		}
	}
	panic("checkout: " + err.Error())
}
