package anthropic

import (
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
	kind uint8 // 0: not started, kindText, kindTool, kindOther
	call int   // index into the calls, for kindTool
}

const (
	kindText = 1 + iota
	kindTool
	kindOther // thinking, server tools, ...: read and left out
)

// stream runs a streamed message and assembles the Response, from the
// events of https://docs.claude.com/en/docs/build-with-claude/streaming:
// message_start (id, model, input usage), content_block_start, _delta and
// _stop per block (text_delta, input_json_delta), message_delta (stop_reason,
// cumulative usage), message_stop. Ping events are skipped by the SDK; event
// types it does not know are left out, as the API asks of clients. onChunk
// may be nil (a non-streamed request the SDK sends only streamed). A
// failure after message_start carries the usage counted so far (the input
// was billed), so that limiters and the group's cost see it.
func (m *Model) stream(ctx context.Context, onChunk func(portico.Chunk) error, params sdk.MessageNewParams, opts []option.RequestOption, x *adapt.Exchange, model string) (_ *portico.Response, err error) {
	s := m.client.Messages.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var (
		text      strings.Builder
		blocks    []block
		calls     []portico.ToolCall
		args      [][]byte
		started   bool
		delivered bool // text reached onChunk
		stop      sdk.StopReason
		in, cw    int64 // input tokens, cache writes
		cr, out   int64 // cache reads, output tokens
		resp      = &portico.Response{Model: model}
	)
	defer func() {
		if err != nil && started && in >= 0 && cw >= 0 && cr >= 0 && out >= 0 {
			adapt.Billed(err, usage(in, cw, cr, out))
		}
	}()
	deliver := func(c portico.Chunk) error {
		if onChunk == nil {
			return nil
		}
		if err := onChunk(c); err != nil {
			return adapt.ChunkError(err, model)
		}
		delivered = delivered || c.Text != ""
		return nil
	}
	for s.Next() {
		if ctx.Err() != nil {
			break // no chunk reaches the caller after it canceled
		}
		ev := s.Current()
		if !eventWellFormed(&ev) {
			return nil, malformed(x, model, "stream event of the wrong shape")
		}
		if !chunked(&ev) && ev.Type != "ping" {
			adapt.Alive(ctx) // message_start, a thinking delta: progress all the same; a ping is a keep-alive
		}
		if ev.Type == "message_start" {
			if started {
				return nil, malformed(x, model, "second message_start")
			}
			started = true
			resp.ID = ev.Message.ID
			if ev.Message.Model != "" {
				resp.Model = string(ev.Message.Model)
			}
			u := &ev.Message.Usage
			in, cw, cr, out = u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens
			continue
		}
		switch ev.Type {
		case "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
			if !started {
				return nil, malformed(x, model, "stream did not begin with message_start")
			}
		default:
			continue // an event type this adapter does not know
		}
		if ev.Index < 0 || ev.Index >= maxBlocks {
			return nil, malformed(x, model, "content block index out of range")
		}
		switch ev.Type {
		case "content_block_start":
			for int(ev.Index) >= len(blocks) {
				blocks = append(blocks, block{})
			}
			b := &blocks[ev.Index]
			if b.kind != 0 {
				return nil, malformed(x, model, "content block started twice")
			}
			switch cb := &ev.ContentBlock; cb.Type {
			case "text":
				b.kind = kindText
				if cb.Text != "" {
					text.WriteString(cb.Text)
					if err := deliver(portico.Chunk{Text: cb.Text}); err != nil {
						return nil, err
					}
				}
			case "tool_use":
				b.kind, b.call = kindTool, len(calls)
				calls = append(calls, portico.ToolCall{ID: cb.ID, Name: cb.Name})
				args = append(args, nil)
				if err := deliver(portico.Chunk{}); err != nil {
					return nil, err
				}
			default:
				b.kind = kindOther
			}
		case "content_block_delta":
			if int(ev.Index) >= len(blocks) || blocks[ev.Index].kind == 0 {
				return nil, malformed(x, model, "delta for a content block not started")
			}
			b := blocks[ev.Index]
			switch d := &ev.Delta; d.Type {
			case "text_delta":
				if b.kind != kindText {
					return nil, malformed(x, model, "text delta for a block that is not text")
				}
				if d.Text == "" {
					continue
				}
				text.WriteString(d.Text)
				if err := deliver(portico.Chunk{Text: d.Text}); err != nil {
					return nil, err
				}
			case "input_json_delta":
				if b.kind != kindTool {
					return nil, malformed(x, model, "input delta for a block that is not a tool call")
				}
				args[b.call] = append(args[b.call], d.PartialJSON...)
				if err := deliver(portico.Chunk{}); err != nil {
					return nil, err
				}
			}
		case "message_delta":
			if r := ev.Delta.StopReason; r != "" {
				stop = r
			}
			// Counts in message_delta are cumulative; input counts appear
			// there only when the API revises them.
			u := &ev.Usage
			out = u.OutputTokens
			if u.JSON.InputTokens.Valid() {
				in = u.InputTokens
			}
			if u.JSON.CacheCreationInputTokens.Valid() {
				cw = u.CacheCreationInputTokens
			}
			if u.JSON.CacheReadInputTokens.Valid() {
				cr = u.CacheReadInputTokens
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, m.classify(ctx, err, x, model, delivered)
	}
	if ctx.Err() != nil {
		return nil, m.classify(ctx, ctx.Err(), x, model, delivered)
	}
	if x.ReadErr != nil {
		return nil, m.classify(ctx, x.ReadErr, x, model, delivered)
	}
	if !started {
		return nil, malformed(x, model, "stream without message_start")
	}
	if stop == "" {
		return nil, malformed(x, model, "stream ended without a stop reason")
	}
	if in < 0 || cw < 0 || cr < 0 || out < 0 {
		return nil, malformed(x, model, "negative token count")
	}
	resp.Text = text.String()
	resp.FinishReason = finishReason(stop)
	resp.Usage = usage(in, cw, cr, out)
	resp.RateLimit = ParseRateLimit(x.Header, time.Now())
	if len(calls) > 0 {
		for i := range calls {
			calls[i].Arguments = args[i]
			if len(args[i]) == 0 {
				calls[i].Arguments = []byte("{}")
			}
		}
		resp.ToolCalls = calls
	}
	return resp, nil
}

// chunked reports whether ev reaches OnChunk: a text block's start with
// text, a tool call's start, a text or input delta.
func chunked(ev *sdk.MessageStreamEventUnion) bool {
	switch ev.Type {
	case "content_block_start":
		return ev.ContentBlock.Type == "tool_use" || ev.ContentBlock.Type == "text" && ev.ContentBlock.Text != ""
	case "content_block_delta":
		return ev.Delta.Type == "text_delta" && ev.Delta.Text != "" || ev.Delta.Type == "input_json_delta"
	}
	return false
}
