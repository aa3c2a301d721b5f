package gemini

import (
	"testing"

	"github.com/portico-llm/portico"
)

// TestClassifyRequestTooLarge: a 413 (Google's front end refusing a request
// body past its size limit, a prompt with large inline images, say) is
// Incompatible, "request too large", as provider/openai and
// provider/anthropic classify it: a fallback group moves on to a route that
// may take it. It was Permanent, which stopped the group.
func TestClassifyRequestTooLarge(t *testing.T) {
	if got, reason := classifyStatus(413, "", "", "", nil); got != portico.Incompatible || reason != "request too large" {
		t.Errorf("classifyStatus(413) = %v %q, want Incompatible \"request too large\" as the other adapters", got, reason)
	}
}
