package fakeanthropic

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// wireUsage is the Messages API's usage object, cache_creation's breakdown
// by TTL included (https://docs.claude.com/en/api/messages, "usage";
// https://docs.claude.com/en/docs/build-with-claude/prompt-caching, "1-hour
// cache duration": ephemeral_5m_input_tokens and ephemeral_1h_input_tokens).
type wireUsage struct {
	InputTokens              int               `json:"input_tokens"`
	CacheCreationInputTokens int               `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int               `json:"cache_read_input_tokens"`
	CacheCreation            wireCacheCreation `json:"cache_creation"`
	OutputTokens             int               `json:"output_tokens"`
}

type wireCacheCreation struct {
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type wireMessage struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []wireBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        wireUsage   `json:"usage"`
}

// usage splits the input as the API counts it: cache reads, cache writes
// and the rest, input_tokens.
func (c *call) usage(output int) wireUsage {
	read := max(0, min(c.m.cfg.CacheReadInputTokens, c.inputTokens))
	write := max(0, min(c.m.cfg.CacheWriteInputTokens, c.inputTokens-read))
	hour := max(0, min(c.m.cfg.CacheWrite1hInputTokens, write))
	if c.m.cfg.PromptCache {
		read, write, hour = c.cacheRead, c.cacheWrite, c.cacheHour
	}
	return wireUsage{InputTokens: c.inputTokens - read - write, CacheCreationInputTokens: write, CacheReadInputTokens: read,
		CacheCreation: wireCacheCreation{Ephemeral5m: write - hour, Ephemeral1h: hour}, OutputTokens: output}
}

// input is a tool call's input as a JSON object: its pieces joined, or {}
// when max_tokens cut them short of a value.
func (tc *toolCall) input() json.RawMessage {
	if s := strings.Join(tc.args, ""); json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return json.RawMessage(`{}`)
}

func (a *answer) stopSeq() *string {
	if a.stop == "stop_sequence" {
		return &a.stopSequence
	}
	return nil
}

// whole writes a non-streamed answer.
func (c *call) whole(a *answer) {
	msg := wireMessage{ID: a.id, Type: "message", Role: "assistant", Model: c.Model, Content: []wireBlock{},
		StopReason: &a.stop, StopSequence: a.stopSeq(), Usage: c.usage(a.tokens)}
	if a.thinking != "" {
		b := c.thinkingBlock(a.thinking)
		if b["type"] == "thinking" {
			msg.Content = append(msg.Content, wireBlock{Type: "thinking", Thinking: &a.thinking, Signature: b["signature"].(string)})
		} else {
			msg.Content = append(msg.Content, wireBlock{Type: "redacted_thinking", Data: b["data"].(string)})
		}
	}
	if a.content != nil {
		text := strings.Join(a.content, "")
		msg.Content = append(msg.Content, wireBlock{Type: "text", Text: &text})
	}
	for i := range a.toolCalls {
		tc := &a.toolCalls[i]
		msg.Content = append(msg.Content, wireBlock{Type: "tool_use", ID: tc.id, Name: tc.name, Input: tc.input()})
	}
	body, _ := json.Marshal(msg)
	c.Whole(body, a.tokens)
}

// delta is one content event of a stream: a piece of block's text or input.
type delta struct {
	block int
	piece string
	tool  bool
	first bool // the block's first delta: its content_block_start goes before
	last  bool // its last: its content_block_stop goes after
}

// stream writes a streamed answer as Anthropic's server-sent events:
// message_start, per block content_block_start, deltas and
// content_block_stop (a ping after the first start), message_delta with the
// stop reason and usage, message_stop.
//
// With ModelConfig.ThinkEvery, message_start comes at once and a thinking
// block, index 0, fills the wait for the first token, as Anthropic streams
// extended thinking: content_block_start of a "thinking" block,
// thinking_delta events, a signature_delta, content_block_stop; the
// answer's blocks follow from index 1. With PingEvery, ping events fill it.
func (c *call) stream(a *answer) {
	start := func() {
		c.event("message_start", map[string]any{"type": "message_start", "message": wireMessage{
			ID: a.id, Type: "message", Role: "assistant", Model: c.Model, Content: []wireBlock{}, Usage: c.usage(1)}})
	}
	var thought strings.Builder
	think := func(i int) {
		if i == 0 {
			start()
			c.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		}
		step := "Step " + strconv.Itoa(i+1) + ". "
		thought.WriteString(step)
		c.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "thinking_delta", "thinking": step}})
	}
	ping := func() { c.Event("ping", []byte(`{"type": "ping"}`)) }
	thoughts, ok := c.BeginStream(fakecore.Waiting{Think: think, KeepAlive: ping})
	if !ok {
		return
	}
	block := 0
	switch {
	case thoughts > 0:
		c.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "signature_delta", "signature": signature(c.Model, thought.String())}})
		c.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		block = 1
	case a.thinking != "":
		start()
		c.streamThinking(a.thinking)
		block = 1
	default:
		start()
	}
	first := block
	var deltas []delta
	add := func(block int, pieces []string, tool bool) {
		for i, p := range pieces {
			deltas = append(deltas, delta{block: block, piece: p, tool: tool, first: i == 0, last: i == len(pieces)-1})
		}
	}
	if len(a.content) > 0 {
		add(block, a.content, false)
		block++
	}
	for i := range a.toolCalls {
		add(block+i, a.toolCalls[i].args, true)
	}
	send := func(i int) {
		d := deltas[i]
		if d.first {
			cb := map[string]any{"type": "text", "text": ""}
			if d.tool {
				tc := &a.toolCalls[d.block-block]
				cb = map[string]any{"type": "tool_use", "id": tc.id, "name": tc.name, "input": map[string]any{}}
			}
			c.event("content_block_start", map[string]any{"type": "content_block_start", "index": d.block, "content_block": cb})
			if i == 0 && first == 0 {
				ping()
			}
		}
		dv := map[string]any{"type": "text_delta", "text": d.piece}
		if d.tool {
			dv = map[string]any{"type": "input_json_delta", "partial_json": d.piece}
		}
		c.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": d.block, "delta": dv})
		if d.last {
			c.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": d.block})
		}
	}
	if !c.Events(len(deltas), send, func() []byte { return []byte(c.Fault.Body) }) {
		return
	}
	c.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": a.stop, "stop_sequence": a.stopSeq()},
		"usage": map[string]any{"output_tokens": a.tokens}})
	c.event("message_stop", map[string]any{"type": "message_stop"})
}

// streamThinking streams block 0, the thinking text's: a thinking block's
// start, one thinking_delta, a signature_delta and its stop; or a
// redacted_thinking block whole in its start, then its stop.
func (c *call) streamThinking(text string) {
	b := c.thinkingBlock(text)
	if b["type"] == "redacted_thinking" {
		c.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": b})
	} else {
		c.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		c.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "thinking_delta", "thinking": text}})
		c.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "signature_delta", "signature": b["signature"]}})
	}
	c.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
}

// event writes one named event whose data is v as JSON.
func (c *call) event(name string, v any) {
	b, _ := json.Marshal(v)
	c.Event(name, b)
}
