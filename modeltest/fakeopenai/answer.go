package fakeopenai

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/internal/fakegen"
)

// answer is a generated answer, as the pieces (tokens) it is streamed in.
type answer struct {
	id        string
	content   []string // text pieces; nil when the answer is tool calls
	toolCalls []toolCall
	finish    string
	tokens    int // output tokens
}

type toolCall struct {
	id, name string
	args     []string // argument pieces
}

// textOf returns the text of a message's content: a string, or an array of
// parts whose text, for the parts of one of types, is joined by spaces.
func textOf(raw json.RawMessage, types ...string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if slices.Contains(types, p.Type) {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// countInput counts prompt tokens: words plus 3 per message.
func (c *call) countInput() int {
	n := 0
	for _, m := range c.req.Messages {
		n += 3 + len(strings.Fields(textOf(m.Content, "text")))
	}
	return n
}

// maxOutput is the request's max_completion_tokens, else max_tokens, else 0.
func (c *call) maxOutput() int {
	switch {
	case c.req.MaxCompletionTokens != nil:
		return *c.req.MaxCompletionTokens
	case c.req.MaxTokens != nil:
		return *c.req.MaxTokens
	}
	return 0
}

// rng returns a generator seeded by the server's seed, the model and the
// messages, so that the same request gets the same answer in any order.
func (c *call) rng() *rand.Rand { return c.rngOf(len(c.req.Messages)) }

// rngOf is rng over the first n messages.
func (c *call) rngOf(n int) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], c.Server().Seed())
	h.Write(b[:])
	h.Write([]byte(c.req.Model))
	for _, m := range c.req.Messages[:n] {
		h.Write([]byte(m.Role))
		h.Write(m.Content)
	}
	sum := h.Sum64()
	return rand.New(rand.NewPCG(sum, sum>>1|1))
}

// wantsTools reports which tool the model calls first, or -1 for none, and
// whether tool_choice named it.
func (c *call) wantsTools() (int, bool) {
	if len(c.req.Tools) == 0 {
		return -1, false
	}
	if n := len(c.req.Messages); n > 0 && c.req.Messages[n-1].Role == "tool" {
		return -1, false
	}
	var choice string
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(c.req.ToolChoice, &choice) != nil && json.Unmarshal(c.req.ToolChoice, &named) == nil && named.Function.Name != "" {
		for i, t := range c.req.Tools {
			if t.Function.Name == named.Function.Name {
				return i, true
			}
		}
	}
	switch {
	case choice == "none":
		return -1, false
	case choice == "required", named.Function.Name != "", c.m.cfg.ToolCalls:
		return 0, named.Function.Name != ""
	}
	return -1, false
}

// maxParallel bounds ModelConfig.ParallelToolCalls, as OpenAI does.
const maxParallel = 128

// answer generates the answer to c.req, cut by max tokens and FaultTruncate.
func (c *call) answer() *answer {
	r := c.rng()
	a := &answer{id: "chatcmpl-" + strconv.FormatUint(r.Uint64(), 36), finish: "stop"}
	limit := c.maxOutput()
	if c.Fault.Kind == FaultTruncate {
		limit = max(1, c.Fault.AfterChunks)
	}
	if ti, named := c.wantsTools(); ti >= 0 {
		c.toolCalls(a, r, limit, ti, named)
		return a
	}
	a.content = c.text(r)
	a.tokens = len(a.content)
	if limit > 0 && a.tokens > limit {
		a.content, a.tokens, a.finish = a.content[:limit], limit, "length"
	}
	return a
}

// toolCalls adds to a the calls of the tools from the ti'th (one when the
// request named it, else ParallelToolCalls unless it turned them off), cut
// at limit tokens (then "length").
func (c *call) toolCalls(a *answer, r *rand.Rand, limit, ti int, named bool) {
	n := 1
	if p := c.m.cfg.ParallelToolCalls; p > 1 && !named && (c.req.ParallelToolCalls == nil || *c.req.ParallelToolCalls) {
		n = min(p, maxParallel)
	}
	tools := c.req.Tools
	var cut bool
	a.tokens, cut = fakegen.Calls(r, len(tools), ti, n, limit, func(i int) json.RawMessage { return tools[i].Function.Parameters }, func(i int, args []string) {
		a.toolCalls = append(a.toolCalls, toolCall{id: "call_" + strconv.FormatUint(r.Uint64(), 36), name: tools[i].Function.Name, args: args})
	})
	a.finish = "tool_calls"
	if cut {
		a.finish = "length"
	}
}

// text returns the pieces of a text answer: JSON for a JSON response
// format, a continuation (see continued), else OutputTokens lorem words.
func (c *call) text(r *rand.Rand) []string {
	rf := c.req.ResponseFormat
	switch prefix, base := c.continued(); {
	case rf != nil && rf.Type == "json_schema":
		return fakegen.Pieces(fakegen.JSONText(rf.JSONSchema.Schema, r))
	case rf != nil && rf.Type == "json_object":
		return fakegen.Pieces(`{"answer":"` + fakegen.Word(r) + `"}`)
	case base >= 0: // the rest of the answer to the first base messages, or new words
		return fakegen.Continue(c.rngOf(base), prefix, r, c.m.cfg.OutputTokens)
	}
	return fakegen.Words(r, fakegen.Length(c.m.cfg.OutputTokens), false)
}

// continued reports the assistant text the request asks the model to
// continue and how many messages precede it (the conversation it
// answers), or -1 when the request continues nothing (see
// ModelConfig.Prefill).
func (c *call) continued() (string, int) {
	msgs := c.req.Messages
	n := len(msgs)
	switch {
	case n >= 2 && msgs[n-1].Role == "user" && textOf(msgs[n-1].Content, "text") == portico.ContinueInstruction && msgs[n-2].Role == "assistant":
		return textOf(msgs[n-2].Content, "text"), n - 2
	case n >= 1 && msgs[n-1].Role == "assistant" && (c.m.cfg.Prefill || c.req.ContinueFinalMessage || msgs[n-1].Prefix):
		return textOf(msgs[n-1].Content, "text"), n - 1
	}
	return "", -1
}
