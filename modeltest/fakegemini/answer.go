package fakegemini

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
	"github.com/portico-llm/portico/modeltest/internal/fakegen"
)

// answer is a generated answer, as the pieces (tokens) it is streamed in.
type answer struct {
	id     string
	text   []string       // text pieces; nil when the answer is function calls
	calls  []functionCall // whole calls: Gemini sends each in one chunk
	sig    string         // the thought signature of the first call, or of the text; or ""
	finish string
	tokens int    // candidates tokens
	think  string // the thought summary, with includeThoughts (and no ThinkEvery)
}

// countInput counts prompt tokens: words of text parts plus 3 per content,
// the system instruction included.
func (c *call) countInput() int {
	n := 0
	count := func(ct *content) {
		n += 3
		for _, p := range ct.Parts {
			if p.Text != nil {
				n += len(strings.Fields(*p.Text))
			}
		}
	}
	if c.req.SystemInstruction != nil {
		count(c.req.SystemInstruction)
	}
	for i := range c.req.Contents {
		count(&c.req.Contents[i])
	}
	return n
}

// rng is seeded by the server's seed, the model and the contents, so that
// the same request gets the same answer in any order.
func (c *call) rng() *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], c.Server().Seed())
	h.Write(b[:])
	h.Write([]byte(c.req.model))
	for _, ct := range c.req.Contents {
		h.Write([]byte(ct.Role))
		for _, p := range ct.Parts {
			if p.Text != nil {
				h.Write([]byte(*p.Text))
			}
		}
	}
	sum := h.Sum64()
	return rand.New(rand.NewPCG(sum, sum>>1|1))
}

// responseRounds counts the contents that carry function responses.
func (c *call) responseRounds() int {
	n := 0
	for _, ct := range c.req.Contents {
		if len(ct.Parts) > 0 && ct.Parts[0].FunctionResponse != nil {
			n++
		}
	}
	return n
}

// maxParallel bounds ModelConfig.ParallelToolCalls.
const maxParallel = 128

// calling returns the index of the declared function the model calls first,
// or -1, and the declarations.
func (c *call) calling() (int, []string, []json.RawMessage) {
	names, params := c.declarations()
	if len(names) == 0 || c.toolRoundsDone() {
		return -1, nil, nil
	}
	mode := ""
	var allowed []string
	if tc := c.req.ToolConfig; tc != nil {
		mode, allowed = tc.FunctionCallingConfig.Mode, tc.FunctionCallingConfig.AllowedFunctionNames
	}
	if mode == "NONE" || mode != "ANY" && !c.m.ToolCalls {
		return -1, nil, nil
	}
	return firstAllowed(names, allowed), names, params
}

// declarations are the names and parameter schemas of the request's
// declared functions, in order.
func (c *call) declarations() ([]string, []json.RawMessage) {
	var names []string
	var params []json.RawMessage
	for _, t := range c.req.Tools {
		for _, fd := range t.FunctionDeclarations {
			names = append(names, fd.Name)
			p := fd.ParametersJSONSchema
			if len(p) == 0 {
				p = lowerTypes(fd.Parameters)
			}
			params = append(params, p)
		}
	}
	return names, params
}

// toolRoundsDone reports whether the last content answers function calls
// and the model has made its ModelConfig.ToolRounds (at least 1) of them.
func (c *call) toolRoundsDone() bool {
	n := len(c.req.Contents)
	if n == 0 {
		return false
	}
	ps := c.req.Contents[n-1].Parts
	return len(ps) > 0 && ps[0].FunctionResponse != nil && c.responseRounds() >= max(1, c.m.ToolRounds)
}

// firstAllowed is the index in names of the first of allowed that is
// declared, or 0.
func firstAllowed(names, allowed []string) int {
	for _, a := range allowed {
		if i := slices.Index(names, a); i >= 0 {
			return i
		}
	}
	return 0
}

// answer generates the answer to c.req, cut by maxOutputTokens and
// FaultTruncate.
func (c *call) answer() *answer {
	r := c.rng()
	a := &answer{id: strconv.FormatUint(r.Uint64(), 36), finish: "STOP"}
	if c.m.FinishReason != "" {
		a.finish = c.m.FinishReason
	}
	limit := 0
	if p := c.req.GenerationConfig.MaxOutputTokens; p != nil {
		limit = *p
	}
	if c.Fault.Kind == FaultTruncate {
		limit = max(1, c.Fault.AfterChunks)
	}
	if c.includeThoughts() && c.m.ThinkEvery <= 0 {
		a.think = c.thoughtSummary()
	}
	if first, names, params := c.calling(); first >= 0 {
		c.functionCalls(a, r, limit, first, names, params)
		return a
	}
	a.text = c.text(r)
	a.tokens = len(a.text)
	if limit > 0 && a.tokens > limit {
		a.text, a.tokens, a.finish = a.text[:limit], limit, "MAX_TOKENS"
	}
	if c.m.ThoughtSignatures {
		a.sig = textSignature(c.req.model, a.id)
	}
	return a
}

