package openai_test

import (
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/stack"
)

// TestCostMatchesTheBill: Response.Cost through the preset equals OpenAI's
// bill, worked from its price page (https://openai.com/api/pricing, per
// million tokens: GPT-4.1 input $2, cached input $0.50, output $8; o4-mini
// $1.10, $0.275, $4.40), for a chat completion whose usage is the API's
// own object (https://platform.openai.com/docs/api-reference/chat/object:
// prompt_tokens counts the cached tokens of prompt_tokens_details,
// completion_tokens the reasoning tokens of completion_tokens_details,
// "billed as output tokens":
// https://platform.openai.com/docs/guides/reasoning). OpenAI's limits count
// cached tokens, so nothing is exempt.
func TestCostMatchesTheBill(t *testing.T) {
	for _, tc := range []struct {
		name  string
		caps  portico.Capabilities
		usage string // the usage object as the API sends it
		want  portico.Usage
		bill  float64
	}{
		// 20,000 x $2 + 80,000 x $0.50 + 500 x $8.
		{"cached input", portico.Capabilities{InputPrice: 2e-6, CachedInputPrice: 0.5e-6, OutputPrice: 8e-6},
			`{"prompt_tokens":100000,"completion_tokens":500,"total_tokens":100500,"prompt_tokens_details":{"cached_tokens":80000,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
			portico.Usage{InputTokens: 100_000, OutputTokens: 500, CachedInputTokens: 80_000}, 0.084},
		// 2,000 x $1.10 + 10,000 x $4.40, 9,000 of them reasoning.
		{"reasoning output", portico.Capabilities{InputPrice: 1.1e-6, CachedInputPrice: 0.275e-6, OutputPrice: 4.4e-6},
			`{"prompt_tokens":2000,"completion_tokens":10000,"total_tokens":12000,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":9000,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
			portico.Usage{InputTokens: 2_000, OutputTokens: 10_000, ReasoningTokens: 9_000}, 0.0462},
		// 10,000 x $2 + 2,000 x $8.
		{"plain input and output", portico.Capabilities{InputPrice: 2e-6, CachedInputPrice: 0.5e-6, OutputPrice: 8e-6},
			`{"prompt_tokens":10000,"completion_tokens":2000,"total_tokens":12000,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
			portico.Usage{InputTokens: 10_000, OutputTokens: 2_000}, 0.036},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				answer := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"Done.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":`+tc.usage+`,"service_tier":"default","system_fingerprint":"fp_fc9f1d7035"}`)
				})
				_, m := startPipe(t, fakeopenai.Config{Handler: answer})
				s, err := stack.New(stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "openai", Model: m, ModelName: "gpt-4.1", Capabilities: tc.caps}}}})
				if err != nil {
					t.Fatal(err)
				}
				resp, err := s.Generate(t.Context(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, MaxOutputTokens: 16_000})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Usage != tc.want || math.Round(resp.Cost*1e8) != math.Round(tc.bill*1e8) {
					t.Errorf("Usage %+v, Cost $%.10f; want %+v, the bill $%g", resp.Usage, resp.Cost, tc.want, tc.bill)
				}
			})
		})
	}
}

// TestPromptCacheKey: a request with a cache breakpoint and a session
// carries prompt_cache_key, the session's Identity.CacheKey, the same on
// every call of the session; without a breakpoint or a session, or with
// the caller's own key in Extra, the adapter sets none of its own.
func TestPromptCacheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, m := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m"}}})
		marked := portico.Text(portico.RoleSystem, "rules")
		marked.Cache = portico.Cache5m
		key := portico.Identity{SessionID: "conversation-7"}.CacheKey()
		for _, tc := range []struct {
			req  portico.Request
			want string // the body's prompt_cache_key member, or "" for none
		}{
			{portico.Request{Messages: []portico.Message{marked}, Identity: portico.Identity{SessionID: "conversation-7"}}, `"prompt_cache_key":"` + key + `"`},
			{portico.Request{Messages: []portico.Message{portico.Text(portico.RoleSystem, "rules")}, Identity: portico.Identity{SessionID: "conversation-7"}}, ""},
			{portico.Request{Messages: []portico.Message{marked}}, ""},
			{portico.Request{Messages: []portico.Message{marked}, Identity: portico.Identity{SessionID: "conversation-7"}, Extra: map[string]any{"prompt_cache_key": "mine"}}, `"prompt_cache_key":"mine"`},
		} {
			tc.req.Model = "m"
			tc.req.Messages = append(tc.req.Messages, portico.Text(portico.RoleUser, "hi"))
			if _, err := m.Generate(t.Context(), &tc.req); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			body := string(reqs[len(reqs)-1].Body)
			if got := strings.Count(body, "prompt_cache_key"); tc.want == "" && got != 0 || tc.want != "" && !strings.Contains(body, tc.want) {
				t.Errorf("body %s, want prompt_cache_key %q", body, tc.want)
			}
		}
	})
}
