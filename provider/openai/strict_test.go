package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/stack"
	"github.com/portico-llm/portico/validate"
)

// notStrict has two problems in OpenAI's strict subset: "b" is not in
// required, and minLength is outside the subset.
const notStrict = `{"type": "object", "additionalProperties": false, "required": ["a"],
  "properties": {"a": {"type": "string", "minLength": 1}, "b": {"type": "string"}}}`

const notStrictError = "portico: incompatible model m: strict schema: validate: schema outside the strict subset: " +
	"2 problems: required at /properties/b, keyword at /properties/a/minLength"

func strictReq(model string, strict bool) *portico.Request {
	req := userReq(model, "hello")
	req.Schema = &portico.Schema{Name: "s", JSON: json.RawMessage(notStrict), Strict: strict}
	return req
}

// wantNotStrict fails the test unless err refuses the strict schema as
// Incompatible, nothing sent, naming both problems.
func wantNotStrict(t *testing.T, err error) {
	t.Helper()
	var pe *portico.Error
	var se *validate.StrictError
	if portico.ClassOf(err) != portico.Incompatible || !errors.As(err, &pe) || !pe.NotSent ||
		!errors.Is(err, validate.ErrNotStrict) || !errors.As(err, &se) || len(se.Problems) != 2 {
		t.Fatalf("err = %v, want Incompatible, NotSent, a StrictError of 2 problems", err)
	}
	if se.Problems[0].Rule != validate.StrictRequired || se.Problems[1].Rule != validate.StrictKeyword {
		t.Errorf("problems = %+v, want required then keyword", se.Problems)
	}
}

// A strict schema outside OpenAI's subset is refused before sending, every
// problem named; the same schema, not strict, is sent.
func TestStrictSchemaOutsideTheSubsetSendsNothing(t *testing.T) {
	s, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m"}}}, openai.Config{})
	_, err := m.Generate(context.Background(), strictReq("m", true))
	wantNotStrict(t, err)
	if err.Error() != notStrictError {
		t.Errorf("err = %q, want %q", err, notStrictError)
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests sent, want none", n)
	}
	if _, err := m.Generate(context.Background(), strictReq("m", false)); err != nil {
		t.Fatalf("the schema not strict: %v", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests sent, want 1", n)
	}
}

// Through the preset: OpenAI's strict subset is OpenAI's, so the refusal
// is this route's (Incompatible), not the request's everywhere: with one
// route the caller gets it, every problem named; with a second route whose
// strict mode is another provider's, that route answers. Neither calls
// OpenAI or opens its breaker.
func TestPresetStrictSchemaOutsideTheSubset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sa, a := provider(t, "openai", fakeopenai.ModelConfig{Name: "a"})
		one := preset(t, stack.Config{}, a)
		_, err := one.Generate(context.Background(), strictReq("a", true))
		wantNotStrict(t, err)

		other := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: `{"a": "x"}`, FinishReason: portico.FinishStop}})
		b := []stack.Route{{Route: portico.Route{Name: "b", Model: other,
			Capabilities: portico.Capabilities{Provider: "anthropic", Schema: portico.SchemaStrict}}}}
		two := preset(t, stack.Config{}, a, b)
		for range 5 {
			resp, err := two.Generate(context.Background(), strictReq("", true))
			if err != nil || resp.Route != "b" {
				t.Fatalf("Generate = %+v, %v; want b's answer", resp, err)
			}
		}
		if n := len(sa.Requests()); n != 0 {
			t.Errorf("%d requests reached OpenAI, want none", n)
		}
		if st := two.Breaker("a").State(); st != breaker.Closed {
			t.Errorf("a's breaker = %v, want closed", st)
		}
	})
}
