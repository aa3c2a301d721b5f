package anthropic

import (
	"cmp"
	"context"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// maxBlocks bounds the content blocks of a streamed message: a block index at
// or above it is an InvalidResponse, so that a hostile index cannot make the
// adapter allocate without limit.
const maxBlocks = 1024

// block is what the stream said of one content block.
type block struct {
	kind uint8 // 0: not started, kindText, kindTool, kindThought, kindOther
	call int   // index into the calls, for kindTool; the thoughts, for kindThought
}

const (
	kindText = 1 + iota
	kindTool
	kindThought // thinking and redacted_thinking
	kindOther   // server tools, ...: read and left out
)

// stream runs a streamed message and assembles the Response, from the
// events of https://docs.claude.com/en/docs/build-with-claude/streaming:
// message_start (id, model, input usage), content_block_start, _delta and
// _stop per block (text_delta, input_json_delta; thinking_delta and
// signature_delta of a thinking block, a redacted_thinking block whole in
// its start), message_delta (stop_reason,
// cumulative usage), message_stop. Ping events are skipped by the SDK; event
// types it does not know are left out, as the API asks of clients. onChunk
// may be nil (a non-streamed request the SDK sends only streamed). A
// failure after message_start carries the usage counted so far (the input
// was billed), so that limiters and the group's cost see it.
func (m *Model) stream(ctx context.Context, req *portico.Request, params sdk.MessageNewParams, opts []option.RequestOption, x *adapt.Exchange, model string) (_ *portico.Response, err error) {
	s := m.client.Messages.NewStreaming(ctx, params, opts...)
	defer s.Close()
	st := streamState{ctx: ctx, onChunk: req.OnChunk, x: x, model: model, resp: &portico.Response{Model: model}}
	st.reason = req.Reasoning != nil && req.Reasoning.Stream
	defer func() {
		if err != nil && st.started && min(st.in, st.cw, st.cr, st.out) >= 0 {
			adapt.Billed(err, usage(st.model, st.in, st.cw, st.cw1h, st.cr, st.out))
		}
	}()
	for s.Next() {
		if ctx.Err() != nil {
			break // no chunk reaches the caller after it canceled
		}
		ev := s.Current()
		if err := st.event(ctx, &ev); err != nil {
			return nil, err
		}
	}
	if err := cmp.Or(s.Err(), ctx.Err(), x.ReadErr); err != nil {
		return nil, m.classify(ctx, err, x, model, st.delivered)
	}
	return st.end()
}

// streamState is what a streamed message has said so far; stream owns it.
type streamState struct {
	ctx       context.Context
	onChunk   func(portico.Chunk) error
	reason    bool // the caller asked for the reasoning stream
	x         *adapt.Exchange
	model     string
	resp      *portico.Response
	text      strings.Builder
	blocks    []block
	calls     []portico.ToolCall
	args      [][]byte
	started   bool
	delivered bool // text reached onChunk
	stop      sdk.StopReason
	in, cw    int64 // input tokens, cache writes
	cr, out   int64 // cache reads, output tokens
	cw1h      int64 // cache writes for one hour (message_start's cache_creation)
}

// deliver passes c to onChunk, if any.
func (st *streamState) deliver(c portico.Chunk) error {
	if st.onChunk == nil {
		return nil
	}
	if err := st.onChunk(c); err != nil {
		return adapt.ChunkError(err, st.model)
	}
	st.delivered = st.delivered || c.Text != "" || c.Reasoning != ""
	return nil
}

// think passes a thinking delta to onChunk when the caller asked for the
// reasoning stream, and reports it as progress otherwise.
func (st *streamState) think(text string) error {
	return adapt.Think(st.ctx, st.reason && st.onChunk != nil, text, st.deliver)
}

// event takes in one event of the stream.
func (st *streamState) event(ctx context.Context, ev *sdk.MessageStreamEventUnion) error {
	if !eventWellFormed(ev) {
		return malformed(st.x, st.model, "stream event of the wrong shape")
	}
	if !chunked(ev) && ev.Type != "ping" {
		adapt.Alive(ctx) // message_start, a block's end: progress all the same; a ping is a keep-alive
	}
	if ev.Type == "message_start" {
		return st.start(ev)
	}
	if why := st.misplaced(ev); why != "" {
		return malformed(st.x, st.model, why)
	}
	switch ev.Type {
	case "content_block_start":
		return st.blockStart(ev)
	case "content_block_delta":
		return st.blockDelta(ev)
	case "message_delta":
		st.messageDelta(ev)
	}
	return nil
}

// start takes in the message_start event: the id, model and input usage.
func (st *streamState) start(ev *sdk.MessageStreamEventUnion) error {
	if st.started {
		return malformed(st.x, st.model, "second message_start")
	}
	st.started = true
	st.resp.ID = ev.Message.ID
	st.resp.Model = cmp.Or(string(ev.Message.Model), st.resp.Model)
	u := &ev.Message.Usage
	st.in, st.cw, st.cr, st.out = u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens
	st.cw1h = u.CacheCreation.Ephemeral1hInputTokens
	return nil
}

// misplaced returns why an event of the message may not come where it
// does (before message_start, or with a block index out of range), or "".
// Event types this adapter does not know are never misplaced.
func (st *streamState) misplaced(ev *sdk.MessageStreamEventUnion) string {
	switch ev.Type {
	case "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
	default:
		return ""
	}
	if !st.started {
		return "stream did not begin with message_start"
	}
	if ev.Index < 0 || ev.Index >= maxBlocks {
		return "content block index out of range"
	}
	return ""
}

// blockStart takes in a content_block_start event.
func (st *streamState) blockStart(ev *sdk.MessageStreamEventUnion) error {
	for int(ev.Index) >= len(st.blocks) {
		st.blocks = append(st.blocks, block{})
	}
	b := &st.blocks[ev.Index]
	if b.kind != 0 {
		return malformed(st.x, st.model, "content block started twice")
	}
	switch cb := &ev.ContentBlock; cb.Type {
	case "text":
		b.kind = kindText
		if cb.Text != "" {
			st.text.WriteString(cb.Text)
			if err := st.deliver(portico.Chunk{Text: cb.Text}); err != nil {
				return err
			}
		}
	case "thinking", "redacted_thinking":
		t, _ := thought(string(cb.Type), cb.Thinking, cb.Signature, cb.Data)
		b.kind, b.call = kindThought, len(st.resp.Thoughts)
		st.resp.Thoughts = append(st.resp.Thoughts, t)
		if t.Text != "" {
			return st.think(t.Text)
		}
	case "tool_use":
		b.kind, b.call = kindTool, len(st.calls)
		st.calls = append(st.calls, portico.ToolCall{ID: cb.ID, Name: cb.Name})
		st.args = append(st.args, nil)
		if err := st.deliver(portico.Chunk{}); err != nil {
			return err
		}
	default:
		b.kind = kindOther
	}
	return nil
}

// blockDelta takes in a content_block_delta event.
func (st *streamState) blockDelta(ev *sdk.MessageStreamEventUnion) error {
	x, model := st.x, st.model
	if int(ev.Index) >= len(st.blocks) || st.blocks[ev.Index].kind == 0 {
		return malformed(x, model, "delta for a content block not started")
	}
	b := st.blocks[ev.Index]
	switch d := &ev.Delta; d.Type {
	case "text_delta":
		if b.kind != kindText {
			return malformed(x, model, "text delta for a block that is not text")
		}
		if d.Text == "" {
			return nil
		}
		st.text.WriteString(d.Text)
		return st.deliver(portico.Chunk{Text: d.Text})
	case "input_json_delta":
		if b.kind != kindTool {
			return malformed(x, model, "input delta for a block that is not a tool call")
		}
		st.args[b.call] = append(st.args[b.call], d.PartialJSON...)
		return st.deliver(portico.Chunk{})
	case "thinking_delta", "signature_delta":
		return st.thinkingDelta(b, d)
	}
	return nil
}

// thinkingDelta takes in a thinking or signature delta for block b.
func (st *streamState) thinkingDelta(b block, d *sdk.MessageStreamEventUnionDelta) error {
	if b.kind != kindThought || st.resp.Thoughts[b.call].Kind != "thinking" {
		return malformed(st.x, st.model, d.Type+" for a block that is not thinking")
	}
	t := &st.resp.Thoughts[b.call]
	switch {
	case d.Type == "signature_delta":
		t.Signature += d.Signature
	case d.Thinking != "":
		t.Text += d.Thinking
		return st.think(d.Thinking)
	}
	return nil
}

// messageDelta takes in a message_delta event: the stop reason and usage.
func (st *streamState) messageDelta(ev *sdk.MessageStreamEventUnion) {
	if r := ev.Delta.StopReason; r != "" {
		st.stop = r
	}
	// Counts in message_delta are cumulative; input counts appear
	// there only when the API revises them.
	u := &ev.Usage
	st.out = u.OutputTokens
	if u.JSON.InputTokens.Valid() {
		st.in = u.InputTokens
	}
	if u.JSON.CacheCreationInputTokens.Valid() {
		st.cw = u.CacheCreationInputTokens
	}
	if u.JSON.CacheReadInputTokens.Valid() {
		st.cr = u.CacheReadInputTokens
	}
}

// end checks that the stream ended whole and assembles the Response.
func (st *streamState) end() (*portico.Response, error) {
	x, model := st.x, st.model
	if !st.started {
		return nil, malformed(x, model, "stream without message_start")
	}
	if st.stop == "" {
		return nil, malformed(x, model, "stream ended without a stop reason")
	}
	if min(st.in, st.cw, st.cw1h, st.cr, st.out) < 0 {
		return nil, malformed(x, model, "negative token count")
	}
	resp := st.resp
	resp.Text = st.text.String()
	resp.FinishReason = finishReason(st.stop)
	resp.Usage = usage(st.model, st.in, st.cw, st.cw1h, st.cr, st.out)
	resp.RateLimit = ParseRateLimit(x.Header, time.Now())
	if len(st.calls) > 0 {
		for i := range st.calls {
			st.calls[i].Arguments = st.args[i]
			if len(st.args[i]) == 0 {
				st.calls[i].Arguments = []byte("{}")
			}
		}
		resp.ToolCalls = st.calls
	}
	return resp, nil
}

// chunked reports whether ev reaches OnChunk, or is reported as progress
// with its reasoning: a text or thinking block's start with text, a tool
// call's start, a text, input or thinking delta.
func chunked(ev *sdk.MessageStreamEventUnion) bool {
	switch cb := &ev.ContentBlock; ev.Type {
	case "content_block_start":
		return cb.Type == "tool_use" || cb.Type == "text" && cb.Text != "" || cb.Type == "thinking" && cb.Thinking != ""
	case "content_block_delta":
		return ev.Delta.Type == "text_delta" && ev.Delta.Text != "" || ev.Delta.Type == "input_json_delta" ||
			ev.Delta.Type == "thinking_delta" && ev.Delta.Thinking != ""
	}
	return false
}
