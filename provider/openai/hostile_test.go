package openai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

// These tests run the real SDK over loopback HTTP against hand-written
// handlers, served by the fake server's Config.Handler, that send what no
// Fault describes: endless or interleaved answers.

// raw serves h over loopback and returns a Model pointed at it.
func raw(t *testing.T, cfg openai.Config, h http.HandlerFunc) *openai.Model {
	t.Helper()
	s, err := fakeopenai.Start(fakeopenai.Config{Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return openai.New(cfg, option.WithBaseURL(s.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(s.Client()))
}

// sse answers with the given data events, each flushed, and nothing else.
func sse(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			_, _ = w.Write([]byte("data: " + e + "\n\n"))
			w.(http.Flusher).Flush()
		}
	}
}

// body answers 200 with a JSON body.
func body(b string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(b))
	}
}

// chunk is a chat.completion.chunk with the given choices JSON.
func chunk(choices string) string {
	return `{"id":"chatcmpl-raw","object":"chat.completion.chunk","created":1,"model":"m","choices":` + choices + `}`
}

func delta(d string) string { return chunk(`[{"index":0,"delta":` + d + `,"finish_reason":null}]`) }

func finish(reason string) string {
	return chunk(`[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]`)
}

// stream runs req streamed, collecting the chunks' texts and counting them.
func stream(t *testing.T, m *openai.Model, ctx context.Context) (*portico.Response, []string, error) {
	t.Helper()
	req := userReq("m", "hi")
	var got []string
	req.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
	resp, err := m.Generate(ctx, req)
	return resp, got, err
}

