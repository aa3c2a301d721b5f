package retry

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// plan is what a streaming fake does on one call: wait ttft, send chunks gap
// apart, then hang until its context ends (hang), fail with err, or answer
// their concatenation.
type plan struct {
	ttft   time.Duration
	chunks []string
	gap    time.Duration
	hang   bool
	err    error
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return portico.FromContext(ctx)
	case <-t.C:
		return nil
	}
}

// streamer plays plans[n] on call n (the last one repeats).
func streamer(plans ...plan) *counting {
	return &counting{fn: func(ctx context.Context, n int, req *portico.Request) (*portico.Response, error) {
		p := plans[min(n, len(plans)-1)]
		if err := sleepCtx(ctx, p.ttft); err != nil {
			return nil, err
		}
		for i, c := range p.chunks {
			if i > 0 {
				if err := sleepCtx(ctx, p.gap); err != nil {
					return nil, err
				}
			}
			if err := req.OnChunk(portico.Chunk{Text: c}); err != nil {
				return nil, err
			}
		}
		if p.hang {
			<-ctx.Done()
			return nil, portico.FromContext(ctx)
		}
		if p.err != nil {
			return nil, p.err
		}
		return &portico.Response{Text: strings.Join(p.chunks, ""), FinishReason: portico.FinishStop}, nil
	}}
}

// collect returns a streaming copy of userReq, with NoAmbiguousRetry set as
// given, and the chunks it receives.
func collect(noAmbiguousRetry bool) (*portico.Request, *[]string) {
	var got []string
	req := userReq.Clone()
	req.NoAmbiguousRetry = noAmbiguousRetry
	req.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
	return req, &got
}

// Once a chunk reached the caller, no retry: the error is returned as it is.
func TestNoRetryAfterFirstChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := transient()
		base := streamer(plan{chunks: []string{"a", "b"}, err: fail}, plan{chunks: []string{"ok"}})
		req, got := collect(false)
		_, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}}).Wrap(base).Generate(context.Background(), req)
		if err != fail {
			t.Errorf("err = %v, want the attempt's own error, unchanged", err)
		}
		if base.calls() != 1 || strings.Join(*got, "|") != "a|b" {
			t.Errorf("calls = %d, chunks %q, want 1 call and a|b", base.calls(), *got)
		}
	})
}

// A failure before any chunk is retried, and only the retry's chunks reach the
// caller; they add up to the final Response.
func TestStreamRetriedBeforeFirstChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := streamer(plan{err: transient()}, plan{chunks: []string{"he", "llo"}, gap: time.Millisecond})
		req, got := collect(false)
		resp, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}}).Wrap(base).Generate(context.Background(), req)
		if err != nil || resp.Text != "hello" || strings.Join(*got, "") != resp.Text || base.calls() != 2 {
			t.Errorf("Generate = %v, %v, chunks %q, calls %d; want hello from the 2nd call", resp, err, *got, base.calls())
		}
		if req.OnChunk == nil || req.Model != "m" {
			t.Errorf("caller's request was modified: %+v", req)
		}
	})
}

// A stalled first attempt is cut at FirstChunkTimeout and, Ambiguous with
// nothing delivered, retried by default and answered by the second; with
// NoAmbiguousRetry on the request or on the Retrier it is the call's error.
func TestFirstChunkTimeout(t *testing.T) {
	for _, tt := range []struct {
		name           string
		reqNo, routeNo bool
	}{{"default", false, false}, {"request NoAmbiguousRetry", true, false}, {"Config NoAmbiguousRetry", false, true}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The first attempt would send its first chunk at 5 s; the TTFT timeout is 1 s.
				base := streamer(plan{ttft: 5 * time.Second, chunks: []string{"late"}}, plan{chunks: []string{"on", " time"}})
				req, got := collect(tt.reqNo)
				var ttfts []time.Duration
				ctx := portico.ContextWithObserver(context.Background(), observerFunc(func(_ context.Context, e portico.Event) {
					if e.Kind == portico.EventFirstChunk {
						ttfts = append(ttfts, e.Delay)
					}
				}))
				start := time.Now()
				r := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{FirstChunk: time.Second}, NoAmbiguousRetry: tt.routeNo})
				resp, err := r.Wrap(base).Generate(ctx, req)
				if tt.reqNo || tt.routeNo {
					if base.calls() != 1 || portico.ClassOf(err) != portico.Ambiguous || !errors.Is(err, ErrFirstChunkTimeout) ||
						time.Since(start) != time.Second || len(*got) != 0 {
						t.Errorf("calls %d err %v after %v chunks %q; want 1 call, ambiguous ErrFirstChunkTimeout at 1s, no chunk",
							base.calls(), err, time.Since(start), *got)
					}
					return
				}
				if err != nil || resp.Text != "on time" || strings.Join(*got, "") != "on time" || base.calls() != 2 || time.Since(start) != time.Second {
					t.Errorf("Generate = %v, %v, chunks %q, calls %d at %v; want 'on time' from the retry at 1s", resp, err, *got, base.calls(), time.Since(start))
				}
				if len(ttfts) != 1 || ttfts[0] != time.Second {
					t.Errorf("first-chunk events = %v, want one at 1s", ttfts)
				}
			})
		})
	}
}

