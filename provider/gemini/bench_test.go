package gemini_test

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
	"google.golang.org/genai"
)

// BenchmarkGenerate measures one non-streaming call over loopback HTTP to
// the fake server, through the adapter (Adapter) and through the bare SDK
// with the same request (SDK), so the difference is the adapter's own cost:
// encoding the portico Request, the exchange-recording transport and
// httptrace, and the Response mapping.
func BenchmarkGenerate(b *testing.B) {
	s, err := fakegemini.Start(fakegemini.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cc := genai.ClientConfig{APIKey: "k", HTTPClient: s.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: s.URL()}}
	ctx := context.Background()
	b.Run("Adapter", func(b *testing.B) {
		m := newModel(b, gemini.Config{}, cc)
		req := &portico.Request{Model: fakegemini.DefaultModel, Messages: []portico.Message{portico.Text(portico.RoleUser, "hello there")}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Generate(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK", func(b *testing.B) {
		bare := cc
		c, err := genai.NewClient(ctx, &bare)
		if err != nil {
			b.Fatal(err)
		}
		contents := []*genai.Content{genai.NewContentFromText("hello there", genai.RoleUser)}
		b.ReportAllocs()
		for b.Loop() {
			// The same settings the adapter sends: one request, no continuation.
			cfg := &genai.GenerateContentConfig{AutomaticContinuation: genai.Ptr(false)}
			if _, err := c.Models.GenerateContent(ctx, fakegemini.DefaultModel, contents, cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
