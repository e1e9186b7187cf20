package release

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// WriteModuleVersion serves the module in dir (a checkout, or a folder of
// one) as modulePath@version from proxy, a directory in the layout of a
// GOPROXY=file://... module proxy: the files git tracks there, and new ones
// it does not ignore, as a tag of that commit would hold them. The
// install test uses it for both modules of this repository; scripts/tidy.sh
// for the cloud-driver SDK, which go.mod requires at a version published
// only with a release.
func WriteModuleVersion(proxy, modulePath, version, dir string, at time.Time) error {
	out, err := exec.Command("git", "-C", dir, "ls-files", "--cached", "--others", "--exclude-standard", ".").Output()
	if err != nil {
		return fmt.Errorf("listing the files of %s: %w", dir, err)
	}
	src, err := os.MkdirTemp("", "ccm-conformance-module-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		p := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	escaped, err := module.EscapePath(modulePath)
	if err != nil {
		return err
	}
	atDir := filepath.Join(proxy, escaped, "@v")
	if err := os.MkdirAll(atDir, 0o755); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(atDir, version+".zip"))
	if err != nil {
		return err
	}
	// CreateFromDir leaves out nested modules (./driversdk of the harness).
	if err := modzip.CreateFromDir(z, module.Version{Path: modulePath, Version: version}, src); err != nil {
		z.Close()
		return fmt.Errorf("module zip of %s: %w", dir, err)
	}
	if err := z.Close(); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": at.UTC()})
	for name, data := range map[string][]byte{version + ".mod": gomod, version + ".info": info, "list": []byte(version + "\n")} {
		if err := os.WriteFile(filepath.Join(atDir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
