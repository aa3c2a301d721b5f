package openai_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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

// BenchmarkLargeAnswer measures what refusing an 80 MiB answer costs under
// the default 64 MiB MaxResponseBytes: a whole JSON body with and without
// Content-Length, and an event stream. B/op is the memory the refusal
// allocated; the limit is the floor a reader that must see 64 MiB pays
// without a Content-Length.
func BenchmarkLargeAnswer(b *testing.B) {
	const size = 80 << 20
	prefix := []byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
	filler := bytes.Repeat([]byte("a"), 1<<20)
	whole := func(sized bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if sized {
				w.Header().Set("Content-Length", strconv.Itoa(size))
			}
			n, _ := w.Write(prefix)
			for n < size {
				k, err := w.Write(filler[:min(len(filler), size-n)])
				if err != nil {
					return
				}
				n += k
			}
		}
	}
	event := []byte("data: " + `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", 4000) + `"}}]}` + "\n\n")
	stream := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for n := 0; n < size; n += len(event) {
			if _, err := w.Write(event); err != nil {
				return
			}
		}
	}
	for _, c := range []struct {
		name   string
		h      http.HandlerFunc
		stream bool
	}{{"whole/content-length", whole(true), false}, {"whole/chunked", whole(false), false}, {"stream", stream, true}} {
		b.Run(c.name, func(b *testing.B) {
			s := httptest.NewServer(c.h)
			defer s.Close()
			m := openai.New(openai.Config{}, option.WithBaseURL(s.URL+"/v1/"), option.WithAPIKey("k"), option.WithHTTPClient(s.Client()))
			req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
			if c.stream {
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Generate(context.Background(), req); !errors.Is(err, openai.ErrTooLarge) {
					b.Fatalf("Generate = %v, want ErrTooLarge", err)
				}
			}
		})
	}
}