// An Ambiguous failure after a chunk reached the caller is final even by
// default: a stream that delivered "a" and then broke off is not repeated.
func TestNoAmbiguousRetryAfterChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cut := &portico.Error{Class: portico.Ambiguous, Reason: "response body cut off"}
		base := streamer(plan{chunks: []string{"a"}, err: cut}, plan{chunks: []string{"ok"}})
		req, got := collect(false)
		_, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}}).Wrap(base).Generate(context.Background(), req)
		if err != cut || base.calls() != 1 || strings.Join(*got, "|") != "a" {
			t.Errorf("err = %v after %d calls, chunks %q; want the cut error unchanged after 1 call, chunk a", err, base.calls(), *got)
		}
	})
}

// A chunk that arrives after the TTFT watchdog fired never reaches the caller,
// even if the model ignores its context.
func TestLateChunkRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var chunkErr error
		base := &counting{fn: func(_ context.Context, n int, req *portico.Request) (*portico.Response, error) {
			if n == 0 {
				time.Sleep(2 * time.Second) // ignores ctx
				chunkErr = req.OnChunk(portico.Chunk{Text: "late"})
				return &portico.Response{Text: "late"}, nil
			}
			req.OnChunk(portico.Chunk{Text: "ok"})
			return &portico.Response{Text: "ok"}, nil
		}}
		req, got := collect(false)
		resp, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{FirstChunk: time.Second}}).Wrap(base).Generate(context.Background(), req)
		if !errors.Is(chunkErr, ErrFirstChunkTimeout) {
			t.Errorf("late OnChunk = %v, want ErrFirstChunkTimeout", chunkErr)
		}
		if err != nil || resp.Text != "ok" || strings.Join(*got, "|") != "ok" {
			t.Errorf("Generate = %v, %v, chunks %q; want ok with only the retry's chunk", resp, err, *got)
		}
	})
}

func TestChunkGapTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Chunks at 0 and 300 ms (within the 500 ms gap), then a 10 s stall.
		base := &counting{fn: func(ctx context.Context, n int, req *portico.Request) (*portico.Response, error) {
			req.OnChunk(portico.Chunk{Text: "a"})
			sleepCtx(ctx, 300*time.Millisecond)
			req.OnChunk(portico.Chunk{Text: "b"})
			if err := sleepCtx(ctx, 10*time.Second); err != nil {
				return nil, err
			}
			return &portico.Response{Text: "ab"}, nil
		}}
		req, got := collect(false)
		start := time.Now()
		_, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{FirstChunk: time.Second, ChunkGap: 500 * time.Millisecond}}).
			Wrap(base).Generate(context.Background(), req)
		if base.calls() != 1 || portico.ClassOf(err) != portico.Ambiguous || !errors.Is(err, ErrChunkGapTimeout) {
			t.Errorf("calls %d err %v, want 1 call (chunks were delivered) and ambiguous ErrChunkGapTimeout", base.calls(), err)
		}
		if got := time.Since(start); got != 800*time.Millisecond {
			t.Errorf("ended after %v, want 800ms (last chunk at 300ms + 500ms gap)", got)
		}
		if strings.Join(*got, "") != "ab" {
			t.Errorf("chunks = %q, want a, b", *got)
		}
	})
}

// Chunks that keep coming within the gap never trip the watchdog, however long
// the whole answer takes.
func TestSlowSteadyStreamSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		chunks := make([]string, 50)
		for i := range chunks {
			chunks[i] = "x"
		}
		base := streamer(plan{ttft: 900 * time.Millisecond, chunks: chunks, gap: 400 * time.Millisecond})
		req, got := collect(false)
		resp, err := mustNew(t, Config{Timeouts: Timeouts{FirstChunk: time.Second, ChunkGap: 500 * time.Millisecond}}).
			Wrap(base).Generate(context.Background(), req)
		if err != nil || len(resp.Text) != 50 || len(*got) != 50 {
			t.Errorf("Generate = %v, %v, %d chunks; want 50 chunks over 20.5s", resp, err, len(*got))
		}
	})
}

// The caller's OnChunk error aborts the call, which is not retried.
func TestCallerChunkErrorNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := errors.New("caller stops")
		base := streamer(plan{chunks: []string{"a", "b"}})
		req := userReq.Clone()
		req.OnChunk = func(portico.Chunk) error { return stop }
		_, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}}).Wrap(base).Generate(context.Background(), req)
		if !errors.Is(err, stop) || base.calls() != 1 {
			t.Errorf("err = %v after %d calls, want the caller's error after 1", err, base.calls())
		}
	})
}

