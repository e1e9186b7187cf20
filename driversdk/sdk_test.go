package driversdk

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestGoldenMessagesDecode: every verb's golden request and response
// decode into the SDK's Go types with no field left over, so the types
// name every field the protocol's examples use.
func TestGoldenMessagesDecode(t *testing.T) {
	if len(Messages) != len(AllVerbs) {
		t.Fatalf("%d messages for %d verbs", len(Messages), len(AllVerbs))
	}
	for i, m := range Messages {
		if m.Verb != AllVerbs[i] {
			t.Errorf("Messages[%d] is %q, AllVerbs[%d] %q", i, m.Verb, i, AllVerbs[i])
		}
		for kind, typ := range map[string]any{"request": m.Request, "response": m.Response} {
			path := filepath.Join("testdata/golden", GoldenFile(kind, m.Verb))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			v := reflect.New(reflect.TypeOf(typ)).Interface()
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
	}
}

func TestSchemaIsJSON(t *testing.T) {
	var s struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(SchemaV1, &s); err != nil {
		t.Fatal(err)
	}
	for _, v := range AllVerbs {
		for _, kind := range []string{"request", "response"} {
			if _, ok := s.Defs[SchemaName(kind, v)]; !ok {
				t.Errorf("schema/v1.json has no $defs/%s", SchemaName(kind, v))
			}
		}
	}
}
