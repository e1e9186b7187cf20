package prow

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestMergeMetadata(t *testing.T) {
	tests := []struct {
		name     string
		existing string // "" for no file
		want     map[string]any
		wantErr  bool // whether MetaErrors is recorded
	}{
		{"no file", "", headers(map[string]any{"provider": "p"}), false},
		{"other keys kept, ours win", `{"provider": "old", "deployer": "kind"}`, headers(map[string]any{"provider": "p", "deployer": "kind"}), false},
		{"shallow: a nested value is replaced whole", `{"provider": {"name": "old"}}`, headers(map[string]any{"provider": "p"}), false},
		{"corrupt file recorded and replaced", `{"provider": `, headers(map[string]any{"provider": "p"}), true},
		{"not an object", `["a"]`, headers(map[string]any{"provider": "p"}), true},
		{"a header key already there is kept", `{"ccm-image": "registry.example/ccm:v1"}`, headers(map[string]any{"provider": "p", MetaCCMImage: "registry.example/ccm:v1"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "metadata.json")
			if tt.existing != "" {
				if err := os.WriteFile(path, []byte(tt.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := MergeMetadata(path, map[string]any{"provider": "p"})
			if err != nil {
				t.Fatal(err)
			}
			_, recorded := got[MetaErrors]
			if recorded != tt.wantErr {
				t.Errorf("%s recorded: %v, want %v (%v)", MetaErrors, recorded, tt.wantErr, got)
			}
			delete(got, MetaErrors)
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Errorf("merged %s, want %s", gj, wj)
			}
			onDisk, err := os.ReadFile(path)
			if err != nil || !json.Valid(onDisk) {
				t.Errorf("metadata.json on disk is not valid JSON: %v %s", err, onDisk)
			}
			var written map[string]any
			if err := json.Unmarshal(onDisk, &written); err == nil {
				for _, k := range ColumnHeaderKeys() {
					if _, ok := written[k].(string); !ok {
						t.Errorf("metadata.json on disk lacks the column header key %q: %s", k, onDisk)
					}
				}
			}
		})
	}
}

// headers adds the column header keys TestGrid needs, empty, to want.
func headers(want map[string]any) map[string]any {
	for _, k := range ColumnHeaderKeys() {
		if _, ok := want[k]; !ok {
			want[k] = ""
		}
	}
	return want
}
