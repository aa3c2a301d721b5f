package anthropic

import (
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/portico-llm/portico"
)

// The messages are those users meet (https://docs.claude.com/en/api/errors
// and the SDK's error codes); classifyError reads them lower-cased.
func TestClassifyError(t *testing.T) {
	cases := []struct {
		status         int
		typ, code, msg string
		retry          string
		want           portico.Class
		reason         string
	}{
		{529, "overloaded_error", "", "Overloaded", "", portico.Transient, "overloaded"},
		{529, "", "", "", "", portico.Transient, "overloaded"},
		{200, "overloaded_error", "", "Overloaded", "", portico.Transient, "overloaded"},
		{500, "api_error", "", "Internal server error", "", portico.Transient, "server error"},
		{504, "timeout_error", "", "", "", portico.Transient, "server error"},
		{502, "", "", "", "", portico.Transient, "server error"},
		{409, "conflict_error", "", "", "", portico.Transient, "server error"},
		{408, "", "", "", "", portico.Transient, "server error"},
		{429, "rate_limit_error", "", "Number of request tokens has exceeded your per-minute rate limit", "", portico.RateLimited, "rate limited"},
		{200, "rate_limit_error", "", "", "", portico.RateLimited, "rate limited"},
		{429, "rate_limit_error", "enforced_spend_limit_reached", "", "", portico.Unusable, "spend limit reached"},
		{429, "rate_limit_error", "contract_spend_limit_reached", "", "", portico.Unusable, "spend limit reached"},
		{400, "invalid_request_error", "", "Your credit balance is too low to access the Anthropic API.", "", portico.Unusable, "spend limit reached"},
		{400, "invalid_request_error", "", "You have reached your specified API usage limits. You will regain access on 2026-12-01.", "", portico.Unusable, "spend limit reached"},
		{413, "request_too_large", "", "Request exceeds the maximum allowed number of bytes.", "", portico.Incompatible, "request too large"},
		{413, "", "", "", "", portico.Incompatible, "request too large"},
		{400, "invalid_request_error", "", "prompt is too long: 208656 tokens > 200000 maximum", "", portico.Incompatible, "context window"},
		{200, "invalid_request_error", "", "prompt is too long: 208656 tokens > 200000 maximum", "", portico.Incompatible, "context window"},
		{400, "invalid_request_error", "", "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again", "", portico.Incompatible, "context window"},
		{400, "invalid_request_error", "", "max_tokens: 128000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929", "", portico.Incompatible, "max tokens above the model's limit"},
		{400, "invalid_request_error", "", "messages.0.content: Input should be a valid list", "", portico.Incompatible, "request refused"},
		{400, "", "", "", "", portico.Incompatible, "request refused"},
		{422, "", "", "", "", portico.Incompatible, "request refused"},
		// A system-only conversation: OpenAI serves it, another route may.
		{400, "invalid_request_error", "", "messages: at least one message is required", "", portico.Incompatible, "request refused"},
		{200, "invalid_request_error", "", "bad field", "", portico.Incompatible, "request refused"},
		{401, "authentication_error", "", "invalid x-api-key", "", portico.Unusable, "credentials refused"},
		{402, "billing_error", "", "", "", portico.Unusable, "billing refused"},
		{403, "permission_error", "", "Your API key does not have permission to use the specified resource.", "", portico.Unusable, "permission refused"},
		{404, "not_found_error", "", "model: claude-nope", "", portico.Unusable, "model not found"},
		{200, "authentication_error", "", "", "", portico.Unusable, "credentials refused"},
		{200, "", "", "", "", portico.Transient, "stream error"},
		{200, "mystery_error", "", "", "", portico.Transient, "stream error"},
		{400, "", "", "", "true", portico.Transient, "request refused (x-should-retry: true)"},
		{401, "", "", "", "true", portico.Transient, "credentials refused (x-should-retry: true)"},
		{400, "invalid_request_error", "", "prompt is too long: 2 tokens > 1 maximum", "true", portico.Incompatible, "context window"},
		{503, "", "", "", "false", portico.Incompatible, "server error (x-should-retry: false)"},
		{429, "", "", "", "false", portico.Incompatible, "rate limited (x-should-retry: false)"},
		{400, "", "", "", "false", portico.Incompatible, "request refused"},
		{503, "", "", "", "maybe", portico.Transient, "server error"},
	}
	for _, c := range cases {
		got, reason, _ := classifyError(c.status, c.typ, c.code, c.msg, c.retry, nil)
		if got != c.want || reason != c.reason {
			t.Errorf("classifyError(%d, %q, %q, %q, %q) = %v %q, want %v %q", c.status, c.typ, c.code, c.msg, c.retry, got, reason, c.want, c.reason)
		}
	}
}

func TestFinishReason(t *testing.T) {
	for in, want := range map[string]portico.FinishReason{
		"end_turn": portico.FinishStop, "stop_sequence": portico.FinishStop,
		"max_tokens": portico.FinishLength, "model_context_window_exceeded": portico.FinishLength,
		"tool_use": portico.FinishToolCalls, "refusal": portico.FinishContentFilter,
		"pause_turn": "pause_turn", "something_new": "something_new",
	} {
		if got := finishReason(sdk.StopReason(in)); got != want {
			t.Errorf("finishReason(%q) = %q, want %q", in, got, want)
		}
	}
}
