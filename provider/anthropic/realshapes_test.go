package anthropic_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/anthropic"
)

// A disabled organization's key is refused with a 400
// invalid_request_error, not a 401 or 403: {"type":"error","error":{"type":
// "invalid_request_error","message":"This organization has been
// disabled."},"request_id":"req_..."} (Claude Code's troubleshooting page,
// "API Error: 400 ... This organization has been disabled."; the wording is
// one of QuantumNous/new-api's AutomaticDisableKeywords, in
// setting/operation_setting, that take a channel out of rotation). It is
// the route's account at fault: Unusable, so a fallback moves on and the
// breaker counts it. Permanent would stop every fallback group at this
// route, for every request, until someone noticed.
func TestOrganizationDisabled(t *testing.T) {
	m := raw(t, anthropic.Config{}, reply(400, "application/json",
		`{"type":"error","error":{"type":"invalid_request_error","message":"This organization has been disabled."},"request_id":"req_011CX3mDDVf33wU2Gjv9Jspf"}`))
	_, err := m.Generate(context.Background(), userReq("m", "hi"))
	e := asError(t, err)
	if e.Class != portico.Unusable || e.Reason != "account disabled" {
		t.Errorf("Generate error = %v (class %v, reason %q), want Unusable \"account disabled\"", err, e.Class, e.Reason)
	}
}

// A proxy's blank data keep-alives ("data: ", netease-lcap/wave-agent#1326)
// and a ping with empty data, between a message's events, are nothing:
// the message streams as it would without them. The Anthropic SDK skips
// events of no known type by itself, so this passes with or without
// adapt's blank-line filter (openai's TestBlankDataKeepAlives is the one
// that needs it): it keeps the adapter from starting to fail on them.
func TestBlankDataKeepAlives(t *testing.T) {
	m := raw(t, anthropic.Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		frames := []string{"data: \n\n", sseEvent(evStart), "event: ping\ndata: \n\n", sseEvent(textStart), "data:\r\n\r\n",
			sseEvent(textDelta(0, "a")), "data: \n\n", sseEvent(textDelta(0, "b")), sseEvent(blockStop(0)),
			sseEvent(msgDelta("end_turn", 2)), sseEvent(evStop)}
		for _, f := range frames {
			_, _ = w.Write([]byte(f))
			w.(http.Flusher).Flush()
		}
	})
	resp, got, err := stream(t, m, context.Background())
	if err != nil || resp.Text != "ab" || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Generate = %v, %v, chunks %q; want \"ab\" in chunks a, b", resp, err, got)
	}
}
