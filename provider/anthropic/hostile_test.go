package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/anthropic"
)

// These tests run the real SDK over loopback HTTP against hand-written
// handlers that send what the fake server never does: hostile or broken
// answers, and shapes of the API the fake does not make.

// raw serves h over loopback and returns a Model pointed at it.
func raw(t *testing.T, cfg anthropic.Config, h http.HandlerFunc) *anthropic.Model {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return anthropic.New(cfg, option.WithBaseURL(s.URL+"/"), option.WithAPIKey("k"), option.WithHTTPClient(s.Client()))
}

// sse answers with the given events ("type\ndata"), each flushed, and
// nothing else.
func sse(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			typ, data, _ := strings.Cut(e, "\n")
			_, _ = w.Write([]byte("event: " + typ + "\ndata: " + data + "\n\n"))
			w.(http.Flusher).Flush()
		}
	}
}

// reply answers status with a body of the content type and headers (pairs).
func reply(status int, contentType, b string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(b))
	}
}

func whole(b string) http.HandlerFunc { return reply(200, "application/json", b) }

const (
	evStart   = "message_start\n" + `{"type":"message_start","message":{"id":"msg_raw","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":5,"output_tokens":1}}}`
	textStart = "content_block_start\n" + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	ping      = "ping\n" + `{"type":"ping"}`
	evStop    = "message_stop\n" + `{"type":"message_stop"}`
	overload  = "error\n" + `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
)

func blockStart(i int, block string) string {
	return "content_block_start\n" + `{"type":"content_block_start","index":` + strconv.Itoa(i) + `,"content_block":` + block + `}`
}

func blockDelta(i int, delta string) string {
	return "content_block_delta\n" + `{"type":"content_block_delta","index":` + strconv.Itoa(i) + `,"delta":` + delta + `}`
}

func textDelta(i int, s string) string {
	return blockDelta(i, `{"type":"text_delta","text":"`+s+`"}`)
}

func blockStop(i int) string {
	return "content_block_stop\n" + `{"type":"content_block_stop","index":` + strconv.Itoa(i) + `}`
}

func msgDelta(reason string, out int) string {
	return "message_delta\n" + `{"type":"message_delta","delta":{"stop_reason":"` + reason + `","stop_sequence":null},"usage":{"output_tokens":` + strconv.Itoa(out) + `}}`
}

// stream runs req streamed, collecting the chunks' texts.
func stream(t *testing.T, m *anthropic.Model, ctx context.Context) (*portico.Response, []string, error) {
	t.Helper()
	req := userReq("m", "hi")
	var got []string
	req.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
	resp, err := m.Generate(ctx, req)
	return resp, got, err
}

// A stream as the API sends it, pings and blocks the adapter leaves out
// (thinking) included: usage sums the cache counts into the input.
func TestStreamShapes(t *testing.T) {
	thinking := []string{blockStart(0, `{"type":"thinking","thinking":""}`), blockDelta(0, `{"type":"thinking_delta","thinking":"hmm"}`),
		blockDelta(0, `{"type":"signature_delta","signature":"sig"}`), blockStop(0)}
	cases := []struct {
		name   string
		events []string
		text   string
		chunks int
		finish portico.FinishReason
		usage  portico.Usage
	}{
		{"text", []string{evStart, textStart, ping, textDelta(0, "Hel"), textDelta(0, "lo"), blockStop(0), msgDelta("end_turn", 7), evStop},
			"Hello", 2, portico.FinishStop, portico.Usage{InputTokens: 18, OutputTokens: 7, CachedInputTokens: 5, CacheWriteTokens: 3, LimitExemptTokens: 5}},
		{"thinking then text", append(append([]string{evStart}, thinking...), blockStart(1, `{"type":"text","text":""}`), textDelta(1, "ok"), blockStop(1), msgDelta("end_turn", 9), evStop),
			"ok", 1, portico.FinishStop, portico.Usage{InputTokens: 18, OutputTokens: 9, CachedInputTokens: 5, CacheWriteTokens: 3, LimitExemptTokens: 5}},
		{"unknown events left out", []string{evStart, "future_event\n{\"type\":\"future_event\"}", textStart, textDelta(0, "a"), blockDelta(0, `{"type":"citations_delta","citation":{}}`), msgDelta("stop_sequence", 2)},
			"a", 1, portico.FinishStop, portico.Usage{InputTokens: 18, OutputTokens: 2, CachedInputTokens: 5, CacheWriteTokens: 3, LimitExemptTokens: 5}},
		{"refusal", []string{evStart, textStart, textDelta(0, "I "), msgDelta("refusal", 2), evStop},
			"I ", 1, portico.FinishContentFilter, portico.Usage{InputTokens: 18, OutputTokens: 2, CachedInputTokens: 5, CacheWriteTokens: 3, LimitExemptTokens: 5}},
		{"pause_turn", []string{evStart, msgDelta("pause_turn", 1), evStop},
			"", 0, "pause_turn", portico.Usage{InputTokens: 18, OutputTokens: 1, CachedInputTokens: 5, CacheWriteTokens: 3, LimitExemptTokens: 5}},
		{"context window exceeded", []string{evStart, textStart, textDelta(0, "x"), msgDelta("model_context_window_exceeded", 1), evStop},
			"x", 1, portico.FinishLength, portico.Usage{InputTokens: 18, OutputTokens: 1, CachedInputTokens: 5, CacheWriteTokens: 3, LimitExemptTokens: 5}},
		{"input revised in message_delta", []string{evStart, textStart, textDelta(0, "x"),
			"message_delta\n" + `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":20,"cache_read_input_tokens":0,"output_tokens":4}}`},
			"x", 1, portico.FinishLength, portico.Usage{InputTokens: 23, OutputTokens: 4, CacheWriteTokens: 3}},
		{"text in the block's start", []string{evStart, blockStart(0, `{"type":"text","text":"pre"}`), textDelta(0, "fix"), msgDelta("end_turn", 2)},
			"prefix", 2, portico.FinishStop, portico.Usage{InputTokens: 18, OutputTokens: 2, CachedInputTokens: 5, CacheWriteTokens: 3, LimitExemptTokens: 5}},
	}
	for _, tc := range cases {
		m := raw(t, anthropic.Config{}, sse(tc.events...))
		resp, chunks, err := stream(t, m, context.Background())
		if err != nil {
			t.Errorf("%s: Generate: %v", tc.name, err)
			continue
		}
		if resp.Text != tc.text || strings.Join(chunks, "") != tc.text || len(chunks) != tc.chunks || resp.FinishReason != tc.finish || resp.Usage != tc.usage || resp.ID != "msg_raw" {
			t.Errorf("%s: Generate = %q finish %q usage %+v chunks %q, want %q finish %q usage %+v in %d chunks", tc.name, resp.Text, resp.FinishReason, resp.Usage, chunks, tc.text, tc.finish, tc.usage, tc.chunks)
		}
	}
}

