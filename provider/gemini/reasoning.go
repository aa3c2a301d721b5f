package gemini

import (
	"context"
	"encoding/base64"
	"errors"
	"math"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
	"google.golang.org/genai"
)

// Dialect is the [portico.Thought].Dialect of the thoughts and thought
// signatures this adapter returns; it sends back only Thoughts of this
// dialect.
const Dialect = "gemini"

// The Kinds of this dialect's Thoughts: a thought part (thought: true, its
// summary text and any signature), the signature of a function call part
// (ID is the call's ToolCall.ID), the signature of a text part.
const (
	kindThought      = "thought"
	kindFunctionCall = "functionCall"
	kindText         = "text"
)

// thinking sets cfg's thinkingConfig from req.Reasoning: includeThoughts,
// so that the answer carries the thought summaries, and thinkingBudget
// [portico.Reasoning.Tokens] when it is positive (else the model's dynamic
// budget) (https://ai.google.dev/gemini-api/docs/thinking).
func thinking(cfg *genai.GenerateContentConfig, req *portico.Request) error {
	r := req.Reasoning
	if r == nil {
		return nil
	}
	if cfg.ThinkingConfig != nil {
		return errors.New(`gemini: Extra key "thinkingConfig" with a Reasoning setting`)
	}
	tc := &genai.ThinkingConfig{IncludeThoughts: true}
	if n := r.Tokens(); n > math.MaxInt32 {
		return errors.New("gemini: reasoning budget above 2^31-1")
	} else if n > 0 {
		tc.ThinkingBudget = genai.Ptr(int32(n))
	}
	cfg.ThinkingConfig = tc
	return nil
}

// sig encodes a thought signature for a Thought.
func sig(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// unsig decodes a Thought's signature; nil when it is not base64.
func unsig(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}

// thoughtsOf collects the answer's reasoning from its parts, in order: a
// run of thought parts is one Thought (their texts joined, the signature
// the last one sent), a signed function call or text part a Thought of its
// own.
type thoughtsOf struct {
	list []portico.Thought
	open bool // the last Thought is a thought run that may go on
}

// part takes in one part; id is its ToolCall.ID for a function call.
func (t *thoughtsOf) part(p *genai.Part, id string) {
	switch {
	case p.Thought:
		if !t.open {
			t.list = append(t.list, portico.Thought{Dialect: Dialect, Kind: kindThought})
			t.open = true
		}
		th := &t.list[len(t.list)-1]
		th.Text += p.Text
		if len(p.ThoughtSignature) > 0 {
			th.Signature = sig(p.ThoughtSignature)
		}
		return
	case p.FunctionCall != nil && len(p.ThoughtSignature) > 0:
		t.list = append(t.list, portico.Thought{Dialect: Dialect, Kind: kindFunctionCall, ID: id, Signature: sig(p.ThoughtSignature)})
	case p.FunctionCall == nil && len(p.ThoughtSignature) > 0:
		t.list = append(t.list, portico.Thought{Dialect: Dialect, Kind: kindText, Signature: sig(p.ThoughtSignature)})
	}
	t.open = false
}

// skipSignature is the thought signature Gemini documents for a function
// call it did not make, such as one of another model's answers
// (https://ai.google.dev/gemini-api/docs/thought-signatures, "FAQs": a
// dummy signature that skips the validator Gemini 3 runs on the first call
// of each model turn).
var skipSignature = []byte("skip_thought_signature_validator")

// thoughtParts returns the parts of msg's thoughts of this dialect that
// go before its text (signed thought parts), the
// signature of its text, and the signatures of its calls by ToolCall.ID.
func thoughtParts(msg *portico.Message) (parts []*genai.Part, text []byte, calls map[string][]byte) {
	for _, t := range msg.Thoughts {
		if t.Dialect != Dialect {
			continue
		}
		switch t.Kind {
		case kindThought:
			if t.Signature != "" { // the summary alone is not needed back
				parts = append(parts, &genai.Part{Text: t.Text, Thought: true, ThoughtSignature: unsig(t.Signature)})
			}
		case kindText:
			text = unsig(t.Signature)
		case kindFunctionCall:
			if calls == nil {
				calls = make(map[string][]byte, len(msg.ToolCalls))
			}
			calls[t.ID] = unsig(t.Signature)
		}
	}
	if calls == nil && parts == nil && text == nil && len(msg.ToolCalls) > 0 {
		// No thought of Gemini's: another provider's answer (after a
		// fallback), or a model that signs nothing. Its first call gets
		// the skip signature, which Gemini 3 asks for there.
		calls = map[string][]byte{msg.ToolCalls[0].ID: skipSignature}
	}
	return parts, text, calls
}

// reasoning reports a thought part of a stream: to OnChunk when the caller
// asked for the reasoning stream, as progress otherwise.
func (g *gen) reasoning(ctx context.Context, text string) error {
	if text == "" {
		return nil
	}
	return adapt.Think(ctx, g.req.Reasoning != nil && g.req.Reasoning.Stream, text, g.chunk)
}
