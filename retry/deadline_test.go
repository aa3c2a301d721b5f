package retry

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// DESIGN.md's invariant: no attempt starts when the remaining deadline is below
// its required allowance, and no attempt outlives the deadline. Checked over
// 300 random combinations of deadline, allowance, attempt duration and backoff.
func TestNoAttemptStartsWithoutItsAllowance(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond }
	for trial := range 300 {
		deadline, allow, work := ms(50, 3000), ms(0, 500), ms(1, 800)
		kind := Schedule(rng.IntN(4))
		seed := rng.Uint64()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			dl, _ := ctx.Deadline()
			base := &counting{fn: func(ctx context.Context, _ int, _ *portico.Request) (*portico.Response, error) {
				if left := time.Until(dl); left < allow || left <= 0 {
					t.Errorf("trial %d: attempt started with %v left, allowance %v", trial, left, allow)
				}
				err := sleepCtx(ctx, work)
				if time.Until(dl) < 0 {
					t.Errorf("trial %d: attempt ran past the deadline", trial)
				}
				if err != nil {
					return nil, err
				}
				return nil, transient()
			}}
			r := mustNew(t, Config{MaxAttempts: 6, MinAttemptTime: allow,
				Budget: Budget{Off: true}, Backoff: Backoff{Schedule: kind, BaseDelay: 100 * time.Millisecond, Rand: rand.New(rand.NewPCG(seed, 1)).Float64}})
			_, err := r.Wrap(base).Generate(ctx, userReq)
			if c := portico.ClassOf(err); c != portico.Transient && c != portico.Deadline {
				t.Errorf("trial %d: class %v, want transient or deadline", trial, c)
			}
		})
	}
}

// Decorrelated jitter: each wait is in [BaseDelay, 3*previous wait), capped at
// MaxDelay, with the first previous wait taken as BaseDelay.
func TestDecorrelatedJitterSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var delays []time.Duration
		base := failing(transient())
		r := mustNew(t, Config{MaxAttempts: 12, Budget: Budget{Off: true},
			OnRetry: func(i Info) { delays = append(delays, i.Delay) }, Backoff: Backoff{Schedule: DecorrelatedJitter, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second, Rand: rand.New(rand.NewPCG(5, 5)).Float64}})
		r.Wrap(base).Generate(context.Background(), userReq)
		if len(delays) != 11 {
			t.Fatalf("retries = %d, want 11", len(delays))
		}
		prev := 10 * time.Millisecond
		for i, d := range delays {
			if d < 10*time.Millisecond || d > time.Second || d >= max(3*prev, 10*time.Millisecond+1) && d != time.Second {
				t.Errorf("wait %d = %v after %v, want in [10ms, min(1s, %v))", i+1, d, prev, 3*prev)
			}
			prev = d
		}
	})
}

func TestSingleAttemptIsTransparent(t *testing.T) {
	fail := transient()
	for _, stream := range []bool{false, true} {
		req := userReq.Clone()
		if stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		base := failing(fail)
		_, err := mustNew(t, Config{MaxAttempts: 1}).Wrap(base).Generate(context.Background(), req)
		if err != fail || base.calls() != 1 {
			t.Errorf("stream %v: MaxAttempts 1 gave %v after %d calls, want the error unchanged after 1", stream, err, base.calls())
		}
	}
}

// A panic in the wrapped Model passes through, and a streamed attempt's
// context is released on the way (not left to its watchdog or timeout).
func TestPanicPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attemptCtx context.Context
		base := portico.ModelFunc(func(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
			attemptCtx = ctx
			panic("boom")
		})
		m := mustNew(t, Config{Timeouts: Timeouts{Attempt: time.Minute, FirstChunk: time.Second}}).Wrap(base)
		req := userReq.Clone()
		req.OnChunk = func(portico.Chunk) error { return nil }
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("recover() = %v, want boom", p)
				}
			}()
			m.Generate(context.Background(), req)
		}()
		if attemptCtx == nil || attemptCtx.Err() == nil {
			t.Errorf("attempt context after a panic: not canceled, want released at once")
		}
	})
}
