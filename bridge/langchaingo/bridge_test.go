package langchaingo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/compliance"
	lcopenai "github.com/tmc/langchaingo/llms/openai"
	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	lc "github.com/portico-llm/portico/bridge/langchaingo"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reader answers like a model that reads the prompt: the answers
// langchaingo's compliance suite checks, the sampling options it passes
// (MaxTokens as a cut, stop words as an end) honoured from the Request.
func reader(_ int, req *portico.Request) modeltest.Outcome {
	var all strings.Builder
	for _, m := range req.Messages {
		for _, p := range m.Content {
			all.WriteString(p.Text + "\n")
		}
	}
	conv := all.String()
	var text string
	switch {
	case strings.Contains(conv, "Hello, World"):
		text = "Hello, World!"
	case strings.Contains(conv, "What's my name") && strings.Contains(conv, "Alice"):
		text = "Your name is Alice."
	case strings.Contains(conv, "number 42"):
		text = "42"
	case strings.Contains(conv, "Count from 1 to 100"):
		var n []string
		for i := 1; i <= 100; i++ {
			n = append(n, strconv.Itoa(i))
		}
		text = strings.Join(n, " ")
	case strings.Contains(conv, "days of the week"):
		text = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday"
	default:
		text = "ok"
	}
	if stop, ok := req.Extra["stop"].([]string); ok {
		for _, s := range stop {
			text, _, _ = strings.Cut(text, s)
		}
	}
	words := strings.Fields(text)
	if req.MaxOutputTokens > 0 && len(words) > req.MaxOutputTokens {
		words = words[:req.MaxOutputTokens]
	}
	text = strings.Join(words, " ")
	return modeltest.Outcome{Response: &portico.Response{Text: text, FinishReason: portico.FinishStop,
		Usage: portico.Usage{InputTokens: len(conv) / 4, OutputTokens: len(words)}}}
}

// preset is the stack a service would build: two routes, the first failing
// its first call with a 503, client limits, over fakes that read.
func preset(t *testing.T, first, second portico.Model) *stack.Stack {
	t.Helper()
	route := func(name string, m portico.Model) stack.Route {
		return stack.Route{Route: portico.Route{Name: name, Model: m, Capabilities: portico.Capabilities{Provider: name, ContextWindow: 128_000, Tools: true}}}
	}
	st, err := stack.New(stack.Config{
		Routes: []stack.Route{route("a", first), route("b", second)},
		Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 10_000, Tokens: 10_000_000}, DefaultMaxTokens: 1024},
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestComplianceThroughThePreset runs langchaingo's own compliance suite
// on the preset seen as a langchaingo model.
func TestComplianceThroughThePreset(t *testing.T) {
	flaky := modeltest.NewFakeFunc(func(n int, req *portico.Request) modeltest.Outcome {
		if n == 0 {
			return modeltest.Fail(modeltest.StatusError(503))
		}
		return reader(n, req)
	})
	st := preset(t, flaky, modeltest.NewFakeFunc(reader))
	compliance.NewSuite("portico", lc.NewLLM(st)).Run(t)
}

// TestLLMMapsTheCall: messages, tools, JSON mode, options, and the tenant
// and priority of the context reach the Request; tool calls, usage and the
// route come back.
func TestLLMMapsTheCall(t *testing.T) {
	var got *portico.Request
	fake := modeltest.NewFakeFunc(func(_ int, req *portico.Request) modeltest.Outcome {
		got = req
		return modeltest.Outcome{Response: &portico.Response{FinishReason: portico.FinishToolCalls,
			ToolCalls: []portico.ToolCall{{ID: "call_1", Name: "weather", Arguments: []byte(`{"city":"Rome"}`)}},
			Usage:     portico.Usage{InputTokens: 12, OutputTokens: 7}}}
	})
	llm := lc.NewLLM(preset(t, fake, fake))
	ctx := portico.WithPriority(portico.WithIdentity(context.Background(), portico.Identity{ClientKey: "tenant-9"}), portico.Sheddable)
	resp, err := llm.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Rome?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "call_0", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "call_0", Name: "weather", Content: "sunny"}}},
	}, llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "weather", Description: "the weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}),
		llms.WithMaxTokens(64), llms.WithTemperature(0.2), llms.WithStopWords([]string{"END"}))
	if err != nil {
		t.Fatal(err)
	}
	roles := ""
	for _, m := range got.Messages {
		roles += string(m.Role) + " "
	}
	if roles != "system user assistant tool " || got.Messages[3].ToolCallID != "call_0" || got.Messages[2].ToolCalls[0].Name != "weather" {
		t.Errorf("messages: roles %q, %+v", roles, got.Messages)
	}
	if got.Identity.ClientKey != "tenant-9" || got.Priority != portico.Sheddable || got.MaxOutputTokens != 64 || got.Extra["temperature"] != 0.2 || len(got.Tools) != 1 ||
		!strings.Contains(string(got.Tools[0].Parameters), `"city"`) {
		t.Errorf("request: identity %+v, priority %v, max %d, extra %v, tools %+v", got.Identity, got.Priority, got.MaxOutputTokens, got.Extra, got.Tools)
	}
	c := resp.Choices[0]
	if len(c.ToolCalls) != 1 || c.ToolCalls[0].FunctionCall.Arguments != `{"city":"Rome"}` || c.StopReason != "tool_calls" ||
		c.GenerationInfo["PromptTokens"] != 12 || c.GenerationInfo["CompletionTokens"] != 7 || c.GenerationInfo["Route"] != "a" {
		t.Errorf("choice %+v", c)
	}
}

