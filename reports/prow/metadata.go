package prow

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// MergeMetadata merges keys into the metadata file at path and returns the
// merged map. It follows Prow's sidecar, which folds every container's
// metadata.json into finished.json's metadata: a missing file is an empty
// map, a file that cannot be read or parsed is recorded (here under
// MetaErrors, keyed by its path) and otherwise ignored, and the merge is
// shallow: a top-level key that is written later replaces the earlier value
// whole. Keys other tools wrote (a kubetest2 deployer, say) are kept.
//
// The merged map carries every ColumnHeaderKeys key: one that neither the
// file nor keys has is written as "", so that TestGrid shows an empty
// header cell for it rather than "missing".
func MergeMetadata(path string, keys map[string]any) (map[string]any, error) {
	merged := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		merged[MetaErrors] = map[string]any{path: err.Error()}
	default:
		if err := json.Unmarshal(data, &merged); err != nil {
			merged = map[string]any{MetaErrors: map[string]any{path: fmt.Sprintf("not a JSON object: %v", err)}}
		}
	}
	for k, v := range keys {
		merged[k] = v
	}
	for _, k := range ColumnHeaderKeys() {
		if _, ok := merged[k]; !ok {
			merged[k] = ""
		}
	}
	if err := WriteJSON(path, merged); err != nil {
		return merged, fmt.Errorf("writing %s: %w", path, err)
	}
	return merged, nil
}
