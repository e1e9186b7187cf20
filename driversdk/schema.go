package driversdk

import (
	_ "embed"
	"strings"
)

// SchemaV1 is schema/v1.json: the JSON Schema (2020-12) of every verb's
// request and response, under $defs named by SchemaName. Drivers in other
// languages can validate against the file itself; validate-driver checks
// every answer against it.
//
//go:embed schema/v1.json
var SchemaV1 []byte

// GoldenFile names a verb's example request or response (kind "request"
// or "response") in the SDK's testdata/golden: "instance-get.request.json".
// Every one validates against SchemaV1 and decodes into Messages' types.
func GoldenFile(kind string, v Verb) string {
	return strings.ReplaceAll(string(v), " ", "-") + "." + kind + ".json"
}
