package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/provider/anthropic"
)

// Example calls a fake Anthropic-compatible server through the real SDK: one
// answer, one streamed answer, and a 529 overloaded_error whose class and
// Retry-After hint reach the caller after one request, the SDK's retries off.
func Example() {
	srv, err := fakeanthropic.Start(fakeanthropic.Config{Seed: 1, Models: []fakeanthropic.ModelConfig{
		{Name: "small", OutputTokens: 4, CacheReadInputTokens: 2},
		{Name: "busy", Faults: []fakeanthropic.Fault{
			{Kind: fakeanthropic.FaultStatus, Status: 529, RetryAfter: 2 * time.Second, Fraction: 1},
		}},
	}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	m := anthropic.New(anthropic.Config{Model: "small"},
		option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("not-needed"),
		option.WithHTTPClient(srv.Client()))
	ctx := context.Background()
	req := &portico.Request{Messages: []portico.Message{
		portico.Text(portico.RoleSystem, "Be brief."),
		portico.Text(portico.RoleUser, "Say something"),
	}}

	resp, err := m.Generate(ctx, req)
	if err != nil {
		panic(err)
	}
	u := resp.Usage
	fmt.Printf("%s: %q (%s, %d+%d tokens, %d cached)\n", resp.Model, resp.Text, resp.FinishReason, u.InputTokens, u.OutputTokens, u.CachedInputTokens)

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
		fmt.Println(pe.Class, pe.Status, pe.Code, pe.RetryAfter, errors.Is(err, portico.ErrTransient))
	}
	fmt.Println("requests to busy:", srv.Count("busy"))
	// Output:
	// small: "id lorem quis amet" (stop, 7+4 tokens, 2 cached)
	// streamed 4 chunks: "id lorem quis amet"
	// transient 529 overloaded_error 2s true
	// requests to busy: 1
}
