package openai

import (
	"testing"

	"github.com/portico-llm/portico"
)

func TestClassifyStatus(t *testing.T) {
	cases := []struct {
		status      int
		code, retry string
		want        portico.Class
	}{
		{429, "rate_limit_exceeded", "", portico.RateLimited},
		{429, "", "true", portico.RateLimited},
		{429, "", "false", portico.Permanent},
		{400, "context_length_exceeded", "", portico.Incompatible},
		{400, "context_length_exceeded", "false", portico.Incompatible},
		{400, "context_length_exceeded", "true", portico.Transient},
		{400, "", "", portico.Permanent},
		{401, "invalid_api_key", "", portico.Permanent},
		{403, "", "", portico.Permanent},
		{404, "model_not_found", "", portico.Permanent},
		{422, "", "", portico.Permanent},
		{404, "", "true", portico.Transient},
		{408, "", "", portico.Transient},
		{409, "", "", portico.Transient},
		{500, "", "", portico.Transient},
		{502, "", "", portico.Transient},
		{503, "", "", portico.Transient},
		{504, "", "", portico.Transient},
		{529, "", "", portico.Transient},
		{503, "", "false", portico.Permanent},
		{503, "", "maybe", portico.Transient},
	}
	for _, c := range cases {
		if got, _ := classifyStatus(c.status, c.code, c.retry); got != c.want {
			t.Errorf("classifyStatus(%d, %q, %q) = %v, want %v", c.status, c.code, c.retry, got, c.want)
		}
	}
}

func TestClassifyEvent(t *testing.T) {
	cases := []struct {
		typ, code, msg string
		want           portico.Class
	}{
		{"server_error", "overloaded", "Overloaded", portico.Transient},
		{"overloaded_error", "", "Overloaded", portico.Transient},
		{"invalid_request_error", "context_length_exceeded", "", portico.Incompatible},
		{"invalid_request_error", "", "prompt is too long: 210000 tokens > 200000 maximum", portico.Incompatible},
		{"invalid_request_error", "", "This model's maximum context length is 8192 tokens", portico.Incompatible},
		{"invalid_request_error", "", "bad field", portico.Permanent},
		{"rate_limit_error", "", "", portico.RateLimited},
		{"tokens", "rate_limit_exceeded", "", portico.RateLimited},
		{"", "502", "upstream", portico.Transient},
		{"", "429", "", portico.RateLimited},
		{"", "401", "", portico.Permanent},
		{"", "", "", portico.Transient},
		{"mystery", "mystery", "", portico.Transient},
	}
	for _, c := range cases {
		if got, _ := classifyEvent(c.typ, c.code, c.msg); got != c.want {
			t.Errorf("classifyEvent(%q, %q, %q) = %v, want %v", c.typ, c.code, c.msg, got, c.want)
		}
	}
}

func TestParseEventNumericCode(t *testing.T) {
	pe := parseEvent([]byte(`{"error":{"message":"m","type":"t","code":502,"param":null}}`))
	if pe.Code != "502" || pe.Type != "t" || pe.Param != "" || !pe.InStream || pe.Status != 200 {
		t.Errorf("parseEvent = %+v, want code 502 type t in stream status 200", pe)
	}
}
