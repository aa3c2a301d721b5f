package anthropic_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/anthropic"
)

// TestStreamCutInsideAnEvent: a stream that broke off inside its last
// event (message_stop without the blank line that dispatches it, or cut
// mid-line) is Ambiguous wrapping io.ErrUnexpectedEOF (a body cut off),
// never an answer nor a malformed one: the SDK's decoder drops such an
// event without an error.
func TestStreamCutInsideAnEvent(t *testing.T) {
	whole := sseEvent(evStart) + sseEvent(textStart) + sseEvent(textDelta(0, "hi")) + sseEvent(blockStop(0)) + sseEvent(msgDelta("end_turn", 1))
	for _, body := range []string{whole + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n", whole + "event: message_stop\ndata: {\"type\":\"mess"} {
		m := raw(t, anthropic.Config{Model: "m"}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(body))
		})
		resp, _, err := stream(t, m, context.Background())
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Ambiguous || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Generate(%q) = %+v, %v; want Ambiguous wrapping io.ErrUnexpectedEOF", body, resp, err)
		}
	}
}
