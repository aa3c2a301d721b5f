package fakeopenai

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
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
	r := max(0, c.m.cfg.ReasoningTokens)
	u := &wireUsage{PromptTokens: c.inputTokens, CompletionTokens: a.tokens + r, TotalTokens: c.inputTokens + a.tokens + r}
	u.CompletionTokensDetails.ReasoningTokens = r
	u.PromptTokensDetails.CachedTokens = max(0, min(c.m.cfg.CachedInputTokens, c.inputTokens))
	return u
}

// whole writes a non-streamed answer.
func (c *call) whole(a *answer) {
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
	if c.m.cfg.ReasoningTokens > 0 { // the message gains its reasoning field
		var v map[string]any
		_ = json.Unmarshal(body, &v)
		v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)[c.reasoningField()] = "step 1. "
		body, _ = json.Marshal(v)
	}
	c.Whole(body, a.tokens)
}

// stream writes a streamed answer as server-sent events.
func (c *call) stream(a *answer) {
	think := func(i int) {
		delta := map[string]any{c.reasoningField(): "step " + strconv.Itoa(i+1) + ". "}
		if i == 0 {
			delta["role"] = "assistant"
		}
		c.event(map[string]any{"id": a.id, "object": "chat.completion.chunk", "created": created, "model": c.req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": nil}}, "system_fingerprint": "fp_fakeopenai"})
	}
	if _, ok := c.BeginStream(fakecore.Waiting{Think: think, KeepAlive: func() { c.Comment("keep-alive") }}); !ok {
		return
	}
	includeUsage := c.req.StreamOptions != nil && c.req.StreamOptions.IncludeUsage
	chunk := func(delta *wireMessage, finish *string) {
		c.event(wireCompletion{ID: a.id, Object: "chat.completion.chunk", Created: created, Model: c.req.Model,
			Choices: []wireChoice{{Delta: delta, FinishReason: finish}}, SystemFingerprint: "fp_fakeopenai"})
	}
	empty := ""
	chunk(&wireMessage{Role: "assistant", Content: &empty}, nil)
	// The token pieces, in order, each a delta.
	var deltas []*wireMessage
	for _, p := range a.content {
		deltas = append(deltas, &wireMessage{Content: &p})
	}
	for i, tc := range a.toolCalls {
		deltas = append(deltas, &wireMessage{ToolCalls: []wireToolCall{{Index: &i, ID: tc.id, Type: "function", Function: wireFunction{Name: tc.name}}}})
		for _, arg := range tc.args {
			deltas = append(deltas, &wireMessage{ToolCalls: []wireToolCall{{Index: &i, Function: wireFunction{Arguments: arg}}}})
		}
	}
	if !c.Events(len(deltas), func(i int) { chunk(deltas[i], nil) }, c.streamErrorData) {
		return
	}
	finish := a.finish
	chunk(&wireMessage{}, &finish)
	if includeUsage {
		c.event(wireCompletion{ID: a.id, Object: "chat.completion.chunk", Created: created, Model: c.req.Model,
			Choices: []wireChoice{}, Usage: c.usage(a), SystemFingerprint: "fp_fakeopenai"})
	}
	c.Event("", []byte("[DONE]"))
}

// reasoningField is the field of a message or delta that carries its
// reasoning text (ModelConfig.ReasoningField).
func (c *call) reasoningField() string {
	return cmp.Or(c.m.cfg.ReasoningField, "reasoning_content")
}

// streamErrorData is the data of FaultStreamError's error event: OpenAI's
// error object with the fault's code.
func (c *call) streamErrorData() []byte {
	code := c.streamErrorCode()
	typ, msg := "server_error", "Overloaded"
	if code == "context_length_exceeded" {
		typ, msg = "invalid_request_error", "prompt is too long"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": c.message(msg), "type": typ, "code": code, "param": nil}})
	return b
}

// event writes one data event of v's JSON and flushes it.
func (c *call) event(v any) {
	b, _ := json.Marshal(v)
	c.Event("", b)
}
