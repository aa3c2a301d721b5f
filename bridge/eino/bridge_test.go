package eino_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	pe "github.com/portico-llm/portico/bridge/eino"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// preset is the stack a service would build: two routes, client limits.
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

type cityArgs struct {
	City string `json:"city" jsonschema:"description=the city"`
}

// TestReactAgentThroughThePreset runs eino's ReAct agent on the preset: the
// first route fails its first call with a 503 (the preset falls back), the
// model asks for a tool, eino runs it, and the tool's result reaches the
// model in the next call, tied to its call.
func TestReactAgentThroughThePreset(t *testing.T) {
	var calls atomic.Int32
	model := modeltest.NewFakeFunc(func(n int, req *portico.Request) modeltest.Outcome {
		calls.Add(1)
		last := req.Messages[len(req.Messages)-1]
		if last.Role == portico.RoleTool {
			return modeltest.Answer("It is sunny in Rome, as " + last.ToolCallID + " said.")
		}
		return modeltest.Outcome{Response: &portico.Response{FinishReason: portico.FinishToolCalls,
			ToolCalls: []portico.ToolCall{{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Rome"}`)}}}}
	})
	flaky := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)), modeltest.Fail(modeltest.StatusError(503)))
	var ran []string
	weather, err := utils.InferTool("weather", "the weather in a city", func(_ context.Context, a cityArgs) (string, error) {
		ran = append(ran, a.City)
		return "sunny", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: pe.NewChatModel(preset(t, flaky, model)),
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{weather}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := agent.Generate(portico.WithPriority(portico.WithIdentity(ctx, portico.Identity{ClientKey: "tenant-3"}), portico.Critical), []*schema.Message{schema.UserMessage("Weather in Rome?")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "It is sunny in Rome, as call_1 said." || len(ran) != 1 || ran[0] != "Rome" || calls.Load() != 2 {
		t.Fatalf("answer %q, tool ran %v, model called %d times", out.Content, ran, calls.Load())
	}
	reqs := model.Requests()
	if got := reqs[0].Identity.ClientKey; got != "tenant-3" {
		t.Errorf("identity %q", got)
	}
	if got := reqs[0].Priority; got != portico.Critical {
		t.Errorf("priority %v, want critical", got)
	}
	if len(reqs[0].Tools) != 1 || !strings.Contains(string(reqs[0].Tools[0].Parameters), `"city"`) {
		t.Errorf("tools %+v", reqs[0].Tools)
	}
}

// TestStreamThroughThePreset: Stream's reader yields the chunks, then a last
// message with the usage; together they make the answer.
func TestStreamThroughThePreset(t *testing.T) {
	fake := modeltest.NewFake(modeltest.Answer("one two three four"))
	sr, err := pe.NewChatModel(preset(t, fake, fake)).Stream(context.Background(), []*schema.Message{schema.UserMessage("count")})
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	var msgs []*schema.Message
	for {
		m, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	all, err := schema.ConcatMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 5 || all.Content != "one two three four" || all.ResponseMeta.Usage.CompletionTokens != 5 {
		t.Fatalf("%d messages, content %q, meta %+v", len(msgs), all.Content, all.ResponseMeta)
	}
}

// TestStreamErrorBeforeAnyChunk: when every route fails before a chunk,
// Stream itself returns the stack's classified error.
func TestStreamErrorBeforeAnyChunk(t *testing.T) {
	down := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(401)))
	sr, err := pe.NewChatModel(preset(t, down, down)).Stream(context.Background(), []*schema.Message{schema.UserMessage("hi")})
	if sr != nil || portico.ClassOf(err) != portico.Unusable {
		t.Fatalf("reader %v, err %v (class %v): want no reader and the stack's unusable error", sr, err, portico.ClassOf(err))
	}
}

// TestStreamClosedStopsTheCall: closing the reader after the first chunk
// ends the call: the model's OnChunk gets an error, and nothing leaks
// (goleak in TestMain).
func TestStreamClosedStopsTheCall(t *testing.T) {
	long := strings.Repeat("word ", 200)
	fake := modeltest.NewFake(modeltest.Answer(long))
	sr, err := pe.NewChatModel(fake).Stream(context.Background(), []*schema.Message{schema.UserMessage("talk")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sr.Recv(); err != nil {
		t.Fatal(err)
	}
	sr.Close()
}

// einoOpenAI is eino-ext's OpenAI chat model against the fake OpenAI server,
// as a Portico Model.
func einoOpenAI(t *testing.T, mc fakeopenai.ModelConfig) *pe.Model {
	t.Helper()
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{mc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cm, err := einoopenai.NewChatModel(context.Background(), &einoopenai.ChatModelConfig{APIKey: "fake", BaseURL: srv.BaseURL(), Model: mc.Name, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return pe.New(cm, mc.Name)
}

// TestModelConformance runs Portico's conformance suite for a standalone
// Model on eino-ext's OpenAI chat model over the fake server.
func TestModelConformance(t *testing.T) {
	modeltest.RunModel(t, func(t *testing.T) portico.Model {
		return einoOpenAI(t, fakeopenai.ModelConfig{Name: "gpt-4o-mini", OutputTokens: 8, TokensPerSecond: 2000, ToolCalls: true})
	})
}

// TestModelErrors: eino leaves errors unclassified: the caller's context
// is Canceled, an error of the model Permanent unless Classify places it.
func TestModelErrors(t *testing.T) {
	m := einoOpenAI(t, fakeopenai.ModelConfig{Name: "gpt-4o-mini", Script: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 503}, {Kind: fakeopenai.FaultStatus, Status: 503}}})
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
	if _, err := m.Generate(context.Background(), req); portico.ClassOf(err) != portico.Permanent {
		t.Errorf("503 without Classify: %v (class %v)", err, portico.ClassOf(err))
	}
	m.Classify = func(err error) portico.Class {
		if strings.Contains(err.Error(), "503") {
			return portico.Transient
		}
		return portico.Permanent
	}
	if _, err := m.Generate(context.Background(), req); portico.ClassOf(err) != portico.Transient {
		t.Errorf("503 with Classify: %v (class %v)", err, portico.ClassOf(err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, req); portico.ClassOf(err) != portico.Canceled {
		t.Errorf("a canceled call: %v (class %v)", err, portico.ClassOf(err))
	}
}
