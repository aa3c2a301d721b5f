package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/openai"
)

// TestFinishReasonErrorWithoutErrorObject: a choice that ends with
// finish_reason "error" but carries no error object. choiceError parses the
// whole choice as an error body, and parseErrorBody takes its "message" key
// (the assistant's message, the answer) for the error's message: the
// answer's own words are then classified as the provider's error (an
// answer that says "unauthorized" becomes Unusable, which opens the route's
// breaker at once) and, with IncludeProviderMessage, the answer text goes
// into the error. Only the choice's "error" field is the error; without
// one, the failure is Transient, an error inside a 200 answer.
func TestFinishReasonErrorWithoutErrorObject(t *testing.T) {
	m := raw(t, openai.Config{IncludeProviderMessage: true}, body(`{"id":"gen-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Requests without a token are rejected as unauthorized"},"finish_reason":"error"}]}`))
	resp, err := m.Generate(context.Background(), userReq("m", "hi"))
	if resp != nil || err == nil {
		t.Fatalf("Generate = %+v, %v; want an error", resp, err)
	}
	if e := asError(t, err); e.Class != portico.Transient {
		t.Errorf("Generate error = %v, want Transient: the answer's words are not the provider's error", err)
	}
	if strings.Contains(err.Error(), "without a token") {
		t.Errorf("Generate error = %q, carries the answer's text", err)
	}
}
