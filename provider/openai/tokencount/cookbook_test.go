package tokencount

import (
	"testing"

	"github.com/portico-llm/portico"
)

// TestCookbookExample: OpenAI's cookbook ("How to count tokens with
// tiktoken") counts its example conversation at 129 prompt tokens on
// gpt-4 (cl100k_base) and 124 on gpt-4o (o200k_base), as the API
// reported. Its four messages with a name add the name's tokens plus 1,
// which portico's messages have no field for: the test adds them.
func TestCookbookExample(t *testing.T) {
	type msg struct{ role, name, content string }
	conv := []msg{
		{"system", "", "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
		{"system", "example_user", "New synergies will help drive top-line growth."},
		{"system", "example_assistant", "Things working in concert will increase revenues."},
		{"system", "example_user", "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
		{"system", "example_assistant", "Let's talk later when we're less busy about how to do better."},
		{"user", "", "This late pivot means we don't have time to boil the ocean for the client deliverable."},
	}
	for _, c := range []struct {
		enc  Encoding
		want int
	}{{Cl100kBase, 129}, {O200kBase, 124}} {
		e, err := New(Config{Encoding: c.enc})
		if err != nil {
			t.Fatal(err)
		}
		req := &portico.Request{}
		names := 0
		for _, m := range conv {
			req.Messages = append(req.Messages, portico.Text(portico.Role(m.role), m.content))
			if m.name != "" {
				names += e.Count(m.name) + 1
			}
		}
		if got := e.EstimateInputTokens(req) + names; got != c.want {
			t.Errorf("%s: %d tokens, want %d (the API's count)", c.enc, got, c.want)
		}
	}
}