// functionCalls adds to a the calls of ParallelToolCalls functions from the
// first'th of names, whole ones only up to limit tokens (then MAX_TOKENS).
func (c *call) functionCalls(a *answer, r *rand.Rand, limit, first int, names []string, params []json.RawMessage) {
	for k := range min(max(1, c.m.ParallelToolCalls), maxParallel) {
		i := (first + k) % len(names)
		args := fakegen.JSONText(params[i], r)
		if !strings.HasPrefix(args, "{") {
			args = "{}" // a function without parameters: args is still an object
		}
		tokens := len(fakegen.Pieces(args))
		if limit > 0 && a.tokens+tokens > limit {
			a.finish = "MAX_TOKENS"
			break
		}
		fc := functionCall{Name: names[i], Args: json.RawMessage(args)}
		if c.m.CallIDs {
			fc.ID = "fc-" + strconv.FormatUint(r.Uint64(), 36)
		}
		a.calls = append(a.calls, fc)
		a.tokens += tokens
	}
	if c.m.ThoughtSignatures && len(a.calls) > 0 {
		a.sig = callSignature(c.req.model, &a.calls[0])
	}
}

// text returns the pieces of a text answer: JSON for a JSON response type,
// valid against its schema, else OutputTokens lorem words (8 by default).
func (c *call) text(r *rand.Rand) []string {
	gc := &c.req.GenerationConfig
	switch {
	case gc.ResponseMIMEType == "application/json" && len(gc.ResponseJSONSchema) > 0:
		return fakegen.Pieces(fakegen.JSONText(gc.ResponseJSONSchema, r))
	case gc.ResponseMIMEType == "application/json" && len(gc.ResponseSchema) > 0:
		return fakegen.Pieces(fakegen.JSONText(lowerTypes(gc.ResponseSchema), r))
	case gc.ResponseMIMEType == "application/json":
		return fakegen.Pieces(`{"answer":"` + fakegen.Word(r) + `"}`)
	}
	return fakegen.Words(r, fakegen.Length(c.m.OutputTokens), false)
}

// lowerTypes rewrites responseSchema's OpenAPI type names ("OBJECT",
// "STRING") as JSON Schema's, for the generator.
func lowerTypes(schema json.RawMessage) json.RawMessage {
	var v any
	if len(schema) == 0 || json.Unmarshal(schema, &v) != nil {
		return schema
	}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if s, ok := t["type"].(string); ok {
				t["type"] = strings.ToLower(s)
			}
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	b, _ := json.Marshal(v)
	return b
}

// The wire shapes of a GenerateContentResponse
// (https://ai.google.dev/api/generate-content#generatecontentresponse).
type (
	wirePart struct {
		Text             *string       `json:"text,omitempty"`
		FunctionCall     *functionCall `json:"functionCall,omitempty"`
		Thought          bool          `json:"thought,omitempty"`
		ThoughtSignature string        `json:"thoughtSignature,omitempty"`
	}
	wireCandidate struct {
		Content      *wireContent `json:"content,omitempty"`
		FinishReason string       `json:"finishReason,omitempty"`
		Index        int          `json:"index"`
	}
	wireContent struct {
		Parts []wirePart `json:"parts"`
		Role  string     `json:"role"`
	}
	wireUsage struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	}
	wireResponse struct {
		Candidates     []wireCandidate `json:"candidates,omitempty"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback,omitempty"`
		UsageMetadata *wireUsage `json:"usageMetadata,omitempty"`
		ModelVersion  string     `json:"modelVersion"`
		ResponseID    string     `json:"responseId"`
	}
)

// usage reports out output tokens, thoughts included in the total.
func (c *call) usage(out int) *wireUsage {
	u := &wireUsage{PromptTokenCount: c.inputTokens, CandidatesTokenCount: out, ThoughtsTokenCount: c.m.ThoughtsTokens}
	if c.includeThoughts() {
		u.ThoughtsTokenCount = c.thoughtTokens(c.thoughtSummary())
	}
	u.CachedContentTokenCount = max(0, min(c.m.CachedInputTokens, c.inputTokens))
	u.TotalTokenCount = u.PromptTokenCount + u.CandidatesTokenCount + u.ThoughtsTokenCount
	return u
}