// Several parallel tool calls whose deltas interleave are assembled by index.
func TestParallelToolCallsInterleaved(t *testing.T) {
	m := raw(t, openai.Config{}, sse(
		delta(`{"role":"assistant","content":null}`),
		delta(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`),
		delta(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]}`),
		delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`),
		delta(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":"}},{"index":0,"function":{"arguments":"\"Rome\"}"}}]}`),
		delta(`{"tool_calls":[{"index":1,"function":{"arguments":"\"CET\"}"}}]}`),
		finish("tool_calls"), "[DONE]"))
	resp, chunks, err := stream(t, m, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []portico.ToolCall{
		{ID: "call_a", Name: "get_weather", Arguments: []byte(`{"city":"Rome"}`)},
		{ID: "call_b", Name: "get_time", Arguments: []byte(`{"tz":"CET"}`)},
	}
	if len(resp.ToolCalls) != 2 || resp.FinishReason != portico.FinishToolCalls {
		t.Fatalf("Generate = %d tool calls, finish %q; want 2, tool_calls", len(resp.ToolCalls), resp.FinishReason)
	}
	for i, w := range want {
		g := resp.ToolCalls[i]
		if g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) {
			t.Errorf("ToolCalls[%d] = %q %q %s, want %q %q %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
	// One progress chunk per tool-call delta (six), none with text.
	if len(chunks) != 6 || strings.Join(chunks, "") != "" {
		t.Errorf("chunks = %q, want 6 empty progress chunks", chunks)
	}
}

// The same two calls in a non-streamed answer.
func TestParallelToolCallsWhole(t *testing.T) {
	m := raw(t, openai.Config{}, body(`{"id":"chatcmpl-raw","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[`+
		`{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}},`+
		`{"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"CET\"}"}}]}}]}`))
	resp, err := m.Generate(context.Background(), userReq("m", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "call_a" || resp.ToolCalls[1].Name != "get_time" || string(resp.ToolCalls[1].Arguments) != `{"tz":"CET"}` {
		t.Errorf("ToolCalls = %+v, want call_a get_weather and call_b get_time", resp.ToolCalls)
	}
}

// A tool call index that jumps to 127 is accepted without 126 empty calls in
// between; 128 and -1 are out of range.
func TestToolCallIndexJump(t *testing.T) {
	m := raw(t, openai.Config{}, sse(
		delta(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}`),
		delta(`{"tool_calls":[{"index":127,"id":"call_z","type":"function","function":{"name":"g","arguments":"[]"}}]}`),
		finish("tool_calls"), "[DONE]"))
	resp, _, err := stream(t, m, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "call_a" || resp.ToolCalls[1].ID != "call_z" || string(resp.ToolCalls[1].Arguments) != "[]" {
		t.Errorf("ToolCalls = %+v, want call_a then call_z and nothing between", resp.ToolCalls)
	}
	for _, idx := range []string{"128", "-1", "100000000000"} {
		m := raw(t, openai.Config{}, sse(
			delta(`{"tool_calls":[{"index":`+idx+`,"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}`),
			finish("tool_calls"), "[DONE]"))
		_, _, err := stream(t, m, context.Background())
		if portico.ClassOf(err) != portico.InvalidResponse || !errors.Is(err, openai.ErrMalformed) {
			t.Errorf("index %s: Generate error = %v, want invalid_response wrapping ErrMalformed", idx, err)
		}
	}
}

// Invalid UTF-8 passes through byte for byte, and the chunks still add up.
func TestNonUTF8Content(t *testing.T) {
	m := raw(t, openai.Config{}, sse(delta("{\"content\":\"a\xe2\x82\"}"), delta("{\"content\":\"\xac\xffb\"}"), finish("stop"), "[DONE]"))
	resp, chunks, err := stream(t, m, context.Background())
	const want = "a\xe2\x82\xac\xffb" // a, the euro sign split across chunks, a stray 0xff, b
	if err != nil || resp.Text != want || strings.Join(chunks, "") != want {
		t.Errorf("Generate = %q (chunks %q), %v; want %q", respText(resp), chunks, err, want)
	}
	m = raw(t, openai.Config{}, body("{\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"a\xff\xfeb\"},\"finish_reason\":\"stop\"}]}"))
	resp, err = m.Generate(context.Background(), userReq("m", "hi"))
	if err != nil || resp.Text != "a\xff\xfeb" {
		t.Errorf("Generate = %q, %v; want the bytes as sent", respText(resp), err)
	}
}

func respText(r *portico.Response) string {
	if r == nil {
		return "<nil>"
	}
	return r.Text
}

// Missing usage leaves Usage zero; unknown finish reasons pass through and
// function_call maps to tool_calls.
func TestUsageMissingAndFinishReasons(t *testing.T) {
	for _, fr := range []struct {
		sent string
		want portico.FinishReason
	}{{"stop", portico.FinishStop}, {"length", portico.FinishLength}, {"content_filter", portico.FinishContentFilter}, {"eos", "eos"}, {"end_turn", "end_turn"}, {"function_call", portico.FinishToolCalls}} {
		m := raw(t, openai.Config{}, sse(delta(`{"content":"hi"}`), finish(fr.sent), "[DONE]"))
		resp, _, err := stream(t, m, context.Background())
		if err != nil || resp.FinishReason != fr.want || resp.Usage != (portico.Usage{}) || resp.Text != "hi" {
			t.Errorf("stream finish %q: Generate = %+v, %v; want finish %q, zero usage", fr.sent, resp, err, fr.want)
		}
		m = raw(t, openai.Config{}, body(`{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"`+fr.sent+`"}]}`))
		resp, err = m.Generate(context.Background(), userReq("m", "hi"))
		if err != nil || resp.FinishReason != fr.want || resp.Usage != (portico.Usage{}) || resp.Text != "hi" {
			t.Errorf("finish %q: Generate = %+v, %v; want finish %q, zero usage", fr.sent, resp, err, fr.want)
		}
	}
}

// An answer without choices is InvalidResponse, streamed or not.
func TestChoicesEmpty(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"whole":         body(`{"id":"x","model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`),
		"whole null":    body(`{"id":"x","model":"m","choices":null}`),
		"stream":        sse(chunk(`[]`), chunk(`[]`), "[DONE]"),
		"stream no end": sse(delta(`{"content":"hi"}`)),
	} {
		m := raw(t, openai.Config{}, h)
		req := userReq("m", "hi")
		if strings.HasPrefix(name, "stream") {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if pe := asError(t, err); resp != nil || pe.Class != portico.InvalidResponse || pe.Status != 200 || !errors.Is(err, openai.ErrMalformed) {
			t.Errorf("%s: Generate = %v, %v; want invalid_response status 200 wrapping ErrMalformed", name, resp, err)
		}
	}
}

// forever answers status with prefix, then rep again and again until the
// client goes away.
func forever(status int, contentType, prefix, rep string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(prefix))
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte(rep)); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// Endless or huge bodies are cut at MaxResponseBytes: InvalidResponse
// wrapping ErrTooLarge (an HTTP error keeps its status's class), after at
// most that many bytes.
func TestMaxResponseBytes(t *testing.T) {
	const limit = 64 << 10
	cases := []struct {
		name   string
		h      http.HandlerFunc
		stream bool
		status int
		class  portico.Class
	}{
		{"huge answer", forever(200, "application/json", `{"id":"x","choices":[{"message":{"content":"`, "aaaaaaaa"), false, 200, portico.InvalidResponse},
		{"huge error body", forever(503, "application/json", `{"error":{"message":"`, "aaaaaaaa"), false, 503, portico.Transient},
		{"huge error body streaming", forever(400, "application/json", `{"error":{"message":"`, "aaaaaaaa"), true, 400, portico.Incompatible},
		{"endless stream without [DONE]", forever(200, "text/event-stream", "", "data: "+delta(`{"content":"ab"}`)+"\n\n"), true, 200, portico.InvalidResponse},
		{"one endless event", forever(200, "text/event-stream", "", "data: aaaaaaaa\n"), true, 200, portico.InvalidResponse},
		{"one endless line", forever(200, "text/event-stream", "data: ", "aaaaaaaa"), true, 200, portico.InvalidResponse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := raw(t, openai.Config{MaxResponseBytes: limit}, tc.h)
			req := userReq("m", "hi")
			text := 0
			if tc.stream {
				req.OnChunk = func(c portico.Chunk) error { text += len(c.Text); return nil }
			}
			_, err := m.Generate(context.Background(), req)
			if pe := asError(t, err); pe.Class != tc.class || pe.Status != tc.status || !errors.Is(err, openai.ErrTooLarge) {
				t.Errorf("Generate error = %v, want %v status %d wrapping ErrTooLarge", err, tc.class, tc.status)
			}
			if text >= limit {
				t.Errorf("%d bytes of text delivered, want fewer than the %d-byte limit", text, limit)
			}
		})
	}
}

// The limit is exact: a body of exactly MaxResponseBytes is read, one byte
// more is refused.
func TestMaxResponseBytesExact(t *testing.T) {
	const b = `{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	for _, tc := range []struct {
		limit int64
		ok    bool
	}{{int64(len(b)), true}, {int64(len(b)) - 1, false}, {-1, true}} {
		m := raw(t, openai.Config{MaxResponseBytes: tc.limit}, body(b))
		resp, err := m.Generate(context.Background(), userReq("m", "hi"))
		if tc.ok && (err != nil || resp.Text != "hi") || !tc.ok && !errors.Is(err, openai.ErrTooLarge) {
			t.Errorf("MaxResponseBytes %d for a %d-byte body: Generate = %v, %v; want ok %v", tc.limit, len(b), resp, err, tc.ok)
		}
	}
}

// An endless stream with no byte limit ends with the caller's context, and
// no chunk is delivered after the cancel.
func TestEndlessStreamHonoursContext(t *testing.T) {
	m := raw(t, openai.Config{MaxResponseBytes: -1}, forever(200, "text/event-stream", "", "data: "+delta(`{"content":"ab"}`)+"\n\n"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := userReq("m", "hi")
	n := 0
	req.OnChunk = func(portico.Chunk) error {
		n++
		if n == 1000 {
			cancel()
		}
		return nil
	}
	_, err := m.Generate(ctx, req)
	if portico.ClassOf(err) != portico.Canceled || n != 1000 {
		t.Errorf("Generate = %v after %d chunks, want canceled after exactly 1000", err, n)
	}
}

// Error bodies that are not OpenAI's (a proxy's HTML page, plain text, other
// JSON) are classified by their status and headers; a 200 that is not JSON is
// InvalidResponse.
func TestErrorBodyNotOpenAI(t *testing.T) {
	reply := func(status int, contentType, b string, header ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(b))
		}
	}
	cases := []struct {
		name   string
		h      http.HandlerFunc
		class  portico.Class
		status int
		after  time.Duration
	}{
		{"proxy 502 html", reply(502, "text/html", "<html>Bad Gateway</html>"), portico.Transient, 502, 0},
		{"503 other json", reply(503, "application/json", `{"detail":"busy"}`), portico.Transient, 503, 0},
		{"429 plain text", reply(429, "text/plain", "slow down", "retry-after", "7"), portico.RateLimited, 429, 7 * time.Second},
		{"401 empty", reply(401, "application/json", ""), portico.Unusable, 401, 0},
		{"200 html", reply(200, "text/html", "<html>hi</html>"), portico.InvalidResponse, 200, 0},
	}
	for _, tc := range cases {
		m := raw(t, openai.Config{}, tc.h)
		_, err := m.Generate(context.Background(), userReq("m", "hi"))
		if pe := asError(t, err); pe.Class != tc.class || pe.Status != tc.status || pe.RetryAfter != tc.after {
			t.Errorf("%s: Generate error = %v, want %v status %d retry-after %v", tc.name, err, tc.class, tc.status, tc.after)
		}
	}
}
