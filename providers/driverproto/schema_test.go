package driverproto

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// schemaFile is the protocol's JSON Schema, which the driver SDK publishes.
// It is read as a file: this module links nothing of the harness or the SDK.
const schemaFile = "../../driversdk/schema/v1.json"

// TestObjectsNameTheSchemaFields: every object this package declares has
// the JSON fields its definition in the protocol's schema has, no more and
// no fewer, and a field the schema requires is never left out as empty.
func TestObjectsNameTheSchemaFields(t *testing.T) {
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	for def, v := range map[string]any{
		"Address": Address{}, "Instance": Instance{}, "Ingress": Ingress{}, "Port": Port{},
		"LoadBalancer": LoadBalancer{}, "Route": Route{}, "Call": Call{}, "Info": Info{},
		"request.instance-get": NameRequest{}, "request.instance-create": CreateInstanceRequest{},
		"request.instance-set-addresses": SetAddressesRequest{}, "request.fault-inject": FaultRequest{},
		"request.calls-list": CallsRequest{},
	} {
		want, ok := schema.Defs[def]
		if !ok {
			t.Errorf("%s has no $defs/%s", schemaFile, def)
			continue
		}
		var names, optional []string
		typ := reflect.TypeOf(v)
		for f := range typ.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			names = append(names, name)
			if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
				optional = append(optional, name)
			}
		}
		var schemaNames []string
		for name := range want.Properties {
			schemaNames = append(schemaNames, name)
		}
		slices.Sort(names)
		slices.Sort(schemaNames)
		if !slices.Equal(names, schemaNames) {
			t.Errorf("%s: %s has the JSON fields %v; $defs/%s has %v", def, typ, names, def, schemaNames)
		}
		for _, name := range want.Required {
			if slices.Contains(optional, name) {
				t.Errorf("%s: %s leaves out %q when it is empty; the schema requires it", def, typ, name)
			}
		}
	}
}