// plan.chunks of n copies of text.
func repeat(text string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = text
	}
	return out
}

// MinRate ends a stream that trickles at the end of the first window from
// its first chunk that brings too few tokens: one-token chunks 800 ms apart
// from 100 ms bring 7 in the window that ends at 5.1 s, where 5 tokens/s ask
// 25. The chunks reached the caller, so the error is final. Chunks of 40
// bytes (10 tokens) a second pass the same floor.
func TestMinRate(t *testing.T) {
	floor := Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{MinRate: 5, RateWindow: 5 * time.Second}}
	t.Run("trickle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := streamer(plan{ttft: 100 * time.Millisecond, gap: 800 * time.Millisecond, chunks: repeat("a", 20)})
			req, got := collect(false)
			start := time.Now()
			_, err := mustNew(t, floor).Wrap(base).Generate(context.Background(), req)
			if !errors.Is(err, ErrSlowStream) || !errors.Is(err, portico.ErrLayerTimeout) || portico.ClassOf(err) != portico.Ambiguous {
				t.Errorf("err = %v, want an Ambiguous ErrSlowStream", err)
			}
			if time.Since(start) != 5100*time.Millisecond || len(*got) != 7 || base.calls() != 1 {
				t.Errorf("ended at %v after %d chunks and %d calls, want 5.1s, 7 chunks, 1 call", time.Since(start), len(*got), base.calls())
			}
		})
	})
	t.Run("large chunks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := streamer(plan{gap: time.Second, chunks: repeat(strings.Repeat("x", 40), 12)})
			req, got := collect(false)
			if _, err := mustNew(t, floor).Wrap(base).Generate(context.Background(), req); err != nil || len(*got) != 12 {
				t.Errorf("Generate = %v after %d chunks, want the answer's 12", err, len(*got))
			}
		})
	})
}

// A trickle held back by an inner layer (reported with Progress) ends the
// attempt too; nothing reached the caller, so it is retried.
func TestMinRateCountsProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			calls++
			if calls == 1 {
				for range 20 {
					if err := sleepCtx(ctx, 800*time.Millisecond); err != nil {
						return nil, err
					}
					portico.Progress(ctx, portico.Chunk{Text: "a"})
				}
			}
			return &portico.Response{Text: "ok"}, nil
		})
		req, _ := collect(false)
		start := time.Now()
		r := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{MinRate: 5}})
		resp, err := r.Wrap(base).Generate(context.Background(), req)
		// First held chunk at 800 ms; its window ends at 5.8 s.
		if err != nil || resp.Text != "ok" || calls != 2 || time.Since(start) != 5800*time.Millisecond {
			t.Errorf("Generate = %v, %v after %d calls and %v; want ok from the 2nd call at 5.8s", resp, err, calls, time.Since(start))
		}
	})
}

// The floor's configuration: a rate that is negative or not finite, or a
// window that is negative or has no rate, is refused, naming the field.
func TestMinRateConfig(t *testing.T) {
	for _, to := range []Timeouts{{MinRate: -1}, {MinRate: math.NaN()}, {MinRate: math.Inf(1)}, {MinRate: 1, RateWindow: -time.Second}, {RateWindow: time.Second}} {
		if _, err := New(Config{Timeouts: to}); err == nil || !strings.HasPrefix(err.Error(), "retry: Config.Timeouts.") && !strings.HasPrefix(err.Error(), "retry: negative Config.Timeouts.") {
			t.Errorf("New(%+v) = %v, want an error naming the field", to, err)
		}
	}
}

// Reasoning is output: the rate floor counts a reasoning delta's bytes /4
// as tokens, as it counts text. A model that reasons 40 bytes every 800
// ms (12.5 tokens/s) for 16 s, then answers, is above a floor of 5
// tokens/s: one call. Counted as one token a delta (1.25 tokens/s) it
// would be cut at 5.8 s and retried.
func TestMinRateCountsReasoning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			calls++
			for range 20 {
				if err := sleepCtx(ctx, 800*time.Millisecond); err != nil {
					return nil, err
				}
				portico.Progress(ctx, portico.Chunk{Reasoning: strings.Repeat("think ", 6) + "done"})
			}
			return &portico.Response{Text: "ok"}, nil
		})
		req, _ := collect(false)
		start := time.Now()
		r := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{MinRate: 5}})
		resp, err := r.Wrap(base).Generate(context.Background(), req)
		if err != nil || resp.Text != "ok" || calls != 1 || time.Since(start) != 16*time.Second {
			t.Errorf("Generate = %v, %v after %d calls and %v; want ok from one call at 16s", resp, err, calls, time.Since(start))
		}
	})
}
