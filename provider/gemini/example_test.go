package gemini_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
	"google.golang.org/genai"
)

// Example calls a fake Gemini server through the real SDK: one answer, one
// streamed answer, and a 429 whose retry delay, sent in the body's
// RetryInfo, reaches the caller as RetryAfter.
func Example() {
	srv, err := fakegemini.Start(fakegemini.Config{Seed: 1, Models: []fakegemini.ModelConfig{
		{Name: "gemini-2.5-flash", OutputTokens: 4},
		{Name: "busy", Faults: []fakegemini.Fault{
			{Kind: fakegemini.FaultStatus, Status: 429, RetryAfter: 37 * time.Second, Fraction: 1},
		}},
	}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	ctx := context.Background()
	m, err := gemini.New(ctx, gemini.Config{Model: "gemini-2.5-flash"}, genai.ClientConfig{
		APIKey: "not-needed", HTTPClient: srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL()},
	})
	if err != nil {
		panic(err)
	}
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
	// gemini-2.5-flash: "consequat consequat laborum et" (stop, 5+4 tokens)
	// streamed 4 chunks: "consequat consequat laborum et"
	// rate_limited 429 RESOURCE_EXHAUSTED 37s true
	// requests to busy: 1
}
