package gemini

import (
	"testing"

	"github.com/portico-llm/portico"
)

// TestClassifyRequestTooLarge: a 413 (Google's front end refusing a request
// body past its size limit, a prompt with large inline images, say) is
// Permanent here, which stops a fallback group, while provider/openai and
// provider/anthropic classify the same status Incompatible ("request too
// large"), on which the group moves on to a route that may take it. The
// same fault should sort the same way whichever provider is the primary.
func TestClassifyRequestTooLarge(t *testing.T) {
	t.Skip("bug: 413 is Permanent in provider/gemini, Incompatible in openai and anthropic; see the report")
	if got, _ := classifyStatus(413, "", "", "", nil); got != portico.Incompatible {
		t.Errorf("classifyStatus(413) = %v, want Incompatible as the other adapters", got)
	}
}
