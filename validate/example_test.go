package validate_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/validate"
)

func Example() {
	type invoice struct {
		Currency string  `json:"currency"`
		Total    float64 `json:"total"`
	}
	v := validate.MustNew(validate.Config{
		Semantic: []validate.Check{validate.Typed(func(inv invoice) []validate.Violation {
			if inv.Total < 0 {
				return []validate.Violation{{Pointer: validate.Pointer("total"), Rule: "total_non_negative"}}
			}
			return nil
		})},
	})
	model := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: `{"currency":"eur","total":-3}`, FinishReason: portico.FinishStop}, nil
	})
	req := &portico.Request{Schema: &portico.Schema{Name: "invoice", JSON: []byte(`{
		"type": "object",
		"required": ["currency", "total", "number"],
		"properties": {"currency": {"enum": ["EUR", "USD"]}, "total": {"type": "number"}}
	}`)}}

	_, err := v.Wrap(model).Generate(context.Background(), req)
	fmt.Println(portico.ClassOf(err))
	var r *validate.Rejection
	if errors.As(err, &r) {
		for _, vi := range r.Violations {
			fmt.Println(vi)
		}
	}
	// Output:
	// invalid_response
	// schema enum at /currency
	// schema required at /number
	// semantic total_non_negative at /total
}

func ExampleStrictCompatible() {
	for _, p := range validate.StrictCompatible([]byte(`{
		"type": "object",
		"properties": {"name": {"type": "string"}, "nick": {"type": "string", "minLength": 2}},
		"required": ["name"]
	}`)) {
		fmt.Println(p.Rule, p.Pointer, p.Detail)
	}
	// Output:
	// additional_properties  "additionalProperties": false missing
	// required /properties/nick property "nick" not in required
	// keyword /properties/nick/minLength minLength
}