// parts returns the answer's parts: its thought summary, if any, then all
// text as one part, or one part per function call; the signature on the
// text or the first call.
func (a *answer) parts() []wirePart {
	var ps []wirePart
	if a.think != "" {
		ps = append(ps, wirePart{Text: &a.think, Thought: true})
	}
	if a.calls == nil {
		t := strings.Join(a.text, "")
		return append(ps, wirePart{Text: &t, ThoughtSignature: a.sig})
	}
	for i := range a.calls {
		ps = append(ps, wirePart{FunctionCall: &a.calls[i]})
		if i == 0 {
			ps[len(ps)-1].ThoughtSignature = a.sig
		}
	}
	return ps
}

func (c *call) response(cands []wireCandidate, u *wireUsage, id string) []byte {
	b, _ := json.Marshal(wireResponse{Candidates: cands, UsageMetadata: u, ModelVersion: c.req.model, ResponseID: id})
	return b
}

// whole writes a non-streamed answer.
func (c *call) whole(a *answer) {
	var parts []wirePart
	if a.text != nil || a.calls != nil {
		parts = a.parts()
	}
	body := c.response([]wireCandidate{{Content: &wireContent{Parts: parts, Role: "model"}, FinishReason: a.finish}}, c.usage(a.tokens), a.id)
	c.Whole(body, a.tokens)
}

// streamAnswer writes a streamed answer: one event per text piece or
// function call, each with the usage so far, then a last event with the
// finish reason and the whole usage.
func (c *call) streamAnswer(a *answer) {
	think := func(i int) {
		t := "**Step " + strconv.Itoa(i+1) + "**\n\nConsidering the request. "
		c.Event("", c.response([]wireCandidate{{Content: &wireContent{Parts: []wirePart{{Text: &t, Thought: true}}, Role: "model"}}}, c.usage(0), a.id))
	}
	if _, ok := c.BeginStream(fakecore.Waiting{Think: think, KeepAlive: func() { c.Comment("keep-alive") }}); !ok {
		return
	}
	if a.think != "" {
		c.Event("", c.response([]wireCandidate{{Content: &wireContent{Parts: []wirePart{{Text: &a.think, Thought: true}}, Role: "model"}}}, c.usage(0), a.id))
	}
	n := len(a.text)
	if a.calls != nil {
		n = len(a.calls)
	}
	sent := 0
	send := func(i int) {
		var p wirePart
		if a.calls != nil {
			p = wirePart{FunctionCall: &a.calls[i]}
			if i == 0 {
				p.ThoughtSignature = a.sig
			}
			sent = a.tokens * (i + 1) / n
		} else {
			p = wirePart{Text: &a.text[i]}
			sent = i + 1
		}
		c.Event("", c.response([]wireCandidate{{Content: &wireContent{Parts: []wirePart{p}, Role: "model"}}}, c.usage(sent), a.id))
	}
	if !c.Events(n, send, c.streamErrorData) {
		return
	}
	empty, last := "", wirePart{}
	last.Text = &empty
	if a.calls == nil {
		last.ThoughtSignature = a.sig // Gemini 3 signs a text answer's last part
	}
	c.Event("", c.response([]wireCandidate{{Content: &wireContent{Parts: []wirePart{last}, Role: "model"}, FinishReason: a.finish}}, c.usage(a.tokens), a.id))
}

// streamErrorData is FaultStreamError's event: Google's error object.
func (c *call) streamErrorData() []byte {
	rpc := c.streamStatus()
	return errorJSON(rpcCode(rpc), rpc, c.Fault.Message, c.Fault.Type, c.Fault.RetryAfter)
}

// blocked answers a blocked prompt: promptFeedback.blockReason, usage of
// the prompt only, no candidates.
func (c *call) blocked() {
	resp := wireResponse{UsageMetadata: &wireUsage{PromptTokenCount: c.inputTokens, TotalTokenCount: c.inputTokens}, ModelVersion: c.req.model, ResponseID: "blocked"}
	resp.PromptFeedback = &struct {
		BlockReason string `json:"blockReason"`
	}{c.m.BlockReason}
	b, _ := json.Marshal(resp)
	if c.req.stream {
		if _, ok := c.BeginStream(fakecore.Waiting{}); ok {
			c.Event("", b)
		}
		return
	}
	c.W.Header().Set("Content-Type", "application/json")
	c.W.WriteHeader(http.StatusOK)
	_, _ = c.W.Write(b)
}
