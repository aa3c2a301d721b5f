package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/protect"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/trace"
)

// guarded is an openai-go client as a service already has it, plus one
// option: Protect with a client limiter, a breaker and a retrier. The fake
// server runs model with faults.
func guarded(t *testing.T, limits ratelimit.Limits, models ...fakeopenai.ModelConfig) (oai.Client, *fakeopenai.Server) {
	t.Helper()
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: models})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	lim, err := ratelimit.New(ratelimit.Config{Limits: limits, Key: ratelimit.ByClient, DefaultMaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	brk, err := breaker.New(breaker.Config{Name: "openai"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := retry.New(retry.Config{Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
		Timeouts: retry.Timeouts{FirstChunk: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	client := oai.NewClient(option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("fake"), option.WithHTTPClient(srv.Client()),
		openai.Protect(protect.Config{Layers: []portico.Middleware{lim.Wrap, brk.Wrap, rt.Wrap}}))
	return client, srv
}

const gpt = "gpt-4o-mini"

var plenty = ratelimit.Limits{Requests: 1000, Tokens: 1_000_000}

// TestProtectRetriesOnce: a 503 then an answer: the retry layer sends the
// second attempt, and the SDK, whose retries Protect turned off, none of
// its own: two requests reach the server, not up to six.
func TestProtectRetriesOnce(t *testing.T) {
	client, srv := guarded(t, plenty, fakeopenai.ModelConfig{Name: gpt,
		Script: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 503}}})
	resp, err := client.Chat.Completions.New(context.Background(), oai.ChatCompletionNewParams{Model: gpt,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content == "" || srv.Count(gpt) != 2 {
		t.Fatalf("content %q, %d requests at the server; want an answer after 2", resp.Choices[0].Message.Content, srv.Count(gpt))
	}
}

// TestProtectGivesUpAsTheSDKWould: a 400 is not retried by anyone: one
// request, and the caller gets openai-go's own *openai.Error.
func TestProtectGivesUpAsTheSDKWould(t *testing.T) {
	client, srv := guarded(t, plenty, fakeopenai.ModelConfig{Name: gpt, Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultContextLength, Fraction: 1}}})
	_, err := client.Chat.Completions.New(context.Background(), oai.ChatCompletionNewParams{Model: gpt,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}})
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || srv.Count(gpt) != 1 {
		t.Fatalf("err %v, %d requests; want the SDK's 400 after one request", err, srv.Count(gpt))
	}
}

// TestProtectRefusesWithPortico: a tenant past its limit is refused by the
// limiter before anything is sent; the SDK returns Portico's error as the
// cause, and does not retry it.
func TestProtectRefusesWithPortico(t *testing.T) {
	client, srv := guarded(t, ratelimit.Limits{Requests: 1, Tokens: 1_000_000}, fakeopenai.ModelConfig{Name: gpt})
	ctx := portico.WithIdentity(context.Background(), portico.Identity{ClientKey: "tenant-1"})
	params := oai.ChatCompletionNewParams{Model: gpt, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}}
	if _, err := client.Chat.Completions.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	_, err := client.Chat.Completions.New(ctx, params)
	if portico.RefuserOf(err) != portico.ClientLimit || srv.Count(gpt) != 1 {
		t.Fatalf("err %v (refuser %v), %d requests; want a client_limit refusal and one request", err, portico.RefuserOf(err), srv.Count(gpt))
	}
	other := portico.WithIdentity(context.Background(), portico.Identity{ClientKey: "tenant-2"})
	if _, err := client.Chat.Completions.New(other, params); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
}

// TestProtectEveryEndpoint: the Responses API, embeddings and a file
// upload go through the same option unchanged.
func TestProtectEveryEndpoint(t *testing.T) {
	client, srv := guarded(t, plenty, fakeopenai.ModelConfig{Name: gpt},
		fakeopenai.ModelConfig{Name: "text-embedding-3-small", Script: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 500}}})
	ctx := context.Background()
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: gpt, Input: responses.ResponseNewParamsInputUnion{OfString: oai.String("hi")}})
	if err != nil || r.OutputText() == "" {
		t.Fatalf("responses: %v", err)
	}
	emb, err := client.Embeddings.New(ctx, oai.EmbeddingNewParams{Model: "text-embedding-3-small", Dimensions: oai.Int(16),
		Input: oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
	if err != nil || len(emb.Data) != 2 || len(emb.Data[0].Embedding) != 16 || srv.Count("text-embedding-3-small") != 2 {
		t.Fatalf("embeddings: %v (%d requests)", err, srv.Count("text-embedding-3-small"))
	}
	f, err := client.Files.New(ctx, oai.FileNewParams{File: strings.NewReader("{}\n"), Purpose: oai.FilePurposeBatch})
	if err != nil || !strings.HasPrefix(f.ID, "file-") || f.Bytes != 3 {
		t.Fatalf("files: %+v, %v", f, err)
	}
}

// TestProtectStream: a stream that stalls before its first event is cut by
// the first-chunk timeout and retried; the second streams whole.
func TestProtectStream(t *testing.T) {
	client, srv := guarded(t, plenty, fakeopenai.ModelConfig{Name: gpt, OutputTokens: 12, TokensPerSecond: 1000,
		Script: []fakeopenai.Fault{{Kind: fakeopenai.FaultStallBeforeHeaders}}})
	stream := client.Chat.Completions.NewStreaming(context.Background(), oai.ChatCompletionNewParams{Model: gpt,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}})
	var text strings.Builder
	for stream.Next() {
		if len(stream.Current().Choices) > 0 {
			text.WriteString(stream.Current().Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil || text.Len() == 0 || srv.Count(gpt) != 2 {
		t.Fatalf("err %v, text %q, %d requests; want the text after 2", err, text.String(), srv.Count(gpt))
	}
}

// authSeen records the Authorization header of each request by host.
type authSeen struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (a *authSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.seen[r.URL.Host] = append(a.seen[r.URL.Host], r.Header.Get("Authorization"))
	a.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestProtectReplicas: the client's own endpoint answers 503 to every
// call; the guard falls back to a replica of the same API with its own
// key, and the SDK's caller gets the replica's answer.
func TestProtectReplicas(t *testing.T) {
	primary, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: gpt,
		Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(primary.Close)
	replica, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: gpt}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Close)
	rt, err := retry.New(retry.Config{MaxAttempts: 2, Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	seen := &authSeen{seen: map[string][]string{}}
	client := oai.NewClient(option.WithBaseURL(primary.BaseURL()), option.WithAPIKey("key-1"), option.WithHTTPClient(&http.Client{Transport: seen}),
		openai.Protect(protect.Config{Layers: []portico.Middleware{rt.Wrap}, BaseURL: primary.BaseURL(), Client: &http.Client{Transport: seen},
			Replicas: []protect.Replica{{Name: "replica", BaseURL: replica.BaseURL(), Header: http.Header{"Authorization": {"Bearer key-2"}}}}}))
	resp, err := client.Chat.Completions.New(context.Background(), oai.ChatCompletionNewParams{Model: gpt,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}})
	if err != nil {
		t.Fatalf("%v; requests: primary %d, replica %d; seen %v", err, primary.Count(gpt), replica.Count(gpt), seen.seen)
	}
	if resp.Choices[0].Message.Content == "" || primary.Count(gpt) == 0 || replica.Count(gpt) != 1 {
		t.Fatalf("requests: primary %d, replica %d", primary.Count(gpt), replica.Count(gpt))
	}
	rURL, _ := url.Parse(replica.BaseURL())
	pURL, _ := url.Parse(primary.BaseURL())
	if got := seen.seen[rURL.Host]; len(got) != 1 || got[0] != "Bearer key-2" {
		t.Errorf("replica saw Authorization %q, want its own key", got)
	}
	if got := seen.seen[pURL.Host]; len(got) == 0 || got[0] != "Bearer key-1" {
		t.Errorf("primary saw Authorization %q", got)
	}
}

// TestProtectSpans: with the tracer's two layers in Guard.Layers, a call
// the retrier sends twice (a 503, then an answer) makes one request span
// and two attempt spans, and no span carries the prompt.
func TestProtectSpans(t *testing.T) {
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: gpt,
		Script: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 503}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr, err := trace.New(trace.Config{TracerProvider: tp, Provider: "openai"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := retry.New(retry.Config{Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	client := oai.NewClient(option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("fake"), option.WithHTTPClient(srv.Client()),
		openai.Protect(protect.Config{Layers: []portico.Middleware{tr.Wrap, rt.Wrap, tr.WrapAttempt}}))
	const secret = "the secret prompt"
	if _, err := client.Chat.Completions.New(context.Background(), oai.ChatCompletionNewParams{Model: gpt,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage(secret)}}); err != nil {
		t.Fatal(err)
	}
	got := spans.GetSpans()
	if len(got) != 3 {
		t.Fatalf("%d spans, want a request span and two attempt spans", len(got))
	}
	for _, s := range got {
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), secret) {
				t.Errorf("span %q attribute %s carries the prompt", s.Name, a.Key)
			}
		}
	}
}

// TestProtectSDKRetriesNotOnTop: an option after Protect that turns the
// SDK's retries back on does not multiply the layers' decision: a
// limiter's refusal (an error with no response, which the SDK retries) is
// answered on the SDK's retry with a 400 saying why, at once, and the
// server saw only the admitted call.
func TestProtectSDKRetriesNotOnTop(t *testing.T) {
	client, srv := guarded(t, ratelimit.Limits{Requests: 1, Tokens: 1_000_000}, fakeopenai.ModelConfig{Name: gpt})
	params := oai.ChatCompletionNewParams{Model: gpt, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}}
	if _, err := client.Chat.Completions.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := client.Chat.Completions.New(context.Background(), params, option.WithMaxRetries(2))
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.RawJSON()+apiErr.Message, "leave the SDK's retries off") || srv.Count(gpt) != 1 {
		t.Fatalf("err %v, %d requests; want the guard's 400 and one request", err, srv.Count(gpt))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// A Config that Validate refuses makes Protect fail when the client is
// built, with Validate's Permanent error, not at the client's first request.
func TestProtectRefusesBadConfigAtConstruction(t *testing.T) {
	bad := protect.Config{Replicas: []protect.Replica{{Name: "replica", BaseURL: "https://replica.example.com/v1/"}}} // no Config.BaseURL
	defer func() {
		err, _ := recover().(error)
		var got, want *portico.Error
		if !errors.As(err, &got) || !errors.As(bad.Validate(), &want) || got.Class != portico.Permanent || got.Reason != want.Reason {
			t.Errorf("Protect(bad) panicked with %v, want Validate's Permanent error", err)
		}
	}()
	openai.Protect(bad)
}
