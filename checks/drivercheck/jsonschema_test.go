package drivercheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/driversdk"
)

const goldenDir = "../../driversdk/testdata/golden"

// TestGoldenMessagesMatchTheSchema: the SDK's example request and response
// of every verb are valid under driversdk/schema/v1.json (the SDK's own
// tests decode the same files into its Go types).
func TestGoldenMessagesMatchTheSchema(t *testing.T) {
	for _, v := range driversdk.AllVerbs {
		for _, kind := range []string{"request", "response"} {
			data, err := os.ReadFile(filepath.Join(goldenDir, driversdk.GoldenFile(kind, v)))
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidateMessage(kind, v, data); err != nil {
				t.Errorf("%s %s: %v", v, kind, err)
			}
		}
	}
}

// TestSchemaRefusesBrokenMessages: what the protocol forbids, the schema
// refuses, naming the place.
func TestSchemaRefusesBrokenMessages(t *testing.T) {
	tests := []struct {
		verb driversdk.Verb
		kind string
		doc  string
		want string
	}{
		{driversdk.VerbInstanceGet, "response", `{"instance": {"id": "i", "name": "n", "state": "running", "addresses": []}}`, `at '/instance': missing property 'providerID'`},
		{driversdk.VerbInstanceGet, "response", `{"instance": {"id": "i", "name": "n", "providerID": "p", "state": "gone", "addresses": []}}`, `at '/instance/state'`},
		{driversdk.VerbInstancesList, "response", `{"instances": [{"id": "i", "name": "n", "providerID": "p", "state": "running", "addresses": [{"type": "PublicIP", "address": "1.2.3.4"}]}]}`, `at '/instances/0/addresses/0/type'`},
		{driversdk.VerbInstanceGet, "response", `{}`, `missing property 'instance'`},
		{driversdk.VerbLoadBalancersList, "response", `{"loadBalancers": [{"exists": false}]}`, `at '/loadBalancers/0/exists'`},
		{driversdk.VerbLoadBalancerGet, "response", `{"loadBalancer": {"exists": true, "name": ""}}`, `at '/loadBalancer/name'`},
		{driversdk.VerbLoadBalancerGet, "response", `{"loadBalancer": {"exists": true, "name": "lb", "ports": [{"protocol": "TCP", "port": 0}]}}`, `at '/loadBalancer/ports/0/port'`},
		{driversdk.VerbRouteCreate, "response", `{"route": {"name": "r", "destinationCIDR": "10.0.0.0/24"}}`, `missing property 'nodeName'`},
		{driversdk.VerbCallsList, "response", `{"calls": [{"seq": 1, "time": "yesterday", "operation": "x", "caller": "c"}], "last": 1}`, `at '/calls/0/time'`},
		{driversdk.VerbCallsList, "response", `{"calls": []}`, `missing property 'last'`},
		{driversdk.VerbInfo, "response", `{"protocolVersion": "v1", "provider": "p", "verbs": ["instance reboot"]}`, `at '/verbs/0'`},
		{driversdk.VerbInstanceGet, "request", `{}`, `missing property 'name'`},
		{driversdk.VerbFaultInject, "request", `{"target": "instances", "errorRate": 2}`, `at '/errorRate'`},
		{driversdk.VerbInstanceCreate, "request", `{"name": "n", "ipFamilies": ["IPv5"]}`, `at '/ipFamilies/0'`},
	}
	for _, tt := range tests {
		err := ValidateMessage(tt.kind, tt.verb, []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s %s: error %v, want one containing %q", tt.verb, tt.kind, tt.doc, err, tt.want)
		}
	}
}

// TestSchemaMatchesGoTypes: the schema names exactly the fields of the
// SDK's Go types, object by object, so neither can gain or lose a field
// without the other (the schema is written by hand, in JSON, for drivers
// in other languages; this is what keeps it true to the types).
func TestSchemaMatchesGoTypes(t *testing.T) {
	var schema struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(driversdk.SchemaV1, &schema); err != nil {
		t.Fatal(err)
	}
	// resolve follows $ref and allOf to the object definition.
	var resolve func(def map[string]any) map[string]any
	resolve = func(def map[string]any) map[string]any {
		if ref, ok := def["$ref"].(string); ok {
			return resolve(schema.Defs[strings.TrimPrefix(ref, "#/$defs/")])
		}
		if all, ok := def["allOf"].([]any); ok {
			return resolve(all[0].(map[string]any))
		}
		return def
	}
	timeType := reflect.TypeOf(time.Time{})
	var compare func(where string, typ reflect.Type, def map[string]any)
	compare = func(where string, typ reflect.Type, def map[string]any) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
			if items, ok := def["items"].(map[string]any); ok {
				def = resolve(items)
			}
		}
		if typ.Kind() != reflect.Struct || typ == timeType {
			return
		}
		props, _ := def["properties"].(map[string]any)
		var goFields, schemaFields []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			goFields = append(goFields, name)
			if sub, ok := props[name].(map[string]any); ok {
				compare(where+"/"+name, f.Type, resolve(sub))
			}
		}
		for name := range props {
			schemaFields = append(schemaFields, name)
		}
		slices.Sort(goFields)
		slices.Sort(schemaFields)
		if !slices.Equal(goFields, schemaFields) {
			t.Errorf("%s: Go type %s has fields %v; the schema names %v", where, typ, goFields, schemaFields)
		}
	}
	for _, m := range driversdk.Messages {
		for kind, v := range map[string]any{"request": m.Request, "response": m.Response} {
			name := driversdk.SchemaName(kind, m.Verb)
			def, ok := schema.Defs[name]
			if !ok {
				t.Errorf("no $defs/%s", name)
				continue
			}
			compare(name, reflect.TypeOf(v), resolve(def))
		}
	}
	// The drivers under providers/ share their own copy of the objects, in
	// a module of their own; providers/driverproto checks it against this
	// schema.
}
