package validate

import (
	"bytes"
	"slices"
	"strings"

	"github.com/portico-llm/portico"
)

// noArguments is the text of the arguments of a call that has none.
var noArguments = []byte("{}")

// arguments decodes a tool call's arguments, raw, in each shape providers
// send for the same call, reporting a violation when it is none of them:
//
//   - the object's JSON text, white space around it allowed (Anthropic's
//     input and Gemini's args as adapters write them, most OpenAI answers);
//   - a JSON string whose content is the object's text (arguments encoded
//     twice, as some OpenAI-compatible servers send them);
//   - nothing: an empty or blank text, or null, for a call without
//     arguments (OpenAI-compatible servers send "" for a tool without
//     parameters), read as the empty object.
//
// Any other JSON value is returned as it is, for the parameters' schema to
// judge. norm is the object's text when raw holds it in another shape (the
// string's content, or "{}"), nil otherwise: what Wrap hands on in its
// place, so that a tool executor reads one shape. The content is never
// changed.
func (p *pipeline) arguments(raw []byte) (value any, norm []byte, ok bool) {
	if none(bytes.Trim(raw, jsonSpace)) {
		return map[string]any{}, noArguments, true
	}
	value, ok = p.decode(string(raw))
	if !ok {
		return nil, nil, false
	}
	if s, isString := value.(string); isString {
		return p.encodedTwice(value, s)
	}
	return value, nil, true
}

// encodedTwice reads the arguments of a call whose JSON value is the string
// s: the arguments, in the shapes arguments reads but this one, when s holds
// an object or nothing; value, for the schema to judge, otherwise.
func (p *pipeline) encodedTwice(value any, s string) (any, []byte, bool) {
	switch t := strings.Trim(s, jsonSpace); {
	case none([]byte(t)):
		return map[string]any{}, noArguments, true
	case t[0] != '{':
		return value, nil, true // a string, for the schema to judge
	}
	if value, ok := p.decode(s); ok {
		return value, []byte(s), true
	}
	return nil, nil, false
}

// none reports whether the trimmed text t says there are no arguments.
func none(t []byte) bool { return len(t) == 0 || string(t) == "null" }

// jsonSpace is the white space JSON allows around a value.
const jsonSpace = " \t\n\r"

// normalized returns a copy of resp's tool calls with the arguments p read
// in another shape replaced by the object's text; resp's slice is not
// changed, since the inner Model may hold it.
func (p *pipeline) normalized(resp *portico.Response) []portico.ToolCall {
	calls := slices.Clone(resp.ToolCalls)
	for _, n := range p.norms {
		calls[n.call].Arguments = n.text
	}
	return calls
}

// norm is a call's arguments read in another shape than the object's text.
type norm struct {
	call int
	text []byte
}
