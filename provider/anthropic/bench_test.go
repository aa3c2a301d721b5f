package anthropic_test

import (
	"context"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/provider/anthropic"
)

// BenchmarkGenerate measures one non-streaming call over loopback HTTP to the
// fake server, through the adapter (Adapter) and through the bare SDK with the
// same request (SDK), so the difference is the adapter's own cost: encoding
// the portico Request, the exchange-recording middleware and httptrace, and
// the Response mapping (rate-limit headers included).
func BenchmarkGenerate(b *testing.B) {
	s, err := fakeanthropic.Start(fakeanthropic.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	opts := []option.RequestOption{option.WithBaseURL(s.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(s.Client()), option.WithMaxRetries(0)}
	ctx := context.Background()
	b.Run("Adapter", func(b *testing.B) {
		m := anthropic.New(anthropic.Config{}, opts...)
		req := &portico.Request{Model: fakeanthropic.DefaultModel, Messages: []portico.Message{portico.Text(portico.RoleUser, "hello there")}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Generate(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK", func(b *testing.B) {
		c := sdk.NewClient(opts...)
		params := sdk.MessageNewParams{Model: fakeanthropic.DefaultModel, MaxTokens: anthropic.DefaultMaxTokens,
			Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hello there"))}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Messages.New(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
	})
}
