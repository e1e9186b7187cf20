package releasecheck

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// ResultFile is where WriteToRunDir puts the report, relative to a run
// directory (next to artifacts/metadata.json).
const ResultFile = "artifacts/release-check.json"

// WriteText prints the checklist: one line per item, then a summary.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "release check of %s (%s, %s, %s)\n", r.Image, r.Source, r.Platform, r.Digest)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, it := range r.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", strings.ToUpper(string(it.Status)), it.ID, it.Name, it.Evidence)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "release check: %s (%d passed, %d warned, %d failed)\n", r.Result, r.Passed, r.Warned, r.Failed)
	return err
}

// WriteJSON prints the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Summary is the one-line value of prow.MetaReleaseCheck: "pass (9 passed, 0
// warned, 0 failed)" or "fail: RG1, RG5 (...)".
func (r *Report) Summary() string {
	counts := fmt.Sprintf("%d passed, %d warned, %d failed", r.Passed, r.Warned, r.Failed)
	if ids := r.FailedIDs(); len(ids) > 0 {
		return fmt.Sprintf("fail: %s (%s)", strings.Join(ids, ", "), counts)
	}
	return fmt.Sprintf("pass (%s)", counts)
}

// WriteToRunDir stores the report with a run: the whole report as
// ResultFile, and prow.MetaReleaseCheck, MetaReleaseCheckImage and MetaReleaseCheckDigest merged into the
// run's metadata.json (prow.MergeMetadata: the run's other keys are kept).
func (r *Report) WriteToRunDir(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, ResultFile)
	if err := prow.WriteFileAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	keys := map[string]any{prow.MetaReleaseCheck: r.Summary(), prow.MetaReleaseCheckImage: r.Image, prow.MetaReleaseCheckDigest: r.Digest}
	if _, err := prow.MergeMetadata(filepath.Join(dir, prow.MetadataFile), keys); err != nil {
		return err
	}
	return nil
}
