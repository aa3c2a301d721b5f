package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// within reports whether got is in [want-slack, want]: a wait computed by
// the server some time after the state it waits on.
func within(got, want, slack time.Duration) bool { return got <= want && got >= want-slack }

// hget reads one field of a bucket's hash, as a number.
func hget(t *testing.T, s *Store, key, field string) float64 {
	t.Helper()
	v, err := s.c.HGet(context.Background(), s.key("rl", key), field).Float64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTakeSettle walks one key through the scripts' rules: both buckets
// or neither, the exact wait, refunds capped at the burst, a charge's
// floor, and the key's TTL.
func TestTakeSettle(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{})
	b := s.Buckets()
	ctx := context.Background()
	// 100 tokens/s, burst 100; a request every 10 s, burst 2: slow enough
	// that no stall of a loaded machine refills one between the takes.
	lim := &ratelimit.Limits{Tokens: 6000, TokenBurst: 100, Requests: 6, RequestBurst: 2, Period: time.Minute}
	take := func(cost int) (time.Duration, string) {
		t.Helper()
		w, which, err := b.Take(ctx, "k", lim, cost)
		if err != nil {
			t.Fatal(err)
		}
		return w, which
	}
	start := time.Now()
	first := start // the first request taken
	if w, _ := take(60); w != 0 {
		t.Fatalf("first take of 60 of 100: wait %v, want 0", w)
	}
	// 40 left: 60 more needs 20 tokens, 200 ms at 100/s, less what the
	// time since the first take refilled.
	w, which := take(60)
	if slack := time.Since(start); which != "tokens" || !within(w, 200*time.Millisecond, slack) {
		t.Fatalf("take of 60 with 40 left = (%v, %q), want (200ms - up to %v, tokens)", w, which, slack)
	}
	// Refused: nothing charged, in either bucket.
	if got := hget(t, s, "k", "rl"); got != 1e6 {
		t.Errorf("request level after a refused take = %v µ, want 1e6 (one request left)", got)
	}
	// A refund of 60 brings the level back to 100 at most.
	if err := b.Settle(ctx, "k", lim, 80, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	b.s.flush() // settles are sent after the call
	if got := hget(t, s, "k", "tl"); got != 100e6 {
		t.Errorf("token level after refunding 80 over 40 = %v µ, want 100e6 (the burst)", got)
	}
	if w, _ := take(60); w != 0 {
		t.Fatalf("take of 60 after the refund: wait %v, want 0", w)
	}
	// Two requests taken: the third waits for the request bucket, 10 s (one
	// request) less the refill since the first, and takes no token.
	w, which = take(1)
	if since := time.Since(first); which != "requests" || w > 10*time.Second || w < 10*time.Second-since {
		t.Fatalf("third request = (%v, %q), want (10s less the %v since the first request, requests)", w, which, since)
	}
	tl := hget(t, s, "k", "tl")
	if tl > 100e6 || tl < 40e6 {
		t.Errorf("token level after a request refusal = %v µ, want 40e6 plus the refill", tl)
	}
	// A charge goes no lower than minus one period's quota, 6000 tokens:
	// the key then waits (6000 + 10) / 100 s, less what refilled since
	// (at most the time since the charge began: the bounds below widen by
	// that, not by a guess at the scheduler).
	charged := time.Now()
	if err := b.Settle(ctx, "k", lim, -1_000_000, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	b.s.flush() // settles are sent after the call
	if got := hget(t, s, "k", "tl"); got != -6000e6 {
		t.Errorf("token level after an absurd charge = %v µ, want -6000e6", got)
	}
	if w, which = take(10); which != "tokens" || w > 60100*time.Millisecond || w < 60100*time.Millisecond-time.Since(charged) {
		t.Errorf("take after the charge = (%v, %q), want (60.1s less the refill since, tokens)", w, which)
	}
	// The key lives until both buckets are full again, plus a second,
	// plus a second that spares the next writes a PEXPIRE:
	// (6000 + 100) / 100 s + 2 s = 63 s here.
	ttl, err := s.c.PTTL(ctx, s.key("rl", "k")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl > 63*time.Second || ttl < 63*time.Second-time.Since(charged)-time.Millisecond { // PTTL: whole milliseconds
		t.Errorf("TTL = %v, want 63s (time to full, plus 2s) less the time since the charge (%v)", ttl, time.Since(charged))
	}
}

// TestProviderViewShared: a provider's rate-limit headers seen by one
// instance tighten the key for another.
func TestProviderViewShared(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newStore(t, srv, Config{}).Buckets(), newStore(t, srv, Config{}).Buckets()
	ctx := context.Background()
	lim := &ratelimit.Limits{Tokens: 6000, TokenBurst: 100, Period: time.Minute} // 100/s
	if w, _, err := a.Take(ctx, "k", lim, 10); err != nil || w != 0 {
		t.Fatalf("take = %v, %v", w, err)
	}
	// The provider says 10 tokens remain of 100, resetting in 10 s: the
	// level drops to 10 and refills at 9 tokens/s until then.
	// Each wait below is the one at the Settle less the refill since: the
	// slack is the time since the Settle began, no guess at the scheduler.
	rl := &portico.RateLimit{Tokens: portico.Quota{Known: true, Remaining: 10, Limit: 100, Reset: 10 * time.Second}}
	start := time.Now()
	if err := a.Settle(ctx, "k", lim, 0, rl, time.Minute); err != nil {
		t.Fatal(err)
	}
	a.s.flush() // settles are sent after the call
	w, which, err := b.Take(ctx, "k", lim, 50)
	if err != nil {
		t.Fatal(err)
	}
	// 40 tokens at 9/s: 4.444 s (not 0.4 s at the configured 100/s).
	want := 4444444 * time.Microsecond
	if slack := time.Since(start); which != "tokens" || !within(w, want+time.Microsecond, slack) {
		t.Errorf("the other instance's take = (%v, %q), want (%v, tokens)", w, which, want)
	}
	// A view that holds for at most 1 s: 9 tokens/s for 1 s, then 100/s.
	start = time.Now()
	if err := a.Settle(ctx, "k2", lim, 0, rl, time.Second); err != nil {
		t.Fatal(err)
	}
	a.s.flush() // settles are sent after the call
	w, _, err = b.Take(ctx, "k2", lim, 50)
	if err != nil {
		t.Fatal(err)
	}
	// 9 tokens in the first second, 31 more at 100/s: 1.31 s.
	if !within(w, 1310*time.Millisecond, time.Since(start)) {
		t.Errorf("take under a 1 s hold = %v, want 1.31s", w)
	}
}
