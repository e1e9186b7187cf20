package k8sbin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// BuildInfo is what the cache knows of how a binary was built, kept beside
// it in BuildInfoPath: the release and, when the Go module proxy reports
// it, the commit of the release's tag. A binary's own /version reports the
// commit only when the build stamped it; BuildInfo also covers binaries
// cached before builds did.
type BuildInfo struct {
	// Module and Version are the module the binary was built from.
	Module  string `json:"module"`
	Version string `json:"version"`
	// Commit is the git commit of Version as the module proxy reports it
	// (Origin.Hash of `go mod download -json`); empty when the proxy does
	// not say.
	Commit string `json:"commit,omitempty"`
	// Stamped says the commit was linked into the binary (gitCommit).
	Stamped bool `json:"stamped,omitempty"`
	// Source is the URL a binary was downloaded from (a Kubernetes
	// release's own build, Request.Releases); empty for one built here
	// from the Go module proxy. SHA256 is then its checked sum.
	Source string `json:"source,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// How says where the binary came from, for progress lines and logs.
func (bi BuildInfo) How() string {
	if bi.Source != "" {
		return "downloaded from " + bi.Source
	}
	return "built from " + bi.Module + "@" + bi.Version + " through the Go module proxy"
}

// buildInfoSuffix names the file beside a binary that holds its BuildInfo.
const buildInfoSuffix = ".build.json"

// stampLookupTimeout bounds looking up the commit of a binary cached
// without a BuildInfo. The lookup reads only the module cache
// (GOPROXY=off), so it takes milliseconds or fails at once.
const stampLookupTimeout = 10 * time.Second

// BuildInfoPath is the file that holds the BuildInfo of the binary at path.
func BuildInfoPath(binary string) string { return binary + buildInfoSuffix }

// ReadBuildInfo reads the BuildInfo of the binary at path. A binary that
// came from an environment override, or from a cache that never recorded
// one, has none: the error wraps os.ErrNotExist then.
func ReadBuildInfo(binary string) (BuildInfo, error) {
	var bi BuildInfo
	data, err := os.ReadFile(BuildInfoPath(binary))
	if err != nil {
		return bi, fmt.Errorf("build info of %s: %w", binary, err)
	}
	if err := json.Unmarshal(data, &bi); err != nil {
		return bi, fmt.Errorf("build info of %s: %w", binary, err)
	}
	if !isCommitHash(bi.Commit) {
		bi.Commit = ""
	}
	return bi, nil
}

// writeBuildInfo writes bi beside the binary, atomically.
func writeBuildInfo(binary string, bi BuildInfo) error {
	data, err := json.MarshalIndent(bi, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(binary), "."+filepath.Base(binary)+buildInfoSuffix+".tmp-")
	if err != nil {
		return fmt.Errorf("writing the build info of %s: %w", binary, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(append(data, '\n'))
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return fmt.Errorf("writing the build info of %s: %w", binary, err)
	}
	if err := os.Rename(tmp.Name(), BuildInfoPath(binary)); err != nil {
		return fmt.Errorf("writing the build info of %s: %w", binary, err)
	}
	return nil
}

// recordBuildInfo gives a Kubernetes binary cached without a BuildInfo
// one, with the commit the module proxy reported for its release when the
// build downloaded it (the module cache keeps the answer). It is best
// effort: without an answer (the module cache was cleaned, no go command)
// nothing is written and the commit stays unknown, to be looked up again
// next time.
func recordBuildInfo(ctx context.Context, req Request, binary string) {
	if !isKubernetesBinary(req.Name) {
		return
	}
	if _, err := os.Stat(BuildInfoPath(binary)); err == nil || !errors.Is(err, os.ErrNotExist) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, stampLookupTimeout)
	defer cancel()
	dir, err := os.MkdirTemp(filepath.Dir(binary), ".lookup-"+req.Name+"-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module ccm-conformance.local/build/lookup\n"), 0o644); err != nil {
		return
	}
	info, err := downloadModule(ctx, req, dir, kubernetesModule+"@"+req.Version, "GOPROXY=off")
	if err != nil {
		return
	}
	_ = writeBuildInfo(binary, BuildInfo{Module: kubernetesModule, Version: req.Version, Commit: moduleCommit(info)})
}

// isCommitHash reports whether s is a full git commit hash.
func isCommitHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
