package gemini_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/gemini"
	"google.golang.org/genai"
)

// These tests run the real SDK over loopback HTTP against hand-written
// handlers that send what the fake server never does: hostile or broken
// answers.

// raw serves h over loopback and returns a Model pointed at it.
func raw(t *testing.T, cfg gemini.Config, h http.HandlerFunc) *gemini.Model {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return newModel(t, cfg, genai.ClientConfig{APIKey: "k", HTTPClient: s.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: s.URL}})
}

// reply answers each chunk as an event when stream is set, else the one
// chunk as the whole body.
func reply(stream bool, chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range chunks {
				_, _ = w.Write([]byte("data: " + c + "\n\n"))
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(chunks[0]))
	}
}

// generate runs a request, streamed or not, collecting the chunks' texts.
func generate(t *testing.T, m *gemini.Model, stream bool) (*portico.Response, []string, error) {
	t.Helper()
	req := userReq("m", "hi")
	var got []string
	if stream {
		req.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
	}
	resp, err := m.Generate(context.Background(), req)
	return resp, got, err
}

// counting wraps h and counts the requests it answers.
func counting(n *int, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { *n++; h(w, r) }
}

// An answer the SDK would continue on its own (finish reason CONTINUATION
// with a continuation token) is one request: the adapter turns automatic
// continuation off, and reports the cut answer as length.
func TestNoAutomaticContinuation(t *testing.T) {
	for _, stream := range []bool{false, true} {
		n := 0
		m := raw(t, gemini.Config{}, counting(&n, reply(stream,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"part one"}]},"finishReason":"CONTINUATION","continuationToken":"dG9rZW4=","index":0}]}`)))
		resp, _, err := generate(t, m, stream)
		if err != nil || resp.Text != "part one" || resp.FinishReason != portico.FinishLength || n != 1 {
			t.Errorf("stream %v: Generate = %q %q, %v after %d requests; want part one, length, after 1", stream, respText(resp), respFinish(resp), err, n)
		}
	}
}

// Answers without a usable candidate, or with data after the answer (the
// SDK's json.Unmarshal refuses it), are InvalidResponse wrapping
// ErrMalformed, whatever their shape; the SDK's own panic on a null
// candidate in a stream is one of them.
func TestNoCandidates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		chunks []string
	}{
		{"empty", false, []string{`{}`}},
		{"empty list", false, []string{`{"candidates":[]}`}},
		{"null candidate", false, []string{`{"candidates":[null]}`}},
		{"only index 1", false, []string{`{"candidates":[{"index":1,"finishReason":"STOP","content":{"parts":[{"text":"x"}]}}]}`}},
		{"no finish reason", false, []string{`{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}`}},
		{"feedback without a block", false, []string{`{"promptFeedback":{"safetyRatings":[]}}`}},
		{"data after the answer", false, []string{`{"candidates":[{"finishReason":"STOP","content":{"parts":[{"text":"x"}]}}]} {"more":1}`}},
		{"stream empty", true, []string{`{}`, `{}`}},
		{"stream null candidate", true, []string{`{"candidates":[null]}`}},
		{"stream null part", true, []string{`{"candidates":[{"content":{"parts":[null]},"finishReason":"STOP"}]}`, `{"candidates":[null]}`}},
		{"stream without finish reason", true, []string{`{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}`}},
		{"stream nothing", true, nil},
	} {
		h := reply(tc.stream, tc.chunks...)
		if tc.chunks == nil {
			h = func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "text/event-stream") }
		}
		m := raw(t, gemini.Config{}, h)
		resp, _, err := generate(t, m, tc.stream)
		if pe := asError(t, err); resp != nil || pe.Class != portico.InvalidResponse || pe.Status != 200 || !errors.Is(err, gemini.ErrMalformed) {
			t.Errorf("%s: Generate = %v, %v; want invalid_response status 200 wrapping ErrMalformed", tc.name, resp, err)
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

const textEvent = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"ab"}]},"index":0}]}` + "\n\n"

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
		{"huge answer", forever(200, "application/json", `{"candidates":[{"content":{"parts":[{"text":"`, "aaaaaaaa"), false, 200, portico.InvalidResponse},
		{"huge error body", forever(503, "application/json", `{"error":{"message":"`, "aaaaaaaa"), false, 503, portico.Transient},
		{"huge 429 streaming", forever(429, "application/json", `{"error":{"message":"`, "aaaaaaaa"), true, 429, portico.RateLimited},
		{"endless stream", forever(200, "text/event-stream", "", textEvent), true, 200, portico.InvalidResponse},
		{"one endless event", forever(200, "text/event-stream", "data: ", "aaaaaaaa"), true, 200, portico.InvalidResponse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := raw(t, gemini.Config{MaxResponseBytes: limit}, tc.h)
			req := userReq("m", "hi")
			text := 0
			if tc.stream {
				req.OnChunk = func(c portico.Chunk) error { text += len(c.Text); return nil }
			}
			_, err := m.Generate(context.Background(), req)
			if pe := asError(t, err); pe.Class != tc.class || pe.Status != tc.status || !errors.Is(err, gemini.ErrTooLarge) {
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
	const b = `{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}`
	for _, tc := range []struct {
		limit int64
		ok    bool
	}{{int64(len(b)), true}, {int64(len(b)) - 1, false}, {-1, true}} {
		m := raw(t, gemini.Config{MaxResponseBytes: tc.limit}, reply(false, b))
		resp, err := m.Generate(context.Background(), userReq("m", "hi"))
		if tc.ok && (err != nil || resp.Text != "hi") || !tc.ok && !errors.Is(err, gemini.ErrTooLarge) {
			t.Errorf("MaxResponseBytes %d for a %d-byte body: Generate = %v, %v; want ok %v", tc.limit, len(b), resp, err, tc.ok)
		}
	}
}

// An endless stream with no byte limit ends with the caller's context, and
// no chunk is delivered after the cancel.
func TestEndlessStreamHonoursContext(t *testing.T) {
	m := raw(t, gemini.Config{MaxResponseBytes: -1}, forever(200, "text/event-stream", "", textEvent))
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

// Error bodies that are not Google's (a proxy's HTML page, plain text,
// other JSON) are classified by their status; a 200 that is not JSON is
// InvalidResponse.
func TestErrorBodyNotGoogle(t *testing.T) {
	plain := func(status int, contentType, b string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(b))
		}
	}
	cases := []struct {
		name   string
		h      http.HandlerFunc
		class  portico.Class
		status int
	}{
		{"proxy 502 html", plain(502, "text/html", "<html>Bad Gateway</html>"), portico.Transient, 502},
		{"503 other json", plain(503, "application/json", `{"detail":"busy"}`), portico.Transient, 503},
		{"429 plain text", plain(429, "text/plain", "slow down"), portico.RateLimited, 429},
		{"401 empty", plain(401, "application/json", ""), portico.Unusable, 401},
		{"400 error not an object", plain(400, "application/json", `{"error":"bad"}`), portico.Incompatible, 400},
		{"200 html", plain(200, "text/html", "<html>hi</html>"), portico.InvalidResponse, 200},
		{"200 html streaming", plain(200, "text/html", "<html>hi</html>"), portico.InvalidResponse, 200},
	}
	for _, tc := range cases {
		m := raw(t, gemini.Config{}, tc.h)
		req := userReq("m", "hi")
		if strings.HasSuffix(tc.name, "streaming") {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		_, err := m.Generate(context.Background(), req)
		if pe := asError(t, err); pe.Class != tc.class || pe.Status != tc.status {
			t.Errorf("%s: Generate error = %v, want %v status %d", tc.name, err, tc.class, tc.status)
		}
	}
}