// Parallel tool calls and text in one stream: calls in content order, each
// input assembled from its deltas, an input never sent read as {}.
func TestStreamToolUse(t *testing.T) {
	m := raw(t, anthropic.Config{}, sse(evStart,
		textStart, textDelta(0, "Let me check."), blockStop(0),
		blockStart(1, `{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}`),
		blockDelta(1, `{"type":"input_json_delta","partial_json":""}`),
		blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"city\":"}`),
		blockDelta(1, `{"type":"input_json_delta","partial_json":"\"Rome\"}"}`), blockStop(1),
		blockStart(2, `{"type":"tool_use","id":"toolu_b","name":"noop","input":{}}`), blockStop(2),
		msgDelta("tool_use", 30), evStop))
	resp, chunks, err := stream(t, m, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []portico.ToolCall{{ID: "toolu_a", Name: "get_weather", Arguments: []byte(`{"city":"Rome"}`)}, {ID: "toolu_b", Name: "noop", Arguments: []byte(`{}`)}}
	if len(resp.ToolCalls) != 2 || resp.FinishReason != portico.FinishToolCalls || resp.Text != "Let me check." {
		t.Fatalf("Generate = %d calls, finish %q, text %q; want 2, tool_calls, the text", len(resp.ToolCalls), resp.FinishReason, resp.Text)
	}
	for i, w := range want {
		if g := resp.ToolCalls[i]; g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) {
			t.Errorf("ToolCalls[%d] = %q %q %s, want %q %q %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
	// One text chunk, then one progress chunk per tool-use event: 2 starts, 3 deltas.
	if len(chunks) != 6 || chunks[0] != "Let me check." || strings.Join(chunks[1:], "") != "" {
		t.Errorf("chunks = %q, want the text and 5 empty progress chunks", chunks)
	}
}

// Streams that are not a message are InvalidResponse wrapping ErrMalformed,
// after at most the chunks that came before the fault.
func TestStreamMalformed(t *testing.T) {
	cases := []struct {
		name   string
		events []string
	}{
		{"no message_start", []string{textStart, textDelta(0, "a"), msgDelta("end_turn", 1)}},
		{"nothing", nil},
		{"no stop reason", []string{evStart, textStart, textDelta(0, "a"), evStop}},
		{"second message_start", []string{evStart, evStart}},
		{"delta before its block", []string{evStart, textDelta(0, "a")}},
		{"block started twice", []string{evStart, textStart, textStart}},
		{"index out of range", []string{evStart, blockStart(1024, `{"type":"text","text":""}`)}},
		{"negative index", []string{evStart, blockStart(-1, `{"type":"text","text":""}`)}},
		{"huge index", []string{evStart, blockStart(0, `{"type":"text","text":""}`), textDelta(0, "a"), textDelta(100000000000, "b")}},
		{"input delta on text", []string{evStart, textStart, blockDelta(0, `{"type":"input_json_delta","partial_json":"{"}`)}},
		{"text delta on tool", []string{evStart, blockStart(0, `{"type":"tool_use","id":"t","name":"f","input":{}}`), textDelta(0, "a")}},
		{"data not JSON", []string{evStart, "content_block_delta\n{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"}},
		{"text a number", []string{evStart, textStart, blockDelta(0, `{"type":"text_delta","text":5}`)}},
		{"index a string", []string{evStart, "content_block_start\n" + `{"type":"content_block_start","index":"0","content_block":{"type":"text","text":""}}`}},
		{"stop reason a number", []string{evStart, "message_delta\n" + `{"type":"message_delta","delta":{"stop_reason":1},"usage":{"output_tokens":1}}`}},
		{"output count a string", []string{evStart, "message_delta\n" + `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":"1"}}`}},
		{"negative output count", []string{evStart, msgDelta("end_turn", -1)}},
		{"tool without an id", []string{evStart, blockStart(0, `{"type":"tool_use","name":"f","input":{}}`)}},
		{"message not an object", []string{"message_start\n" + `{"type":"message_start","message":"hi"}`}},
		{"OpenAI chunks", []string{"\n" + `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`}},
	}
	for _, tc := range cases {
		m := raw(t, anthropic.Config{}, sse(tc.events...))
		resp, chunks, err := stream(t, m, context.Background())
		if pe := asError(t, err); resp != nil || pe.Class != portico.InvalidResponse || pe.Status != 200 || !errors.Is(err, anthropic.ErrMalformed) {
			t.Errorf("%s: Generate = %v, %v; want invalid_response status 200 wrapping ErrMalformed", tc.name, resp, err)
		}
		if text := strings.Join(chunks, ""); text != "" && text != "a" || len(chunks) > 2 {
			t.Errorf("%s: chunks %q delivered, want at most the text before the fault", tc.name, chunks)
		}
	}
}

