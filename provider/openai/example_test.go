package openai_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

// Example calls a fake OpenAI-compatible server through the real SDK: one
// answer, one streamed answer, and a 429 whose Retry-After hint and class
// reach the caller.
func Example() {
	srv, err := fakeopenai.Start(fakeopenai.Config{Seed: 1, Models: []fakeopenai.ModelConfig{
		{Name: "small", OutputTokens: 4},
		{Name: "busy", Faults: []fakeopenai.Fault{
			{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfterMsHeader: 250 * time.Millisecond, Fraction: 1},
		}},
	}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	m := openai.New(openai.Config{Model: "small"},
		option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("not-needed"),
		option.WithHTTPClient(srv.Client()))
	ctx := context.Background()
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "Say something")}}

	resp, err := m.Generate(ctx, req)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %q (%s, %d+%d tokens)\n", resp.Model, resp.Text, resp.FinishReason, resp.Usage.InputTokens, resp.Usage.OutputTokens)

	chunks := 0
	streamed := req.Clone()
	streamed.OnChunk = func(portico.Chunk) error { chunks++; return nil }
	resp, err = m.Generate(ctx, streamed)
	if err != nil {
		panic(err)
	}
	fmt.Printf("streamed %d chunks: %q\n", chunks, resp.Text)

	busy := req.Clone()
	busy.Model = "busy"
	_, err = m.Generate(ctx, busy)
	var pe *portico.Error
	if errors.As(err, &pe) {
		fmt.Println(pe.Class, pe.Status, pe.Code, pe.RetryAfter, errors.Is(err, portico.ErrRateLimited))
	}
	fmt.Println("requests to busy:", srv.Count("busy"))
	// Output:
	// small: "consectetur ullamco non amet" (stop, 5+4 tokens)
	// streamed 4 chunks: "consectetur ullamco non amet"
	// rate_limited 429 rate_limit_exceeded 250ms true
	// requests to busy: 1
}

// ExampleNewResponses runs a tool-use loop with reasoning over the
// Responses API, statelessly: each answer's reasoning comes back as a
// Thought with its encrypted content, and Response.Message carries it into
// the next turn's request.
func ExampleNewResponses() {
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "o4-mini", ToolCalls: true, OutputTokens: 3}}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	m := openai.NewResponses(openai.ResponsesConfig{Model: "o4-mini"},
		option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("not-needed"),
		option.WithHTTPClient(srv.Client()))

	req := &portico.Request{
		Messages:  []portico.Message{portico.Text(portico.RoleUser, "Weather in Paris?")},
		Tools:     []portico.Tool{{Name: "weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		Reasoning: &portico.Reasoning{Effort: portico.EffortLow},
	}
	for {
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: thought %q (%d encrypted bytes), %d reasoning tokens\n",
			resp.FinishReason, resp.ReasoningText(), len(resp.Thoughts[0].Signature), resp.Usage.ReasoningTokens)
		if len(resp.ToolCalls) == 0 {
			fmt.Printf("answer: %q\n", resp.Text)
			break
		}
		next := req.Clone()
		next.Messages = append(append([]portico.Message(nil), req.Messages...), resp.Message(),
			portico.Message{Role: portico.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: []portico.Part{{Text: "sunny"}}})
		req = next
	}
	// Output:
	// tool_calls: thought "step 1. " (19 encrypted bytes), 2 reasoning tokens
	// stop: thought "step 1. " (19 encrypted bytes), 2 reasoning tokens
	// answer: "amet excepteur ad"
}
