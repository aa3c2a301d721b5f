package openai_test

import (
	"context"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

// BenchmarkGenerate measures one non-streaming call over loopback HTTP to the
// fake server, through the adapter (Adapter) and through the bare SDK with the
// same request (SDK), so the difference is the adapter's own cost: encoding
// the portico Request, the exchange-recording middleware and httptrace, and
// the Response mapping.
func BenchmarkGenerate(b *testing.B) {
	s, err := fakeopenai.Start(fakeopenai.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	opts := []option.RequestOption{option.WithBaseURL(s.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(s.Client()), option.WithMaxRetries(0)}
	ctx := context.Background()
	b.Run("Adapter", func(b *testing.B) {
		m := openai.New(openai.Config{}, opts...)
		req := &portico.Request{Model: fakeopenai.DefaultModel, Messages: []portico.Message{portico.Text(portico.RoleUser, "hello there")}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Generate(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK", func(b *testing.B) {
		c := oai.NewClient(opts...)
		params := oai.ChatCompletionNewParams{Model: fakeopenai.DefaultModel, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hello there")}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Chat.Completions.New(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
	})
}
