package anthropic_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/anthropic"
)

// canned is an in-memory transport answering every request with one
// response, so that fuzzing runs the real SDK's decoding without sockets.
type canned struct {
	status      int
	contentType string
	body        []byte
}

func (c *canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {c.contentType}},
		Body: io.NopCloser(bytes.NewReader(c.body)), Request: r}, nil
}

func cannedModel(c *canned) *anthropic.Model {
	return anthropic.New(anthropic.Config{MaxResponseBytes: 1 << 20}, option.WithBaseURL("http://fuzz.test/"), option.WithAPIKey("k"),
		option.WithHTTPClient(&http.Client{Transport: c}))
}

// checkOutcome checks what every answer must be, whatever the body: a
// Response xor a classified *portico.Error; an InvalidResponse wraps
// ErrMalformed or ErrTooLarge; an answer has a finish reason, no negative
// count, and its streamed chunks add up to its text.
func checkOutcome(t *testing.T, resp *portico.Response, err error, chunks string, streamed bool) {
	t.Helper()
	if (resp == nil) == (err == nil) {
		t.Fatalf("Generate = %v, %v; want a Response xor an error", resp, err)
	}
	if err != nil {
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class == portico.OK || pe.Class == portico.Canceled || pe.Class == portico.Deadline {
			t.Fatalf("Generate error = %v (%T), want a classified *portico.Error", err, err)
		}
		if pe.Class == portico.InvalidResponse && !errors.Is(err, anthropic.ErrMalformed) && !errors.Is(err, anthropic.ErrTooLarge) {
			t.Fatalf("Generate error = %v, an InvalidResponse that wraps neither ErrMalformed nor ErrTooLarge", err)
		}
		return
	}
	u := resp.Usage
	if resp.FinishReason == "" || u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedInputTokens < 0 || u.CachedInputTokens > u.InputTokens {
		t.Fatalf("Generate = finish %q usage %+v, want a finish reason and sane counts", resp.FinishReason, u)
	}
	if streamed && chunks != resp.Text {
		t.Fatalf("chunks %q, Text %q: want them equal", chunks, resp.Text)
	}
	for _, tc := range resp.ToolCalls {
		if len(tc.Arguments) == 0 {
			t.Fatalf("tool call %q with no arguments, want at least {}", tc.ID)
		}
	}
}

// FuzzWhole feeds the SDK and the adapter arbitrary bodies of a
// non-streamed answer, under the statuses that matter.
func FuzzWhole(f *testing.F) {
	for _, b := range []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":4,"cache_read_input_tokens":2,"output_tokens":2}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9 tokens > 5 maximum"}}`,
		`{"type":"error","error":{"type":"rate_limit_error","message":"x","details":{"error_code":"enforced_spend_limit_reached"}}}`,
		`{"id":"x","content":[],"stop_reason":"end_turn","usage":{"input_tokens":-1}}`,
		`null`, `[]`, `{"content":null,"stop_reason":7}`, "<html>", "",
	} {
		for _, status := range []uint8{0, 1, 2, 3, 4} {
			f.Add(status, []byte(b))
		}
	}
	statuses := [...]int{200, 400, 429, 500, 529}
	f.Fuzz(func(t *testing.T, status uint8, body []byte) {
		c := &canned{status: statuses[int(status)%len(statuses)], contentType: "application/json", body: body}
		resp, err := cannedModel(c).Generate(context.Background(), userReq("m", "hi"))
		checkOutcome(t, resp, err, "", false)
		if err != nil && c.status >= 400 && portico.ClassOf(err) == portico.InvalidResponse {
			t.Fatalf("status %d: Generate error = %v, want the status's class, not invalid_response", c.status, err)
		}
	})
}

// FuzzStream feeds the SDK's event-stream decoder and the adapter's
// assembly arbitrary streams.
func FuzzStream(f *testing.F) {
	ev := func(events ...string) string {
		var b strings.Builder
		for _, e := range events {
			b.WriteString(sseEvent(e))
		}
		return b.String()
	}
	for _, s := range []string{
		ev(evStart, textStart, ping, textDelta(0, "Hel"), textDelta(0, "lo"), blockStop(0), msgDelta("end_turn", 7), evStop),
		ev(evStart, blockStart(0, `{"type":"tool_use","id":"toolu_a","name":"f","input":{}}`), blockDelta(0, `{"type":"input_json_delta","partial_json":"{\"a\":"}`),
			blockDelta(0, `{"type":"input_json_delta","partial_json":"1}"}`), blockStop(0), msgDelta("tool_use", 3)),
		ev(evStart, textStart, textDelta(0, "a"), overload),
		ev(evStart, "error\nnot json"),
		ev(evStart, blockStart(3, `{"type":"thinking","thinking":""}`), blockDelta(3, `{"type":"thinking_delta","thinking":"x"}`), msgDelta("refusal", 1)),
		"data: {}\n\n", "event: message_start\ndata: {\n\n", ": comment\n\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c := &canned{status: 200, contentType: "text/event-stream", body: body}
		req := userReq("m", "hi")
		var chunks strings.Builder
		req.OnChunk = func(ch portico.Chunk) error { chunks.WriteString(ch.Text); return nil }
		resp, err := cannedModel(c).Generate(context.Background(), req)
		checkOutcome(t, resp, err, chunks.String(), true)
	})
}
