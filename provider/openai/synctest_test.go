package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

// startPipe serves cfg over net.Pipe inside the caller's synctest bubble.
func startPipe(t *testing.T, cfg fakeopenai.Config, opts ...option.RequestOption) (*fakeopenai.Server, *openai.Model) {
	t.Helper()
	s, err := fakeopenai.StartPipe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	all := append([]option.RequestOption{option.WithBaseURL(s.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(s.Client())}, opts...)
	return s, openai.New(openai.Config{}, all...)
}

// The real SDK over an in-memory server, in virtual time: a streamed answer's
// chunks arrive at exactly the server's latency, TTFT and token pace.
func TestStreamTimingInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, m := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", Latency: 50 * time.Millisecond, TTFT: time.Second, TokensPerSecond: 20, OutputTokens: 5}}})
		req := userReq("m", "hello")
		start := time.Now()
		var at []time.Duration
		req.OnChunk = func(portico.Chunk) error { at = append(at, time.Since(start)); return nil }
		resp, err := m.Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{1050, 1100, 1150, 1200, 1250}
		if len(at) != len(want) {
			t.Fatalf("chunks at %v, want 5", at)
		}
		for i := range want {
			if at[i] != want[i]*time.Millisecond {
				t.Errorf("chunk %d at %v, want %v", i, at[i], want[i]*time.Millisecond)
			}
		}
		if resp.Usage.OutputTokens != 5 || time.Since(start) != 1250*time.Millisecond {
			t.Errorf("Generate = %d tokens after %v, want 5 after 1.25s", resp.Usage.OutputTokens, time.Since(start))
		}
	})
}

// Canceling mid-stream returns at once, with a Canceled error, and leaves no
// goroutine behind: the bubble would not end otherwise.
func TestStreamCancelInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, m := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", TokensPerSecond: 10, OutputTokens: 100}}})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req := userReq("m", "hello")
		n := 0
		req.OnChunk = func(portico.Chunk) error {
			n++
			if n == 3 {
				time.AfterFunc(50*time.Millisecond, cancel) // between tokens
			}
			return nil
		}
		start := time.Now()
		_, err := m.Generate(ctx, req)
		if portico.ClassOf(err) != portico.Canceled || n != 3 || time.Since(start) != 250*time.Millisecond {
			t.Errorf("Generate = %v after %d chunks and %v, want canceled after 3 chunks at 250ms", err, n, time.Since(start))
		}
	})
}

// A per-attempt deadline (a context deadline with a cause, as a retry layer
// sets) is Ambiguous once the request was written and Transient before; the
// caller's own deadline is Deadline either way.
func TestAttemptDeadlineInSynctest(t *testing.T) {
	errAttempt := fmt.Errorf("attempt timeout: %w", portico.ErrLayerTimeout)
	stall := fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStallMidStream, Fraction: 1, AfterChunks: 1}}}}}
	synctest.Test(t, func(t *testing.T) {
		_, m := startPipe(t, stall)
		for _, stream := range []bool{false, true} {
			ctx, cancel := context.WithTimeoutCause(t.Context(), time.Second, errAttempt)
			req := userReq("m", "hello")
			if stream {
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			_, err := m.Generate(ctx, req)
			cancel()
			if portico.ClassOf(err) != portico.Ambiguous || !errors.Is(err, errAttempt) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("stream %v: Generate = %v, want ambiguous wrapping the cause and DeadlineExceeded", stream, err)
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A transport whose dial never completes: the request is never written.
		hang := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}}
		m := openai.New(openai.Config{}, option.WithBaseURL("http://unreachable.test/v1/"), option.WithAPIKey("k"), option.WithHTTPClient(hang))
		ctx, cancel := context.WithTimeoutCause(t.Context(), time.Second, errAttempt)
		_, err := m.Generate(ctx, userReq("m", "hello"))
		cancel()
		var pe *portico.Error
		if portico.ClassOf(err) != portico.Transient || !errors.Is(err, errAttempt) || !errors.As(err, &pe) || !pe.NotSent {
			t.Errorf("Generate = %v, want transient wrapping the cause, NotSent", err)
		}
		ctx, cancel = context.WithTimeout(t.Context(), time.Second)
		_, err = m.Generate(ctx, userReq("m", "hello"))
		cancel()
		if portico.ClassOf(err) != portico.Deadline || !errors.As(err, &pe) || !pe.NotSent {
			t.Errorf("Generate = %v, want deadline, NotSent (the request was never written)", err)
		}
		hang.CloseIdleConnections()
	})
}

// An http.Client timeout fires after the request was written: Ambiguous.
func TestClientTimeoutAmbiguous(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := fakeopenai.StartPipe(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", Latency: time.Hour}}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c := &http.Client{Timeout: 2 * time.Second, Transport: s.Client().Transport}
		m := openai.New(openai.Config{}, option.WithBaseURL(s.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(c))
		start := time.Now()
		_, err = m.Generate(t.Context(), userReq("m", "hello"))
		if portico.ClassOf(err) != portico.Ambiguous || time.Since(start) != 2*time.Second {
			t.Errorf("Generate = %v after %v, want ambiguous after 2s", err, time.Since(start))
		}
	})
}

// A provider's enforced rate limit reaches the caller as RateLimited, with
// the wait until the window resets and the provider's view of the quota.
func TestEnforcedRateLimitInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, m := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", RateLimit: &fakeopenai.RateLimit{
			Requests: 1, ResetRequests: 2 * time.Second, Enforce: true,
		}}}})
		if _, err := m.Generate(t.Context(), userReq("m", "hello")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		_, err := m.Generate(t.Context(), userReq("m", "hello"))
		pe := asError(t, err)
		want := portico.Quota{Known: true, Limit: 1, Remaining: 0, Reset: 1500 * time.Millisecond}
		if pe.Class != portico.RateLimited || pe.RetryAfter != 1500*time.Millisecond || pe.RateLimit == nil || pe.RateLimit.Requests != want {
			t.Errorf("Generate error = %v %v %+v, want rate_limited, 1.5s, requests %+v", pe.Class, pe.RetryAfter, pe.RateLimit, want)
		}
		time.Sleep(pe.RetryAfter)
		if _, err := m.Generate(t.Context(), userReq("m", "hello")); err != nil {
			t.Errorf("Generate after RetryAfter = %v, want an answer", err)
		}
	})
}
