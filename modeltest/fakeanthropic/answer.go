package fakeanthropic

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/portico-llm/portico/modeltest/internal/fakegen"
)

// answer is a generated answer, as the pieces (tokens) it is streamed in.
type answer struct {
	id           string
	content      []string // text pieces; nil when the answer is tool calls
	toolCalls    []toolCall
	stop         string // stop_reason
	stopSequence string // the stop sequence met, for stop "stop_sequence"
	tokens       int    // output tokens, thinking included
	thinking     string // the thinking text when thinking is enabled (and no ThinkEvery)
}

type toolCall struct {
	id, name string
	args     []string // input pieces
}

// block is one content block of a request message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or blocks
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"` // redacted_thinking
	// The rest is read for the prompt cache only (see cache.go).
	CacheControl *cacheControl   `json:"cache_control"`
	Source       json.RawMessage `json:"source"` // image, document
	ID, Name     string          // tool_use
	Input        json.RawMessage `json:"input"`       // tool_use
	ToolUseID    string          `json:"tool_use_id"` // tool_result
}

// words counts the words of content: a string, or blocks whose text and
// tool results count.
func words(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return len(strings.Fields(s))
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return 0
	}
	n := 0
	for i := range blocks {
		n += blocks[i].tokens()
	}
	return n
}

// countInput counts prompt tokens: words (the system prompt's too) plus 3
// per message.
func (c *call) countInput() int {
	n := words(c.req.System)
	for _, m := range c.req.Messages {
		n += 3 + words(m.Content)
	}
	return n
}

// lastIsToolResult reports whether the last message carries tool results.
func (c *call) lastIsToolResult() bool {
	return hasToolResult(c.req.Messages[len(c.req.Messages)-1].Role, c.req.Messages[len(c.req.Messages)-1].Content)
}

// hasToolResult reports whether a message of role with content carries
// tool results.
func hasToolResult(role string, content json.RawMessage) bool {
	if role != "user" {
		return false
	}
	var blocks []block
	if json.Unmarshal(content, &blocks) != nil {
		return false
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// toolRounds counts the user turns that carry tool results.
func (c *call) toolRounds() int {
	n := 0
	for _, m := range c.req.Messages {
		if hasToolResult(m.Role, m.Content) {
			n++
		}
	}
	return n
}

// wantsTools reports which tool the model calls first, or -1 for none, and
// whether tool_choice named it.
func (c *call) wantsTools() (int, bool) {
	if len(c.req.Tools) == 0 || c.lastIsToolResult() && c.toolRounds() >= max(1, c.m.cfg.ToolRounds) {
		return -1, false
	}
	tc := c.req.ToolChoice
	switch {
	case tc != nil && tc.Type == "none":
		return -1, false
	case tc != nil && tc.Type == "tool":
		for i, t := range c.req.Tools {
			if t.Name == tc.Name {
				return i, true
			}
		}
		return -1, false
	case tc != nil && tc.Type == "any", c.m.cfg.ToolCalls:
		return 0, false
	}
	return -1, false
}

// rng returns a generator seeded by the server's seed, the model and the
// conversation, so that the same request gets the same answer in any order.
func (c *call) rng() *rand.Rand { return c.rngOf(len(c.req.Messages)) }

// rngOf is rng over the first n messages.
func (c *call) rngOf(n int) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], c.Server().Seed())
	h.Write(b[:])
	h.Write([]byte(c.Model))
	h.Write(c.req.System)
	for _, m := range c.req.Messages[:n] {
		h.Write([]byte(m.Role))
		h.Write(m.Content)
	}
	sum := h.Sum64()
	return rand.New(rand.NewPCG(sum, sum>>1|1))
}

// maxParallel bounds ModelConfig.ParallelToolCalls.
const maxParallel = 128

// answer generates the answer to c.req, cut by max_tokens, a stop sequence
// and FaultTruncate.
func (c *call) answer() *answer {
	a := c.answerText()
	if c.thinkingEnabled() && c.m.cfg.ThinkEvery <= 0 {
		a.thinking = c.thoughts()
		a.tokens += len(strings.Fields(a.thinking))
	}
	return a
}

// answerText generates the text or tool calls of the answer.
func (c *call) answerText() *answer {
	r := c.rng()
	a := &answer{id: "msg_" + strconv.FormatUint(r.Uint64(), 36), stop: "end_turn"}
	limit := *c.req.MaxTokens
	if c.Fault.Kind == FaultTruncate {
		limit = max(1, c.Fault.AfterChunks)
	}
	if ti, named := c.wantsTools(); ti >= 0 {
		n := 1
		if p := c.m.cfg.ParallelToolCalls; p > 1 && !named && (c.req.ToolChoice == nil || !c.req.ToolChoice.DisableParallelToolUse) {
			n = min(p, maxParallel)
		}
		tools := c.req.Tools
		var cut bool
		a.tokens, cut = fakegen.Calls(r, len(tools), ti, n, limit, func(i int) json.RawMessage { return tools[i].InputSchema }, func(i int, args []string) {
			a.toolCalls = append(a.toolCalls, toolCall{id: "toolu_" + strconv.FormatUint(r.Uint64(), 36), name: tools[i].Name, args: args})
		})
		a.stop = "tool_use"
		if cut {
			a.stop = "max_tokens"
		}
		return a
	}
	if oc := c.req.OutputConfig; oc != nil && oc.Format != nil && oc.Format.Type == "json_schema" {
		a.content = fakegen.Pieces(fakegen.JSONText(oc.Format.Schema, r))
	} else {
		a.content = c.text(r)
		a.cutAtStop(c.req.StopSequences)
	}
	a.tokens = len(a.content)
	if a.tokens > limit {
		a.content, a.tokens, a.stop, a.stopSequence = a.content[:limit], limit, "max_tokens", ""
	}
	return a
}

// cutAtStop ends the text before the first of seqs it contains, with
// stop_reason "stop_sequence", keeping the pieces whole up to it.
func (a *answer) cutAtStop(seqs []string) {
	if len(seqs) == 0 {
		return
	}
	text := strings.Join(a.content, "")
	at, seq := -1, ""
	for _, s := range seqs {
		if i := strings.Index(text, s); s != "" && i >= 0 && (at < 0 || i < at) {
			at, seq = i, s
		}
	}
	if at < 0 {
		return
	}
	n := 0
	for i, p := range a.content {
		if n+len(p) > at {
			a.content = append(a.content[:i:i], p[:at-n])
			if p[:at-n] == "" {
				a.content = a.content[:i]
			}
			break
		}
		n += len(p)
	}
	a.stop, a.stopSequence = "stop_sequence", seq
}

// text returns the pieces of a text answer: OutputTokens lorem words (8 by
// default) or, when the last message is the assistant's (a prefill, which
// the API continues), the rest of the answer to the conversation before it
// when the prefill is its start, else new words up to OutputTokens in all.
func (c *call) text(r *rand.Rand) []string {
	msgs := c.req.Messages
	last := len(msgs) - 1
	if last < 0 || msgs[last].Role != "assistant" {
		return fakegen.Words(r, fakegen.Length(c.m.cfg.OutputTokens), false)
	}
	return fakegen.Continue(c.rngOf(last), textOf(msgs[last].Content), r, c.m.cfg.OutputTokens)
}

// textOf joins the text of content: a string, or its text blocks.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []block
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}
