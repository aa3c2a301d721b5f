package validate

import (
	"errors"
	"testing"

	"github.com/portico-llm/portico"
)

// Each draft is read with its own semantics: "$schema" names it; without
// one a schema is read as 2020-12, or, when it is no valid 2020-12 schema,
// as the newest earlier draft it is valid under. "format" is an annotation
// in every draft unless Config.AssertFormat asserts it.
func TestDraftSemantics(t *testing.T) {
	const (
		d4   = `"$schema": "http://json-schema.org/draft-04/schema#", `
		d7   = `"$schema": "http://json-schema.org/draft-07/schema#", `
		d19  = `"$schema": "https://json-schema.org/draft/2019-09/schema", `
		d20  = `"$schema": "https://json-schema.org/draft/2020-12/schema", `
		ref  = `"definitions": {"a": {"type": "integer"}}, "properties": {"x": {"$ref": "#/definitions/a", "maximum": 1}}}`
		date = `"type": "string", "format": "date-time"}`
	)
	tests := []struct {
		name   string
		schema string
		answer string
		assert bool // Config.AssertFormat
		valid  bool
	}{
		{"2020-12 by default: prefixItems", `{"prefixItems": [{"type": "integer"}], "items": false}`, `[1]`, false, true},
		{"2020-12 by default: items false", `{"prefixItems": [{"type": "integer"}], "items": false}`, `[1, 2]`, false, false},
		{"2020-12 by default: $ref siblings apply", `{` + ref, `{"x": 5}`, false, false},
		{"draft 7: $ref siblings ignored", `{` + d7 + ref, `{"x": 5}`, false, true},
		{"draft 7 tuple without $schema", `{"items": [{"type": "integer"}], "additionalItems": false}`, `[1]`, false, true},
		{"draft 7 tuple without $schema: additionalItems", `{"items": [{"type": "integer"}], "additionalItems": false}`, `[1, 2]`, false, false},
		{"draft 4 exclusiveMinimum without $schema", `{"type": "number", "minimum": 0, "exclusiveMinimum": true}`, `0`, false, false},
		{"draft 4 exclusiveMinimum without $schema: above", `{"type": "number", "minimum": 0, "exclusiveMinimum": true}`, `0.5`, false, true},
		{"draft 4 exclusiveMinimum", `{` + d4 + `"type": "number", "minimum": 0, "exclusiveMinimum": true}`, `0`, false, false},
		{"draft 4 format annotation", `{` + d4 + date, `"yesterday"`, false, true},
		{"draft 7 format annotation", `{` + d7 + date, `"yesterday"`, false, true},
		{"2019-09 format annotation", `{` + d19 + date, `"yesterday"`, false, true},
		{"2020-12 format annotation", `{` + d20 + date, `"yesterday"`, false, true},
		{"draft 4 format asserted", `{` + d4 + date, `"yesterday"`, true, false},
		{"draft 7 format asserted", `{` + d7 + date, `"yesterday"`, true, false},
		{"2020-12 format asserted", `{` + d20 + date, `"yesterday"`, true, false},
		{"draft 7 format asserted: valid", `{` + d7 + date, `"2026-12-01T21:00:00Z"`, true, true},
		{"draft 7 format in a $ref", `{` + d7 + `"definitions": {"d": {` + date + `}, "items": {"$ref": "#/definitions/d"}}`, `["yesterday"]`, false, true},
	}
	for _, tt := range tests {
		v := MustNew(Config{AssertFormat: tt.assert})
		err := v.Check(schemaReq(tt.schema), answer(tt.answer))
		if errors.Is(err, ErrSchema) || (err == nil) != tt.valid {
			t.Errorf("%s: Check(%s) = %v, want valid %v", tt.name, tt.answer, err, tt.valid)
		}
	}
}

// A schema valid under no draft is refused with 2020-12's reason.
func TestDraftNone(t *testing.T) {
	err := MustNew(Config{}).Prepare(schemaReq(`{"type": "objekt"}`))
	if !errors.Is(err, ErrSchema) || portico.ClassOf(err) != portico.Permanent {
		t.Fatalf("Prepare(type objekt) = %v, want a Permanent ErrSchema", err)
	}
}