// Error events inside a 200 stream: classified by type before or after
// content; an event whose data is no error object is a Transient stream
// error whose text stays out of the error unless asked for.
func TestStreamErrorEvents(t *testing.T) {
	cases := []struct {
		name      string
		events    []string
		class     portico.Class
		typ       string
		delivered bool
	}{
		{"overloaded before message_start", []string{overload}, portico.Transient, "overloaded_error", false},
		{"overloaded before content", []string{evStart, overload}, portico.Transient, "overloaded_error", false},
		{"overloaded after content", []string{evStart, textStart, textDelta(0, "a"), overload}, portico.Transient, "overloaded_error", true},
		{"prompt too long", []string{evStart, "error\n" + `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9 tokens > 5 maximum"}}`}, portico.Incompatible, "invalid_request_error", false},
		{"rate limited", []string{"error\n" + `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`}, portico.RateLimited, "rate_limit_error", false},
		{"data not an error object", []string{evStart, textStart, textDelta(0, "a"), "error\nSECRET upstream text"}, portico.Transient, "", true},
		{"error of another shape", []string{evStart, "error\n" + `{"error":"SECRET"}`}, portico.Transient, "", false},
	}
	for _, tc := range cases {
		for _, include := range []bool{false, true} {
			m := raw(t, anthropic.Config{IncludeProviderMessage: include}, sse(tc.events...))
			_, chunks, err := stream(t, m, context.Background())
			var pe *anthropic.ProviderError
			if portico.ClassOf(err) != tc.class || !errors.As(err, &pe) || !pe.InStream || pe.AfterContent != tc.delivered || pe.Type != tc.typ || pe.Status != 200 {
				t.Errorf("%s: Generate = %v (%+v) after %q, want %v in-stream %q, after content %v", tc.name, err, pe, chunks, tc.class, tc.typ, tc.delivered)
			}
			if strings.Contains(err.Error(), "SECRET") && !include {
				t.Errorf("%s: error %q carries the provider's text without IncludeProviderMessage", tc.name, err)
			}
			// After message_start the input was billed: the error carries
			// the usage counted so far (10 + 3 written + 5 read, 1 out).
			want := (*portico.Usage)(nil)
			if tc.events[0] == evStart {
				want = &portico.Usage{InputTokens: 18, CachedInputTokens: 5, CacheWriteTokens: 3, LimitExemptTokens: 5, OutputTokens: 1}
			}
			if got := portico.UsageOf(err); (got == nil) != (want == nil) || got != nil && *got != *want {
				t.Errorf("%s: UsageOf(err) = %+v, want %+v", tc.name, got, want)
			}
		}
	}
}

