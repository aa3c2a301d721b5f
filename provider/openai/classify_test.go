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
		{429, "", "false", portico.Incompatible}, // advice about the request: no retry, no breaker
		{429, "insufficient_quota", "", portico.Unusable},
		{400, "context_length_exceeded", "", portico.Incompatible},
		{400, "context_length_exceeded", "false", portico.Incompatible},
		{400, "context_length_exceeded", "true", portico.Transient},
		{400, "", "", portico.Incompatible}, // this provider refused it; another may not
		{401, "invalid_api_key", "", portico.Unusable},
		{402, "", "", portico.Unusable},
		{403, "", "", portico.Unusable},
		{404, "model_not_found", "", portico.Unusable},
		{413, "", "", portico.Incompatible},
		{422, "", "", portico.Incompatible},
		{404, "", "true", portico.Unusable}, // Unusable is not Retryable, but x-should-retry: true makes it Transient below
		{408, "", "", portico.Transient},
		{409, "", "", portico.Transient},
		{424, "", "", portico.Transient},
		{498, "", "", portico.Transient},
		{500, "", "", portico.Transient},
		{502, "", "", portico.Transient},
		{503, "", "", portico.Transient},
		{504, "", "", portico.Transient},
		{529, "", "", portico.Transient},
		{503, "", "false", portico.Incompatible},
		{503, "", "maybe", portico.Transient},
	}
	for _, c := range cases {
		want := c.want
		if c.retry == "true" && !want.Retryable() {
			want = portico.Transient
		}
		if got, _, _ := classifyStatus(c.status, errorFields{Code: c.code}, c.retry, nil); got != want {
			t.Errorf("classifyStatus(%d, %q, %q) = %v, want %v", c.status, c.code, c.retry, got, want)
		}
	}
}

func TestClassifyEvent(t *testing.T) {
	cases := []struct {
		f    errorFields
		want portico.Class
	}{
		{errorFields{Type: "server_error", Code: "overloaded", Message: "Overloaded"}, portico.Transient},
		{errorFields{Type: "overloaded_error", Message: "Overloaded"}, portico.Transient},
		{errorFields{Type: "invalid_request_error", Code: "context_length_exceeded"}, portico.Incompatible},
		{errorFields{Type: "invalid_request_error", Message: "prompt is too long: 210000 tokens > 200000 maximum"}, portico.Incompatible},
		{errorFields{Type: "invalid_request_error", Message: "This model's maximum context length is 8192 tokens"}, portico.Incompatible},
		// A numeric code does not hide a message the adapter knows.
		{errorFields{Type: "BadRequestError", Code: "400", Status: 400, Message: "This model's maximum context length is 4096 tokens."}, portico.Incompatible},
		{errorFields{Type: "invalid_request_error", Message: "bad field"}, portico.Incompatible},
		{errorFields{Type: "rate_limit_error"}, portico.RateLimited},
		{errorFields{Type: "tokens", Code: "rate_limit_exceeded"}, portico.RateLimited},
		{errorFields{Code: "502", Status: 502, Message: "upstream"}, portico.Transient},
		{errorFields{Code: "429", Status: 429}, portico.RateLimited},
		{errorFields{Code: "401", Status: 401}, portico.Unusable},
		{errorFields{Type: "InternalServerError", Code: "500", Status: 500}, portico.Transient},
		{errorFields{}, portico.Transient},
		{errorFields{Type: "mystery", Code: "mystery"}, portico.Transient},
	}
	for _, c := range cases {
		if got, _ := classifyEvent(c.f); got != c.want {
			t.Errorf("classifyEvent(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	cases := []struct {
		body string
		want errorFields
	}{
		{`{"error":{"message":"m","type":"t","code":502,"param":null}}`, errorFields{Message: "m", Type: "t", Code: "502", Status: 502, Found: true}},
		{`{"error":{"message":"m","type":"t","code":"c","param":"p"}}`, errorFields{Message: "m", Type: "t", Code: "c", Param: "p", Found: true}},
		{`{"error":"Model is overloaded","error_type":"overloaded"}`, errorFields{Message: "Model is overloaded", Type: "overloaded", Found: true}},
		{`{"object":"error","message":"m","type":"BadRequestError","param":null,"code":400}`, errorFields{Message: "m", Type: "BadRequestError", Code: "400", Status: 400, Found: true}},
		{`{"error":{"message":"m","http_status_code":422}}`, errorFields{Message: "m", Status: 422, Found: true}},
		{`{"statusCode":401,"message":"Unauthorized"}`, errorFields{Message: "Unauthorized", Code: "", Status: 401, Found: true}},
		{`{"detail":"Not Found"}`, errorFields{Message: "Not Found", Found: true}},
		{`{"error":null}`, errorFields{}},
		{`{"id":"x","choices":[]}`, errorFields{}},
		{`not json`, errorFields{}},
		{`null`, errorFields{}},
	}
	for _, c := range cases {
		if got := parseErrorBody([]byte(c.body)); got != c.want {
			t.Errorf("parseErrorBody(%s) = %+v, want %+v", c.body, got, c.want)
		}
	}
}
