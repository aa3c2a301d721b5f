package gemini

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/portico-llm/portico/provider/internal/adapt"
	"google.golang.org/genai"
)

// setExtra sets a sampling option the SDK has a field for. It accepts
// Gemini's camelCase key and the snake_case spelling other providers use
// (top_p, stop, seed), so that one Request can go to either. It reports false
// for keys it does not know and for values of another type, which the
// caller passes on as raw JSON, and an error for a candidate count other
// than 1 (the adapter reads one candidate; more would be billed and lost).
func setExtra(cfg *genai.GenerateContentConfig, key string, v any) (bool, error) {
	if field := floatField(cfg, key); field != nil {
		f, ok := adapt.Float(v)
		if !ok || f > math.MaxFloat32 || f < -math.MaxFloat32 {
			return false, nil
		}
		*field = genai.Ptr(float32(f))
		return true, nil
	}
	switch key {
	case "seed":
		f, ok := adapt.Float(v)
		if !ok || !whole32(f) {
			return false, nil
		}
		cfg.Seed = genai.Ptr(int32(f))
	case "candidateCount", "candidate_count", "n":
		if f, ok := adapt.Float(v); !ok || f != 1 {
			return false, fmt.Errorf("gemini: Extra %q: only a candidate count of 1 is supported", key)
		}
		cfg.CandidateCount = 1
	case "stopSequences", "stop_sequences", "stop":
		seqs, ok := adapt.Strings(v)
		if !ok {
			return false, nil
		}
		cfg.StopSequences = seqs
	case "thinkingConfig", "thinking_config":
		return setThinking(cfg, v), nil
	default:
		return false, nil
	}
	return true, nil
}

// whole32 reports whether f is a whole number in int32's range.
func whole32(f float64) bool { return f == math.Trunc(f) && f <= math.MaxInt32 && f >= math.MinInt32 }

// floatField returns the config field of a float sampling option, or nil.
func floatField(cfg *genai.GenerateContentConfig, key string) **float32 {
	switch key {
	case "temperature":
		return &cfg.Temperature
	case "topP", "top_p":
		return &cfg.TopP
	case "topK", "top_k":
		return &cfg.TopK
	case "presencePenalty", "presence_penalty":
		return &cfg.PresencePenalty
	case "frequencyPenalty", "frequency_penalty":
		return &cfg.FrequencyPenalty
	}
	return nil
}

// setThinking sets a genai.ThinkingConfig value or pointer; a map goes into
// generationConfig as it is.
func setThinking(cfg *genai.GenerateContentConfig, v any) bool {
	switch tc := v.(type) {
	case genai.ThinkingConfig:
		cfg.ThinkingConfig = &tc
	case *genai.ThinkingConfig:
		cfg.ThinkingConfig = tc
	default:
		return false
	}
	return true
}

// callIDPrefix marks the tool call IDs the adapter made, before Thoughts,
// for calls without an id or with a thought signature; newIDPrefix marks
// those it makes now for calls without an id: letters, digits and
// underscores only, which every provider takes as a tool call id
// (Anthropic's tool_use id is ^[a-zA-Z0-9_-]+$), for a fallback.
const (
	callIDPrefix = "gemini-call:"
	newIDPrefix  = "gemini_call_"
)

// encodeCallID returns the ToolCall.ID of the i-th function call of an
// answer: Gemini's own id when it sent one, otherwise "gemini_call_<i>",
// which [decodeCallID] takes back to no id. A call's thought signature
// travels in the answer's Thoughts, not in its ID, so that no other
// provider is sent it (https://ai.google.dev/gemini-api/docs/thought-signatures:
// Gemini 3 refuses a conversation whose function calls lost their
// signatures). An id of Gemini's that looks like the adapter's is kept in
// the earlier form, "gemini-call:<i>::<id>".
func encodeCallID(i int, id string) string {
	switch {
	case id == "":
		return newIDPrefix + strconv.Itoa(i)
	case strings.HasPrefix(id, callIDPrefix) || strings.HasPrefix(id, newIDPrefix):
		return callIDPrefix + strconv.Itoa(i) + "::" + id
	}
	return id
}

// decodeCallID splits a ToolCall.ID into the id and thought signature to send
// to Gemini (a signature in the ID, as this adapter made them before
// Thoughts, is still read): an ID the adapter did not make is sent as it is.
func decodeCallID(s string) (id string, sig []byte) {
	if n, ok := strings.CutPrefix(s, newIDPrefix); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(s, callIDPrefix)
	if !ok {
		return s, nil
	}
	_, rest, ok1 := strings.Cut(rest, ":")
	enc, id, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return s, nil
	}
	sig, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(sig) == 0 {
		sig = nil
	}
	return id, sig
}
