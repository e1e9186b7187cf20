package drivercheck

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ccm-conformance/ccm-conformance/driversdk"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// schemaURL is the $id of the protocol's schema (driversdk/schema/v1.json).
const schemaURL = "https://github.com/ccm-conformance/ccm-conformance/driversdk/schema/v1.json"

var (
	schemaOnce sync.Once
	schemaErr  error
	schemas    map[string]*jsonschema.Schema // by $defs name
)

// compileSchemas compiles the request and response schema of every verb
// once.
func compileSchemas() (map[string]*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(driversdk.SchemaV1))
		if err != nil {
			schemaErr = fmt.Errorf("driversdk schema/v1.json: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource(schemaURL, doc); err != nil {
			schemaErr = fmt.Errorf("driversdk schema/v1.json: %w", err)
			return
		}
		schemas = map[string]*jsonschema.Schema{}
		for _, v := range driversdk.AllVerbs {
			for _, kind := range []string{"request", "response"} {
				name := driversdk.SchemaName(kind, v)
				s, err := c.Compile(schemaURL + "#/$defs/" + name)
				if err != nil {
					schemaErr = fmt.Errorf("driversdk schema/v1.json $defs/%s: %w", name, err)
					return
				}
				schemas[name] = s
			}
		}
	})
	return schemas, schemaErr
}

// ValidateMessage checks a verb's request or response (kind "request" or
// "response") against the protocol's JSON Schema. The error names the
// schema definition and the places the document breaks it.
func ValidateMessage(kind string, verb clouddriver.Verb, document []byte) error {
	all, err := compileSchemas()
	if err != nil {
		return err
	}
	name := driversdk.SchemaName(kind, verb)
	s, ok := all[name]
	if !ok {
		return fmt.Errorf("the protocol has no verb %q", verb)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(document))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	return fmt.Errorf("does not match the protocol's schema (driversdk/schema/v1.json, $defs/%s): %s", name, violations(ve))
}

// violations lists the leaves of a validation error, at most three:
// "at '/instance': missing property 'providerID'".
func violations(ve *jsonschema.ValidationError) string {
	var leaves []string
	for _, line := range strings.Split(ve.Error(), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "- at ") || strings.HasSuffix(line, ": validation failed") {
			continue
		}
		leaves = append(leaves, strings.TrimPrefix(line, "- "))
	}
	switch {
	case len(leaves) == 0:
		return strings.Join(strings.Fields(ve.Error()), " ")
	case len(leaves) > 3:
		return strings.Join(leaves[:3], "; ") + fmt.Sprintf("; and %d more", len(leaves)-3)
	}
	return strings.Join(leaves, "; ")
}
