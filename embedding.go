package portico

import "slices"

// Embedding turns a [Request] into an embedding request: each message
// (role user, text parts only) is one input, and the answer is one vector
// per input, in order, in [Response.Embeddings]. Every layer sees it as any
// request: limiters count its inputs (N_max is 0: it has no output),
// retries, breakers and traces treat it alike. A routing layer sends it
// only to routes whose [Capabilities].Embedding is its Space, so that a
// fallback never mixes vectors of two spaces: when no route of the space
// can serve it, the call fails as Incompatible. A route that declares an
// Embedding serves nothing else.
type Embedding struct {
	// Space names the embedding space the vectors must belong to, as the
	// routes declare it (a model and its dimensions, such as
	// "text-embedding-3-small/1536"); it must not be empty.
	Space string
	// Dimensions, when positive, asks the provider for vectors of this
	// length (OpenAI's dimensions, Gemini's outputDimensionality); zero
	// leaves it to the model.
	Dimensions int
}

// EmbeddingInputs returns the texts of an embedding request's inputs: each
// message's text parts, concatenated.
func (r *Request) EmbeddingInputs() []string {
	out := make([]string, len(r.Messages))
	for i := range r.Messages {
		for _, p := range r.Messages[i].Content {
			out[i] += p.Text
		}
	}
	return out
}

// validateEmbedding checks an embedding request's shape: a Space, and
// inputs ([isInput]), with nothing an answer would need (tools, a schema,
// reasoning, a stream, a prefix).
func (r *Request) validateEmbedding() error {
	e := r.Embedding
	if e.Space == "" || e.Dimensions < 0 || r.asksAnswer() || !all(r.Messages, isInput) {
		return errEmbeddingShape
	}
	return nil
}

// asksAnswer reports whether r asks for what only a generated answer has:
// tools, a schema, reasoning, a stream or a prefix.
func (r *Request) asksAnswer() bool {
	return len(r.Tools) > 0 || r.Schema != nil || r.Reasoning != nil || r.OnChunk != nil || r.Prefix != ""
}

// isInput reports whether m is an embedding input: a user message of text
// parts, at least one, without tool calls.
func isInput(m *Message) bool {
	return m.Role == RoleUser && len(m.ToolCalls) == 0 && len(m.Content) > 0 &&
		!slices.ContainsFunc(m.Content, func(p Part) bool { return p.Kind != PartText })
}

// all reports whether f holds for every element of s.
func all[T any](s []T, f func(*T) bool) bool {
	for i := range s {
		if !f(&s[i]) {
			return false
		}
	}
	return true
}

var (
	errEmbeddingShape error = &Error{Class: Permanent, Reason: "embedding request: a Space, and user messages of text only, without tools, schema, reasoning or stream", NotSent: true}
	errEmbeddingSpace error = &Error{Class: Incompatible, Reason: "embedding space", NotSent: true}
	errEmbeddingRoute error = &Error{Class: Incompatible, Reason: "an embedding route", NotSent: true}
)
