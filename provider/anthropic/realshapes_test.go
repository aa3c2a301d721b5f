package anthropic_test

import (
	"context"
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
