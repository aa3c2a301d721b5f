package openai_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/openai"
)

// Shapes real OpenAI-compatible servers send that the dialect table did not
// cover, each with its source.

// OpenRouter answers 403 when the model's provider requires moderation and
// the prompt was flagged (openrouter.ai/docs/api-reference/errors: "403:
// Your chosen model requires moderation and your input was flagged", with
// metadata reasons, flagged_input, provider_name, model_slug; the message
// as quoted in many clients' tests: "<model> requires moderation on
// <provider>. Your input was flagged for \"violence\". No credits were
// charged."). The request is at fault, not the route's key: another route
// (another model or provider) may answer it, and no breaker should count it.
func TestOpenRouterModeration403(t *testing.T) {
	m := raw(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":{"code":403,"message":"openai/gpt-4o requires moderation on OpenAI. Your input was flagged for \"harassment\". No credits were charged.","metadata":{"reasons":["harassment"],"flagged_input":"you are a...","provider_name":"OpenAI","model_slug":"openai/gpt-4o"}}}`))
	})
	_, err := m.Generate(context.Background(), userReq("m", "hi"))
	e := asError(t, err)
	if e.Class != portico.Incompatible || e.Reason != "content filtered" || e.Class.RouteFault() {
		t.Errorf("Generate error = %v (class %v, reason %q), want Incompatible \"content filtered\", no route fault", err, e.Class, e.Reason)
	}
}
