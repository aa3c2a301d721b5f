package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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

// sse answers with the given events ("type\ndata" pairs), each flushed.
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

// body answers status with a JSON body.
func body(status int, b string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(b))
	}
}

const (
	start     = "message_start\n" + `{"type":"message_start","message":{"id":"msg_raw","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":5,"output_tokens":1}}}`
	textStart = "content_block_start\n" + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	ping      = "ping\n" + `{"type":"ping"}`
	stopEv    = "message_stop\n" + `{"type":"message_stop"}`
)

func textDelta(i int, s string) string {
	return "content_block_delta\n" + `{"type":"content_block_delta","index":` + itoa(i) + `,"delta":{"type":"text_delta","text":"` + s + `"}}`
}

func blockStop(i int) string {
	return "content_block_stop\n" + `{"type":"content_block_stop","index":` + itoa(i) + `}`
}

func msgDelta(reason string, out int) string {
	return "message_delta\n" + `{"type":"message_delta","delta":{"stop_reason":"` + reason + `","stop_sequence":null},"usage":{"output_tokens":` + itoa(out) + `}}`
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('0'+i))) }

// stream runs req streamed, collecting the chunks' texts.
func stream(t *testing.T, m *anthropic.Model, ctx context.Context) (*portico.Response, []string, error) {
	t.Helper()
	req := userReq("m", "hi")
	var got []string
	req.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
	resp, err := m.Generate(ctx, req)
	return resp, got, err
}

func TestStreamText(t *testing.T) {
	m := raw(t, anthropic.Config{}, sse(start, textStart, ping, textDelta(0, "Hel"), textDelta(0, "lo"), blockStop(0), msgDelta("end_turn", 7), stopEv))
	resp, chunks, err := stream(t, m, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := portico.Usage{InputTokens: 18, OutputTokens: 7, CachedInputTokens: 5}
	if resp.Text != "Hello" || strings.Join(chunks, "") != "Hello" || len(chunks) != 2 || resp.FinishReason != portico.FinishStop || resp.Usage != want || resp.ID != "msg_raw" {
		t.Errorf("Generate = %+v chunks %q, want Hello in 2 chunks, stop, %+v", resp, chunks, want)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	over := "error\n" + `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	for _, tc := range []struct {
		name      string
		h         http.HandlerFunc
		class     portico.Class
		delivered bool
	}{
		{"before content", sse(start, over), portico.Transient, false},
		{"after content", sse(start, textStart, textDelta(0, "a"), over), portico.Transient, true},
	} {
		m := raw(t, anthropic.Config{}, tc.h)
		_, chunks, err := stream(t, m, context.Background())
		var pe *anthropic.ProviderError
		if portico.ClassOf(err) != tc.class || !errors.As(err, &pe) || !pe.InStream || pe.AfterContent != tc.delivered || pe.Type != "overloaded_error" {
			t.Errorf("%s: Generate = %v (%+v) after %q, want %v in-stream overloaded_error, after content %v", tc.name, err, pe, chunks, tc.class, tc.delivered)
		}
	}
}

func TestWhole(t *testing.T) {
	m := raw(t, anthropic.Config{}, body(200, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":4,"output_tokens":2}}`))
	resp, err := m.Generate(context.Background(), userReq("m", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "hi" || len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Arguments) != `{"a":1}` || resp.FinishReason != portico.FinishToolCalls {
		t.Errorf("Generate = %+v", resp)
	}
}

func TestErrorBody(t *testing.T) {
	m := raw(t, anthropic.Config{}, body(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`))
	_, err := m.Generate(context.Background(), userReq("m", "hi"))
	t.Logf("%v", err)
	if portico.ClassOf(err) != portico.Transient {
		t.Errorf("class = %v", portico.ClassOf(err))
	}
}
