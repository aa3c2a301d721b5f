package gemini_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/protect"
	"github.com/portico-llm/portico/provider/gemini"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
)

// guarded is a genai client as a service has it, its HTTP client from
// Protect with a client limiter, a breaker and a retrier.
func guarded(t *testing.T, limits ratelimit.Limits, mc fakegemini.ModelConfig) (*genai.Client, *fakegemini.Server) {
	t.Helper()
	srv, err := fakegemini.Start(fakegemini.Config{Models: []fakegemini.ModelConfig{mc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	lim, err := ratelimit.New(ratelimit.Config{Limits: limits, Key: ratelimit.ByClient, DefaultMaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	brk, err := breaker.New(breaker.Config{Name: "gemini"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := retry.New(retry.Config{Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetryAfter: time.Second},
		Timeouts: retry.Timeouts{FirstChunk: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	hc := gemini.Protect(protect.Config{Layers: []portico.Middleware{lim.Wrap, brk.Wrap, rt.Wrap}}, srv.Client())
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "fake", Backend: genai.BackendGeminiAPI,
		HTTPClient: hc, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	return client, srv
}

const flashModel = "gemini-2.5-flash"

var plenty = ratelimit.Limits{Requests: 1000, Tokens: 1_000_000}

// TestProtectRetriesAfterRetryDelay: a 429 RESOURCE_EXHAUSTED whose
// RetryInfo asks for 50 ms, then an answer: two requests, the second after
// the delay Google gave in the body.
func TestProtectRetriesAfterRetryDelay(t *testing.T) {
	client, srv := guarded(t, plenty, fakegemini.ModelConfig{Name: flashModel,
		Script: []fakegemini.Fault{{Kind: fakegemini.FaultStatus, Status: 429, RetryAfter: 50 * time.Millisecond}}})
	start := time.Now()
	resp, err := client.Models.GenerateContent(context.Background(), flashModel, genai.Text("hi"), nil)
	if err != nil || resp.Text() == "" || srv.Count(flashModel) != 2 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("err %v, %d requests in %v; want an answer after 2, 50 ms apart", err, srv.Count(flashModel), time.Since(start))
	}
}

// TestProtectGivesUpAsTheSDKWould: a 400 is retried by nobody, and the
// caller gets genai's own APIError.
func TestProtectGivesUpAsTheSDKWould(t *testing.T) {
	client, srv := guarded(t, plenty, fakegemini.ModelConfig{Name: flashModel,
		Faults: []fakegemini.Fault{{Kind: fakegemini.FaultStatus, Status: 400, Fraction: 1}}})
	_, err := client.Models.GenerateContent(context.Background(), flashModel, genai.Text("hi"), nil)
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != http.StatusBadRequest || srv.Count(flashModel) != 1 {
		t.Fatalf("err %v, %d requests; want genai's 400 after one request", err, srv.Count(flashModel))
	}
}

// TestProtectRefusesWithPortico: a tenant past its limit is refused before
// anything is sent, with Portico's error.
func TestProtectRefusesWithPortico(t *testing.T) {
	client, srv := guarded(t, ratelimit.Limits{Requests: 1, Tokens: 1_000_000}, fakegemini.ModelConfig{Name: flashModel})
	ctx := portico.WithIdentity(context.Background(), portico.Identity{ClientKey: "tenant-1"})
	if _, err := client.Models.GenerateContent(ctx, flashModel, genai.Text("hi"), nil); err != nil {
		t.Fatal(err)
	}
	_, err := client.Models.GenerateContent(ctx, flashModel, genai.Text("hi"), nil)
	if portico.RefuserOf(err) != portico.ClientLimit || srv.Count(flashModel) != 1 {
		t.Fatalf("err %v, %d requests; want a client_limit refusal and one request", err, srv.Count(flashModel))
	}
}

// TestProtectStream: a stream stalled before its headers is cut by the
// first-chunk timeout and retried; the second streams whole.
func TestProtectStream(t *testing.T) {
	client, srv := guarded(t, plenty, fakegemini.ModelConfig{Name: flashModel, OutputTokens: 12, TokensPerSecond: 1000,
		Script: []fakegemini.Fault{{Kind: fakegemini.FaultStallBeforeHeaders}}})
	text := ""
	for resp, err := range client.Models.GenerateContentStream(context.Background(), flashModel, genai.Text("hi"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		text += resp.Text()
	}
	if text == "" || srv.Count(flashModel) != 2 {
		t.Fatalf("text %q, %d requests; want the text after 2", text, srv.Count(flashModel))
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
	gemini.Protect(bad, nil)
}
