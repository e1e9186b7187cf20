package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// ExportArtifacts copies the artifacts/ of the run directory runDir into
// dst, the artifacts directory of a Prow job (its $ARTIFACTS, which the
// Prow sidecar uploads as the job's artifacts/ beside its own
// started.json, finished.json and build-log.txt) or of a kubetest2 run.
// What lands in dst is laid out as a run directory's artifacts/ is: the
// junit files, specs.json, timings.json and logs/ at the top, so a Prow
// bucket holding the job reads like a results store.
//
// metadata.json is merged, not copied: the run's keys are set over those
// already in dst/metadata.json (a kubetest2 deployer's, say), which the
// sidecar folds into finished.json. Junit files an earlier export into the
// same dst left for the given suites (and for prow.HarnessSuite) are removed
// first, so they cannot be taken for this run's; other files, such as
// kubetest2's junit_runner.xml, are left alone.
func ExportArtifacts(runDir, dst string, suites []string) error {
	src := filepath.Join(runDir, prow.ArtifactsDir)
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("exporting run directory %s: %w", runDir, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("exporting to %s: %w", dst, err)
	}
	for _, s := range append([]string{prow.HarnessSuite}, suites...) {
		p := filepath.Join(dst, prow.JUnitFileName(s))
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing an earlier run's %s: %w", p, err)
		}
	}
	metaName := filepath.Base(prow.MetadataFile)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case rel == metaName, !d.Type().IsRegular():
			return nil
		}
		return copyFileAtomic(path, target)
	})
	if err != nil {
		return fmt.Errorf("exporting %s to %s: %w", src, dst, err)
	}
	keys := map[string]any{}
	data, err := os.ReadFile(filepath.Join(runDir, prow.MetadataFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("exporting metadata: %w", err)
	default:
		if err := json.Unmarshal(data, &keys); err != nil {
			return fmt.Errorf("exporting metadata: %s: %w", filepath.Join(runDir, prow.MetadataFile), err)
		}
	}
	if _, err := prow.MergeMetadata(filepath.Join(dst, metaName), keys); err != nil {
		return fmt.Errorf("exporting metadata: %w", err)
	}
	return nil
}

// SeedMetadata copies the metadata file at from (an artifacts directory's
// metadata.json, written by a kubetest2 deployer or an earlier container
// of a Prow job) into the run directory, so that the run's finished.json
// carries those keys too. A missing file is not an error.
func SeedMetadata(from, runDir string) error {
	data, err := os.ReadFile(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", from, err)
	}
	return prow.WriteFileAtomic(filepath.Join(runDir, prow.MetadataFile), data)
}

// copyFileAtomic copies src to dst through a temporary file beside dst.
func copyFileAtomic(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return os.Rename(tmp.Name(), dst)
}
