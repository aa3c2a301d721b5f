package fakeopenai

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// created is the fixed "created" timestamp of every answer, for determinism.
const created = 1767225600 // 2026-01-01T00:00:00Z

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type wireToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireMessage struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireChoice struct {
	Index        int          `json:"index"`
	Message      *wireMessage `json:"message,omitempty"`
	Delta        *wireMessage `json:"delta,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type wireCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             *wireUsage   `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

func (c *call) usage(a *answer) *wireUsage {
	u := &wireUsage{PromptTokens: c.inputTokens, CompletionTokens: a.tokens, TotalTokens: c.inputTokens + a.tokens}
	u.PromptTokensDetails.CachedTokens = max(0, min(c.m.cfg.CachedInputTokens, c.inputTokens))
	return u
}

// genTime is how long generating n tokens takes after the first.
func (c *call) genTime(n int) time.Duration {
	if c.m.cfg.TokensPerSecond <= 0 || n <= 1 {
		return 0
	}
	return time.Duration(float64(n-1) / c.m.cfg.TokensPerSecond * float64(time.Second))
}

// whole writes a non-streamed answer.
func (c *call) whole(a *answer) {
	if !c.sleep(c.m.cfg.TTFT + c.genTime(a.tokens)) {
		return
	}
	msg := &wireMessage{Role: "assistant"}
	if a.toolCalls != nil {
		for _, tc := range a.toolCalls {
			msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: tc.id, Type: "function",
				Function: wireFunction{Name: tc.name, Arguments: strings.Join(tc.args, "")}})
		}
	} else {
		text := strings.Join(a.content, "")
		msg.Content = &text
	}
	finish := a.finish
	body, _ := json.Marshal(wireCompletion{
		ID: a.id, Object: "chat.completion", Created: created, Model: c.req.Model,
		Choices:           []wireChoice{{Message: msg, FinishReason: &finish}},
		Usage:             c.usage(a),
		SystemFingerprint: "fp_fakeopenai",
	})
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	switch c.f.Kind {
	case FaultMalformed:
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write(body[:len(body)/2])
		return
	case FaultStallMidStream:
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write(body[:len(body)/2])
		_ = http.NewResponseController(c.w).Flush()
		if !c.stall() {
			return
		}
		_, _ = c.w.Write(body[len(body)/2:])
		return
	}
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(body)
}

// stream writes a streamed answer as server-sent events.
func (c *call) stream(a *answer) {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(c.w)
	_ = rc.Flush()
	if !c.sleep(c.m.cfg.TTFT) {
		return
	}
	includeUsage := c.req.StreamOptions != nil && c.req.StreamOptions.IncludeUsage
	chunk := func(delta *wireMessage, finish *string) {
		ch := wireCompletion{ID: a.id, Object: "chat.completion.chunk", Created: created, Model: c.req.Model,
			Choices: []wireChoice{{Delta: delta, FinishReason: finish}}, SystemFingerprint: "fp_fakeopenai"}
		c.event(ch)
	}
	empty := ""
	chunk(&wireMessage{Role: "assistant", Content: &empty}, nil)
	// The token pieces, in order, each a delta.
	var deltas []*wireMessage
	for _, p := range a.content {
		p := p
		deltas = append(deltas, &wireMessage{Content: &p})
	}
	for i, tc := range a.toolCalls {
		i := i
		deltas = append(deltas, &wireMessage{ToolCalls: []wireToolCall{{Index: &i, ID: tc.id, Type: "function", Function: wireFunction{Name: tc.name}}}})
		for _, arg := range tc.args {
			deltas = append(deltas, &wireMessage{ToolCalls: []wireToolCall{{Index: &i, Function: wireFunction{Arguments: arg}}}})
		}
	}
	gap := time.Duration(0)
	if tps := c.m.cfg.TokensPerSecond; tps > 0 {
		gap = time.Duration(float64(time.Second) / tps)
	}
	for i, d := range deltas {
		if i == c.f.AfterChunks && !c.midStreamFault(rc) {
			return
		}
		if i > 0 && !c.sleep(gap) {
			return
		}
		chunk(d, nil)
		if c.ctx.Err() != nil {
			return
		}
	}
	if len(deltas) <= c.f.AfterChunks && !c.midStreamFault(rc) {
		return
	}
	finish := a.finish
	chunk(&wireMessage{}, &finish)
	if includeUsage {
		c.event(wireCompletion{ID: a.id, Object: "chat.completion.chunk", Created: created, Model: c.req.Model,
			Choices: []wireChoice{}, Usage: c.usage(a), SystemFingerprint: "fp_fakeopenai"})
	}
	_, _ = c.w.Write([]byte("data: [DONE]\n\n"))
	_ = rc.Flush()
}

// midStreamFault injects the mid-stream faults before the chunk at
// Fault.AfterChunks; it reports whether the stream goes on.
func (c *call) midStreamFault(rc *http.ResponseController) bool {
	switch c.f.Kind {
	case FaultStallMidStream:
		return c.stall()
	case FaultMalformed:
		_, _ = c.w.Write([]byte("data: {\"id\": \"chatcmpl-broken\", \"choices\": [\n\n"))
		_ = rc.Flush()
		return false
	case FaultStreamError:
		code := c.streamErrorCode()
		typ, msg := "server_error", "Overloaded"
		if code == "context_length_exceeded" {
			typ, msg = "invalid_request_error", "prompt is too long"
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": c.message(msg), "type": typ, "code": code, "param": nil}})
		_, _ = c.w.Write([]byte("data: "))
		_, _ = c.w.Write(b)
		_, _ = c.w.Write([]byte("\n\n"))
		_ = rc.Flush()
		return false
	case FaultDisconnect:
		_ = rc.Flush()
		panic(http.ErrAbortHandler)
	}
	return true
}

// event writes one data event and flushes it.
func (c *call) event(v any) {
	b, _ := json.Marshal(v)
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	_, _ = c.w.Write(buf)
	_ = http.NewResponseController(c.w).Flush()
}
