package gemini_test

import (
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/gemini"
)

// TestStreamCutInsideAnEvent: a stream that broke off inside its last
// event (cut mid-line, or its last chunk without the blank line that ends
// an event) is Ambiguous wrapping io.ErrUnexpectedEOF (a body cut off),
// never an answer nor a malformed one.
func TestStreamCutInsideAnEvent(t *testing.T) {
	const text = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"index":0}]}` + "\r\n\r\n"
	const last = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4}}`
	for _, body := range []string{text + last + "\r\n", text + last[:60]} {
		m := raw(t, gemini.Config{}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(body))
		})
		resp, _, err := generate(t, m, true)
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Ambiguous || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Generate(%q) = %+v, %v; want Ambiguous wrapping io.ErrUnexpectedEOF", body, resp, err)
		}
	}
}
