package openai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/openai"
)

func fuzzResponses(contentType string, body []byte) *openai.Responses {
	return openai.NewResponses(openai.ResponsesConfig{MaxResponseBytes: 1 << 20}, option.WithBaseURL("http://fuzz.invalid/v1/"), option.WithAPIKey("k"),
		option.WithHTTPClient(&http.Client{Transport: roundTrip{contentType, body}}))
}

// fuzzResponsesCall runs one call of m and checks the Model contract on
// it: an answer XOR a *portico.Error of a known class, and a streamed
// answer's chunks adding up to its Text.
func fuzzResponsesCall(t *testing.T, m *openai.Responses, stream bool) {
	req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Reasoning: &portico.Reasoning{Stream: true}}
	var text strings.Builder
	if stream {
		req.OnChunk = func(c portico.Chunk) error { text.WriteString(c.Text); return nil }
	}
	resp, err := m.Generate(context.Background(), req)
	var pe *portico.Error
	switch {
	case (resp == nil) == (err == nil):
		t.Fatalf("Generate = %v, %v: want an answer XOR an error", resp, err)
	case err != nil && (!errors.As(err, &pe) || pe.Class == portico.OK):
		t.Fatalf("Generate error %v (class %v), want a classified *portico.Error", err, portico.ClassOf(err))
	case err == nil && stream && text.String() != resp.Text:
		t.Fatalf("chunks %q, Text %q: want the same", text.String(), resp.Text)
	}
}

// FuzzResponsesAnswer feeds arbitrary bodies to a non-streamed call.
func FuzzResponsesAnswer(f *testing.F) {
	f.Add(`{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"e"},{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]},{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{}","status":"completed"}],"usage":{"input_tokens":1,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":2}}`)
	f.Add(`{"id":"resp_1","status":"failed","model":"m","output":[],"error":{"code":"server_error","message":"x"}}`)
	f.Add(`{"id":"resp_1","status":"incomplete","model":"m","output":[],"incomplete_details":{"reason":"content_filter"}}`)
	f.Add(`{"id":1,"status":[],"usage":{"input_tokens":"1"}}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, body string) {
		fuzzResponsesCall(t, fuzzResponses("application/json", []byte(body)), false)
	})
}

// FuzzResponsesStream feeds arbitrary event streams to a streamed call.
func FuzzResponsesStream(f *testing.F) {
	f.Add("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n" +
		"data: {\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"think\"}\n\n" +
		"data: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n" +
		"data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\"}}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"model\":\"m\",\"output\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	f.Add("data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}\n\n")
	f.Add("data: {\"type\":\"response.failed\",\"response\":{\"id\":\"r\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\"},\"usage\":{\"input_tokens\":3}}}\n\n")
	f.Add("data: {\"type\":\"response.output_text.delta\",\"delta\":7}\n\n")
	f.Add("data: {\"error\":{\"message\":\"x\"}}\n\n")
	f.Add("data: {\"type\":\"response.output_text.delta\",\"delta\":\"cut")
	f.Fuzz(func(t *testing.T, body string) {
		fuzzResponsesCall(t, fuzzResponses("text/event-stream", []byte(body)), true)
	})
}