// Whole answers of every shape: text blocks joined, tool uses in order, an
// absent input read as {}, thinking blocks left out.
func TestWholeShapes(t *testing.T) {
	m := raw(t, anthropic.Config{}, whole(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[`+
		`{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"a"},{"type":"text","text":"b"},`+
		`{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":[1,2]}},{"type":"tool_use","id":"toolu_2","name":"g"}],`+
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":4,"cache_creation_input_tokens":10,"cache_read_input_tokens":0,"output_tokens":2}}`))
	resp, err := m.Generate(context.Background(), userReq("m", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "ab" || len(resp.ToolCalls) != 2 || string(resp.ToolCalls[0].Arguments) != `{"a":[1,2]}` || string(resp.ToolCalls[1].Arguments) != `{}` ||
		resp.ToolCalls[1].ID != "toolu_2" || resp.FinishReason != portico.FinishToolCalls || resp.Model != "claude-x" || resp.Usage != (portico.Usage{InputTokens: 14, OutputTokens: 2, CacheWriteTokens: 10}) {
		t.Errorf("Generate = %+v, want text ab, calls f {\"a\":[1,2]} and g {}, tool_calls, usage 14+2", resp)
	}
}

// 200 bodies that are not a message: an error object is classified by its
// type, anything else is InvalidResponse wrapping ErrMalformed.
func TestWholeNotAMessage(t *testing.T) {
	cases := []struct {
		name  string
		h     http.HandlerFunc
		class portico.Class
	}{
		{"error object", whole(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), portico.Transient},
		{"error object, auth", whole(`{"type":"error","error":{"type":"authentication_error","message":"bad key"}}`), portico.Unusable},
		{"no stop reason", whole(`{"id":"msg_1","type":"message","content":[{"type":"text","text":"hi"}]}`), portico.InvalidResponse},
		{"null stop reason", whole(`{"id":"msg_1","type":"message","content":[],"stop_reason":null}`), portico.InvalidResponse},
		{"no content", whole(`{"id":"msg_1","type":"message","stop_reason":"end_turn"}`), portico.InvalidResponse},
		{"null", whole(`null`), portico.InvalidResponse},
		{"array", whole(`[1,2]`), portico.InvalidResponse},
		{"cut", whole(`{"id":"msg_1","content":[{"type":"te`), portico.InvalidResponse},
		{"cut after a secret", whole(`{"id":"msg_1","content":[{"type":"text","text":"SECRET answer`), portico.InvalidResponse},
		{"secret where a number goes", whole(`{"id":"x","type":"message","content":[],"stop_reason":"end_turn","usage":{"input_tokens":SECRET}}`), portico.InvalidResponse},
		{"OpenAI completion", whole(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`), portico.InvalidResponse},
		{"html", reply(200, "text/html", "<html>hi</html>"), portico.InvalidResponse},
		// Fields of the wrong type, which the SDK's decoder would coerce or zero.
		{"content a string", whole(`{"id":"x","type":"message","content":"hi","stop_reason":"end_turn","usage":{}}`), portico.InvalidResponse},
		{"text a number", whole(`{"id":"x","type":"message","content":[{"type":"text","text":5}],"stop_reason":"end_turn","usage":{}}`), portico.InvalidResponse},
		{"stop reason a number", whole(`{"id":"x","type":"message","content":[],"stop_reason":7,"usage":{}}`), portico.InvalidResponse},
		{"count a string", whole(`{"id":"x","type":"message","content":[],"stop_reason":"end_turn","usage":{"input_tokens":"5"}}`), portico.InvalidResponse},
		{"negative count", whole(`{"id":"x","type":"message","content":[],"stop_reason":"end_turn","usage":{"output_tokens":-1}}`), portico.InvalidResponse},
		{"tool input a string", whole(`{"id":"x","type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":"str"}],"stop_reason":"tool_use","usage":{}}`), portico.InvalidResponse},
		{"tool without a name", whole(`{"id":"x","type":"message","content":[{"type":"tool_use","id":"t","input":{}}],"stop_reason":"tool_use","usage":{}}`), portico.InvalidResponse},
		{"usage a number", whole(`{"id":"x","type":"message","content":[],"stop_reason":"end_turn","usage":5}`), portico.InvalidResponse},
		// A json.Decoder stops after the first value: what follows is refused.
		{"data after the message", whole(`{"id":"x","type":"message","content":[],"stop_reason":"end_turn","usage":{}} {"more":1}`), portico.InvalidResponse},
		{"error after the message", whole(`{"id":"x","type":"message","content":[],"stop_reason":"end_turn","usage":{}}{"type":"error","error":{"type":"overloaded_error"}}`), portico.InvalidResponse},
	}
	for _, tc := range cases {
		m := raw(t, anthropic.Config{}, tc.h)
		resp, err := m.Generate(context.Background(), userReq("m", "hi"))
		pe := asError(t, err)
		if resp != nil || pe.Class != tc.class || pe.Status != 200 {
			t.Errorf("%s: Generate = %v, %v; want %v status 200", tc.name, resp, err, tc.class)
		}
		if tc.class == portico.InvalidResponse && !errors.Is(err, anthropic.ErrMalformed) {
			t.Errorf("%s: Generate error %v does not wrap ErrMalformed", tc.name, err)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: Generate error %q quotes the body", tc.name, err)
		}
	}
}

// Invalid UTF-8 passes through byte for byte, a character split across
// deltas too, and the chunks still add up.
func TestNonUTF8Content(t *testing.T) {
	m := raw(t, anthropic.Config{}, sse(evStart, textStart, textDelta(0, "a\xe2\x82"), textDelta(0, "\xac\xffb"), msgDelta("end_turn", 2)))
	resp, chunks, err := stream(t, m, context.Background())
	const want = "a\xe2\x82\xac\xffb" // a, the euro sign split across deltas, a stray 0xff, b
	if err != nil || resp.Text != want || strings.Join(chunks, "") != want {
		t.Errorf("Generate = %q (chunks %q), %v; want %q", respText(resp), chunks, err, want)
	}
	m = raw(t, anthropic.Config{}, whole("{\"id\":\"x\",\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"a\xff\xfeb\"}],\"stop_reason\":\"end_turn\",\"usage\":{}}"))
	resp, err = m.Generate(context.Background(), userReq("m", "hi"))
	if err != nil || resp.Text != "a\xff\xfeb" {
		t.Errorf("Generate = %q, %v; want the bytes as sent", respText(resp), err)
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

func sseEvent(e string) string {
	typ, data, _ := strings.Cut(e, "\n")
	return "event: " + typ + "\ndata: " + data + "\n\n"
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
		{"huge answer", forever(200, "application/json", `{"id":"x","content":[{"type":"text","text":"`, "aaaaaaaa"), false, 200, portico.InvalidResponse},
		{"huge error body", forever(529, "application/json", `{"type":"error","error":{"message":"`, "aaaaaaaa"), false, 529, portico.Transient},
		{"huge error body streaming", forever(400, "application/json", `{"type":"error","error":{"message":"`, "aaaaaaaa"), true, 400, portico.Incompatible},
		{"endless stream", forever(200, "text/event-stream", sseEvent(evStart)+sseEvent(textStart), sseEvent(textDelta(0, "ab"))), true, 200, portico.InvalidResponse},
		{"one endless event", forever(200, "text/event-stream", sseEvent(evStart), "data: aaaaaaaa\n"), true, 200, portico.InvalidResponse},
		{"one endless line", forever(200, "text/event-stream", "data: ", "aaaaaaaa"), true, 200, portico.InvalidResponse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := raw(t, anthropic.Config{MaxResponseBytes: limit}, tc.h)
			req := userReq("m", "hi")
			text := 0
			if tc.stream {
				req.OnChunk = func(c portico.Chunk) error { text += len(c.Text); return nil }
			}
			_, err := m.Generate(context.Background(), req)
			if pe := asError(t, err); pe.Class != tc.class || pe.Status != tc.status || !errors.Is(err, anthropic.ErrTooLarge) {
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
	const b = `{"id":"x","type":"message","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`
	for _, tc := range []struct {
		limit int64
		ok    bool
	}{{int64(len(b)), true}, {int64(len(b)) - 1, false}, {-1, true}} {
		m := raw(t, anthropic.Config{MaxResponseBytes: tc.limit}, whole(b))
		resp, err := m.Generate(context.Background(), userReq("m", "hi"))
		if tc.ok && (err != nil || resp.Text != "hi") || !tc.ok && !errors.Is(err, anthropic.ErrTooLarge) {
			t.Errorf("MaxResponseBytes %d for a %d-byte body: Generate = %v, %v; want ok %v", tc.limit, len(b), resp, err, tc.ok)
		}
	}
}

// An endless stream with no byte limit ends with the caller's context, and
// no chunk is delivered after the cancel.
func TestEndlessStreamHonoursContext(t *testing.T) {
	m := raw(t, anthropic.Config{MaxResponseBytes: -1}, forever(200, "text/event-stream", sseEvent(evStart)+sseEvent(textStart), sseEvent(textDelta(0, "ab"))))
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

// Error bodies that are not Anthropic's (a proxy's HTML page, plain text,
// other JSON) are classified by their status and headers.
func TestErrorBodyNotAnthropic(t *testing.T) {
	cases := []struct {
		name   string
		h      http.HandlerFunc
		class  portico.Class
		status int
		after  time.Duration
	}{
		{"proxy 502 html", reply(502, "text/html", "<html>Bad Gateway</html>"), portico.Transient, 502, 0},
		{"529 plain text", reply(529, "text/plain", "overloaded"), portico.Transient, 529, 0},
		{"503 other json", reply(503, "application/json", `{"detail":"busy"}`), portico.Transient, 503, 0},
		{"429 plain text", reply(429, "text/plain", "slow down", "retry-after", "7"), portico.RateLimited, 429, 7 * time.Second},
		{"401 empty", reply(401, "application/json", ""), portico.Unusable, 401, 0},
		{"413 from the CDN", reply(413, "text/html", "<html>413 Request Entity Too Large</html>"), portico.Incompatible, 413, 0},
		{"400 other json", reply(400, "application/json", `{"message":"nope"}`), portico.Incompatible, 400, 0},
	}
	for _, tc := range cases {
		m := raw(t, anthropic.Config{}, tc.h)
		_, err := m.Generate(context.Background(), userReq("m", "hi"))
		if pe := asError(t, err); pe.Class != tc.class || pe.Status != tc.status || pe.RetryAfter != tc.after {
			t.Errorf("%s: Generate error = %v, want %v status %d retry-after %v", tc.name, err, tc.class, tc.status, tc.after)
		}
	}
}
