package gemini_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/gemini"
	"google.golang.org/genai"
)

type fuzzBody struct{}

// bodyTransport answers every request with the status and body its context
// carries: the real SDK decodes it, without a network in between.
type bodyTransport struct{}

type fuzzReply struct {
	status int
	stream bool
	body   []byte
}

func (bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	fr := r.Context().Value(fuzzBody{}).(fuzzReply)
	h := http.Header{"Content-Type": {"application/json"}}
	if fr.stream {
		h.Set("Content-Type", "text/event-stream")
	}
	_ = r.Body.Close()
	return &http.Response{StatusCode: fr.status, Header: h, Body: io.NopCloser(bytes.NewReader(fr.body)), Request: r}, nil
}

// leak is text a hostile body puts wherever it can; it must never reach an
// error string (it has a space, so no identifier the adapter keeps holds it).
const leak = "le ak"

// FuzzGenerateBody feeds any body, as a whole answer, an event stream or an
// error of any status, through the real SDK and the adapter. Whatever it
// is, Generate returns a Response XOR a *portico.Error, never panics, never
// puts the body's text into the error string, streams chunks that add up
// to Text, and classifies HTTP errors by their status, never as
// InvalidResponse.
func FuzzGenerateBody(f *testing.F) {
	seeds := []string{
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1},"id":"x"},"thoughtSignature":"c2ln"}]},"finishReason":"STOP"}]}`,
		`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3}}`,
		`{"candidates":[null]}`, `{"candidates":[{"content":{"parts":[null]}}]}`, `{}`, `[]`, `null`, `{"candidates":"x"}`,
		`{"error":{"code":429,"message":"le ak","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`,
		`{"error":{"code":400,"message":"The input token count (9) exceeds the maximum number of tokens allowed (5).","status":"INVALID_ARGUMENT"}}`,
		`{"error":{"code":400,"status":"le ak","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"le ak"}]}}`,
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]},\"finishReason\":\"STOP\"}]}\n\n",
		"data: {\"error\":{\"code\":503,\"message\":\"le ak\",\"status\":\"UNAVAILABLE\"}}\n\n",
		"data: {\"candidates\":[{\"finishReason\":\"le ak\"}]}\n\n", "event: x\ndata: le ak\n\n", "le ak\n\n", "data: {\"candidates\":[null]}\n\n",
		"<html>le ak</html>",
	}
	for _, s := range seeds {
		for _, st := range []uint8{0, 1, 2, 5} {
			f.Add(st, strings.HasPrefix(s, "data:") || strings.HasPrefix(s, "event:"), []byte(s))
		}
	}
	m, err := gemini.New(context.Background(), gemini.Config{Model: "m", MaxResponseBytes: 1 << 20},
		genai.ClientConfig{APIKey: "k", HTTPClient: &http.Client{Transport: bodyTransport{}}, HTTPOptions: genai.HTTPOptions{BaseURL: "http://fuzz.test"}})
	if err != nil {
		f.Fatal(err)
	}
	statuses := []int{200, 400, 429, 500, 503, 404, 401, 403}
	f.Fuzz(func(t *testing.T, st uint8, stream bool, body []byte) {
		status := statuses[int(st)%len(statuses)]
		ctx := context.WithValue(context.Background(), fuzzBody{}, fuzzReply{status: status, stream: stream, body: body})
		req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
		var chunks strings.Builder
		if stream {
			req.OnChunk = func(c portico.Chunk) error { chunks.WriteString(c.Text); return nil }
		}
		resp, err := m.Generate(ctx, req)
		if (resp == nil) == (err == nil) {
			t.Fatalf("Generate = %v, %v; want a Response XOR an error", resp, err)
		}
		if err == nil {
			if stream && chunks.String() != resp.Text {
				t.Fatalf("chunks %q, Text %q; want equal", chunks.String(), resp.Text)
			}
			if status != 200 {
				t.Fatalf("status %d gave a Response", status)
			}
			return
		}
		pe, ok := err.(*portico.Error)
		if !ok {
			t.Fatalf("Generate error = %T %v, want a *portico.Error", err, err)
		}
		if strings.Contains(err.Error(), leak) {
			t.Fatalf("error string %q holds the body's text", err.Error())
		}
		switch {
		case status != 200 && (pe.Class == portico.InvalidResponse || pe.Class == portico.OK || pe.Status != status):
			t.Fatalf("status %d: class %v status %d, want the status's class", status, pe.Class, pe.Status)
		case status == 200 && (pe.Class == portico.OK || pe.Class == portico.Canceled || pe.Class == portico.Deadline || pe.Class == portico.Ambiguous && !(stream && brokeOff(string(body)))):
			t.Fatalf("status 200: class %v (%v)", pe.Class, err)
		}
	})
}

// brokeOff reports whether an event stream ends inside an event, which
// the adapter reports Ambiguous (a body cut off): its last line, not a
// comment, has no end, or a data line with a non-blank byte after "data:"
// follows its last blank line (lines end at CRLF, LF or CR).
func brokeOff(body string) bool {
	pending := false
	for len(body) > 0 {
		i := strings.IndexAny(body, "\r\n")
		if i < 0 {
			return pending || !strings.HasPrefix(body, ":")
		}
		line := body[:i]
		if strings.HasPrefix(body[i:], "\r\n") {
			i++
		}
		body = body[i+1:]
		switch {
		case line == "":
			pending = false
		case strings.HasPrefix(line, "data:") && strings.Trim(line[5:], " \t") != "":
			pending = true
		}
	}
	return pending
}
