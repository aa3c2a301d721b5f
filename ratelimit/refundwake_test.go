package ratelimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestRefundWakesWaiters: what a refund frees goes at once to the calls
// already waiting on the key, in arrival order. 1,000 tokens per minute
// (b = 1,000, r = 16.7/s); five calls reserving 400 each (100 estimated
// input + 300 MaxOutputTokens) at t = 0 in Wait mode. c1 and c2 go at once
// and end at 2 s having used 200 each, refunding 200 each. c3 goes at 2 s;
// c4 when the refill covers the rest, at 2 s + 166.7/r = 12 s; c5 at 36 s.
// A sixth call of 10 tokens arriving at 2.5 s, after the refunds, waits
// behind c4 and c5 rather than taking the room they wait for. Before
// refunds woke waiters, c3 went at 12 s, c4 at 36 s and c5 at 60 s, and c6
// overtook c5 at 42.6 s. The refunds take the lock-free completion, or, when
// the answers carry a provider view (none known here), the locked one.
func TestRefundWakesWaiters(t *testing.T) {
	for _, locked := range []bool{false, true} {
		t.Run(map[bool]string{false: "lock-free completion", true: "locked completion"}[locked], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { checkRefundWakesWaiters(t, locked) })
		})
	}
}

func checkRefundWakesWaiters(t *testing.T, locked bool) {
	l := mustNew(t, Config{Limits: Limits{Tokens: 1000}, Mode: Wait, MaxWait: 2 * time.Minute, Estimator: fixedEstimator(100)})
	// c1 and c2 run 2 s and use 200 tokens; the others run 10 minutes and
	// use their whole reservation, so only c1's and c2's refunds matter.
	work := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if req.Identity.SessionID == "short" {
			time.Sleep(2 * time.Second)
			resp := &portico.Response{Usage: portico.Usage{InputTokens: 100, OutputTokens: 100}}
			if locked {
				resp.RateLimit = &portico.RateLimit{}
			}
			return resp, nil
		}
		time.Sleep(10 * time.Minute)
		return &portico.Response{Usage: portico.Usage{InputTokens: 100, OutputTokens: req.MaxOutputTokens}}, nil
	})
	start := time.Now()
	admitted := make([]time.Duration, 6)
	done := make(chan int, 6)
	call := func(i, maxOut int, session string) {
		r := req("a", maxOut)
		r.Identity.SessionID = session
		go func() {
			admit := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
				admitted[i] = time.Since(start)
				return work.Generate(ctx, r)
			})
			if _, err := l.Wrap(admit).Generate(t.Context(), r); err != nil {
				t.Errorf("c%d = %v, want admitted", i+1, err)
			}
			done <- i
		}()
		synctest.Wait() // each call is in line before the next arrives
	}
	call(0, 300, "short")
	call(1, 300, "short")
	for i := 2; i < 5; i++ {
		call(i, 300, "")
	}
	time.Sleep(2500 * time.Millisecond)
	call(5, 10, "") // with the 100 estimated input, a reserve of 110
	for range 6 {
		<-done
	}

	// The expected times, from the bucket's own arithmetic.
	b := newBucket(1000.0/60, 1000, 0)
	b.take(0, 400, 0)
	b.take(0, 400, 0)
	b.refund(200)
	b.refund(200)
	if ok, _ := b.take(2*time.Second, 400, 0); !ok {
		t.Fatalf("bucket: c3 not admitted at 2s after the refunds")
	}
	_, w4 := b.take(2*time.Second, 400, 0)
	c4 := 2*time.Second + w4
	b.take(c4, 400, 0)
	_, w5 := b.take(c4, 400, 0)
	c5 := c4 + w5
	b.take(c5, 400, 0)
	_, w6 := b.take(c5, 110, 0)
	c6 := c5 + w6
	if d := c4 - 12*time.Second; d < -time.Microsecond || d > time.Microsecond {
		t.Fatalf("bucket arithmetic: c4 at %v, want about 12s", c4)
	}
	want := []time.Duration{0, 0, 2 * time.Second, c4, c5, c6}
	for i := range want {
		if admitted[i] != want[i] {
			t.Errorf("c%d admitted at %v, want %v", i+1, admitted[i], want[i])
		}
	}
	t.Logf("admitted at %v", admitted)
}
