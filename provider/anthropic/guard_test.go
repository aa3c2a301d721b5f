package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/protect"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
)

const haiku = "claude-haiku-4-5"

// guarded is an anthropic-sdk-go client as a service has it, plus Protect
// with a client limiter, a breaker and a retrier.
func guarded(t *testing.T, limits ratelimit.Limits, mc fakeanthropic.ModelConfig) (sdk.Client, *fakeanthropic.Server) {
	t.Helper()
	srv, err := fakeanthropic.Start(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{mc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	lim, err := ratelimit.New(ratelimit.Config{Limits: limits, Key: ratelimit.ByClient, DefaultMaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	brk, err := breaker.New(breaker.Config{Name: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := retry.New(retry.Config{Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
		Timeouts: retry.Timeouts{FirstChunk: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	client := sdk.NewClient(option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("fake"), option.WithHTTPClient(srv.Client()),
		anthropic.Protect(protect.Config{Layers: []portico.Middleware{lim.Wrap, brk.Wrap, rt.Wrap}}))
	return client, srv
}

func ask() sdk.MessageNewParams {
	return sdk.MessageNewParams{Model: haiku, MaxTokens: 64, Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))}}
}

var plenty = ratelimit.Limits{Requests: 1000, Tokens: 1_000_000}

// TestProtectRetriesOnce: a 529 then an answer: two requests reach the
// server, the retry layer's, none of the SDK's.
func TestProtectRetriesOnce(t *testing.T) {
	client, srv := guarded(t, plenty, fakeanthropic.ModelConfig{Name: haiku,
		Script: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 529}}})
	msg, err := client.Messages.New(context.Background(), ask())
	if err != nil || len(msg.Content) == 0 || srv.Count(haiku) != 2 {
		t.Fatalf("err %v, %d requests; want an answer after 2", err, srv.Count(haiku))
	}
}

// TestProtectGivesUpAsTheSDKWould: a 400 is retried by nobody; the caller
// gets the SDK's own *anthropic.Error.
func TestProtectGivesUpAsTheSDKWould(t *testing.T) {
	client, srv := guarded(t, plenty, fakeanthropic.ModelConfig{Name: haiku,
		Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultContextLength, Fraction: 1}}})
	_, err := client.Messages.New(context.Background(), ask())
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || srv.Count(haiku) != 1 {
		t.Fatalf("err %v, %d requests; want the SDK's 400 after one request", err, srv.Count(haiku))
	}
}

// TestProtectRefusesWithPortico: a tenant past its limit is refused before
// anything is sent, with Portico's error; another tenant is not.
func TestProtectRefusesWithPortico(t *testing.T) {
	client, srv := guarded(t, ratelimit.Limits{Requests: 1, Tokens: 1_000_000}, fakeanthropic.ModelConfig{Name: haiku})
	ctx := portico.WithIdentity(context.Background(), portico.Identity{ClientKey: "tenant-1"})
	if _, err := client.Messages.New(ctx, ask()); err != nil {
		t.Fatal(err)
	}
	_, err := client.Messages.New(ctx, ask())
	if portico.RefuserOf(err) != portico.ClientLimit || srv.Count(haiku) != 1 {
		t.Fatalf("err %v, %d requests; want a client_limit refusal and one request", err, srv.Count(haiku))
	}
	if _, err := client.Messages.New(portico.WithIdentity(context.Background(), portico.Identity{ClientKey: "tenant-2"}), ask()); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
}

// TestProtectStream: a stream stalled before its headers is cut by the
// first-chunk timeout and retried; the second streams whole.
func TestProtectStream(t *testing.T) {
	client, srv := guarded(t, plenty, fakeanthropic.ModelConfig{Name: haiku, OutputTokens: 12, TokensPerSecond: 1000,
		Script: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStallBeforeHeaders}}})
	stream := client.Messages.NewStreaming(context.Background(), ask())
	var text strings.Builder
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "content_block_delta" {
			text.WriteString(ev.Delta.Text)
		}
	}
	if err := stream.Err(); err != nil || text.Len() == 0 || srv.Count(haiku) != 2 {
		t.Fatalf("err %v, text %q, %d requests; want the text after 2", err, text.String(), srv.Count(haiku))
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
	anthropic.Protect(bad)
}