// TestLLMStreams: StreamingFunc gets the chunks, which make the content.
func TestLLMStreams(t *testing.T) {
	fake := modeltest.NewFake(modeltest.Answer("one two three four"))
	var mu sync.Mutex
	var chunks []string
	resp, err := lc.NewLLM(preset(t, fake, fake)).GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "count")},
		llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
			mu.Lock()
			defer mu.Unlock()
			chunks = append(chunks, string(b))
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 4 || strings.Join(chunks, "") != resp.Choices[0].Content {
		t.Errorf("chunks %q, content %q", chunks, resp.Choices[0].Content)
	}
}

// TestLLMRefusesWhatItCannotCarry: a second candidate is a Permanent error,
// nothing sent.
func TestLLMRefusesWhatItCannotCarry(t *testing.T) {
	fake := modeltest.NewFake()
	_, err := lc.NewLLM(fake).GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, llms.WithCandidateCount(2))
	if portico.ClassOf(err) != portico.Permanent || !portico.NothingSent(err) || fake.Count() != 0 {
		t.Fatalf("err %v (class %v), %d calls", err, portico.ClassOf(err), fake.Count())
	}
}

// langchaingoOpenAI is langchaingo's own OpenAI client against the fake
// OpenAI server, as a Portico Model.
func langchaingoOpenAI(t *testing.T, mc fakeopenai.ModelConfig) (*lc.Model, *fakeopenai.Server) {
	t.Helper()
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{mc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	l, err := lcopenai.New(lcopenai.WithBaseURL(srv.BaseURL()), lcopenai.WithToken("fake"), lcopenai.WithModel(mc.Name), lcopenai.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return lc.New(l, mc.Name), srv
}

// TestModelConformance runs Portico's conformance suite for a standalone
// Model on langchaingo's OpenAI client over the fake server.
func TestModelConformance(t *testing.T) {
	modeltest.RunModel(t, func(t *testing.T) portico.Model {
		m, _ := langchaingoOpenAI(t, fakeopenai.ModelConfig{Name: "gpt-4o-mini", OutputTokens: 8, TokensPerSecond: 2000})
		return m
	})
}

// TestModelClassifies: a 429 of the provider through langchaingo's client is
// RateLimited, so Portico's retry and fallback treat it as such; each
// llms.Error code has its class; an error with no code is Permanent.
func TestModelClassifies(t *testing.T) {
	m, _ := langchaingoOpenAI(t, fakeopenai.ModelConfig{Name: "gpt-4o-mini",
		Script: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfterMsHeader: 10 * time.Millisecond}}})
	_, err := m.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}})
	if c := portico.ClassOf(err); c != portico.RateLimited {
		t.Errorf("429: class %v (%v), want rate_limited", c, err)
	}
	for code, want := range map[llms.ErrorCode]portico.Class{
		llms.ErrCodeAuthentication: portico.Unusable, llms.ErrCodeInvalidRequest: portico.Incompatible,
		llms.ErrCodeTokenLimit: portico.Incompatible, llms.ErrCodeProviderUnavailable: portico.Transient,
		llms.ErrCodeTimeout: portico.Ambiguous, llms.ErrCodeUnknown: portico.Permanent,
	} {
		if c := portico.ClassOf(lc.Classify(context.Background(), llms.NewError(code, "x", "m"))); c != want {
			t.Errorf("code %s: class %v, want %v", code, c, want)
		}
	}
	if c := portico.ClassOf(lc.Classify(context.Background(), errors.New("no code"))); c != portico.Permanent {
		t.Errorf("an error without a code: %v", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c := portico.ClassOf(lc.Classify(ctx, fmt.Errorf("dial: %w", context.Canceled))); c != portico.Canceled {
		t.Errorf("a canceled call: %v", c)
	}
}

// TestRoundTrip: the preset as a langchaingo model, wrapped back as a
// Portico Model, answers as the preset does.
func TestRoundTrip(t *testing.T) {
	fake := modeltest.NewFake(modeltest.Answer("the answer"))
	back := lc.New(lc.NewLLM(preset(t, fake, fake)), "preset")
	resp, err := back.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}})
	if err != nil || resp.Text != "the answer" || resp.Model != "preset" {
		t.Fatalf("%+v, %v", resp, err)
	}
}
