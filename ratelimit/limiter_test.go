package ratelimit

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

func req(client string, maxOut int) *portico.Request {
	return &portico.Request{Model: "m", MaxOutputTokens: maxOut, Identity: portico.Identity{ClientKey: client}}
}

func TestRefundOnCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 1000}, Estimator: fixedEstimator(100)})
		m := l.Wrap(okModel(80, 50))
		r := req("a", 400)
		if _, err := m.Generate(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		// Reserved 100 + 400, used 80 + 50: the level is 1000 - 130.
		if got := l.levelOf(r, time.Now()); got != 870 {
			t.Errorf("level after a call using 130 of 500 reserved = %v, want 870", got)
		}
		// Usage beyond the reservation is charged.
		m2 := l.Wrap(okModel(300, 400))
		if _, err := m2.Generate(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		if got := l.levelOf(r, time.Now()); got != 170 {
			t.Errorf("level after a call using 700 of 500 reserved = %v, want 170", got)
		}
		// Absurd usage is charged down to minus one period's quota (1000) at
		// most: the key waits 1000 + 500 tokens at 1000/min, 90s, not for
		// ever.
		time.Sleep(20 * time.Second) // 170 + 333: room for the 500 again
		m3 := l.Wrap(okModel(0, math.MaxInt))
		if _, err := m3.Generate(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		if got := l.levelOf(r, time.Now()); got != -1000 {
			t.Errorf("level after a call reporting MaxInt tokens = %v, want -1000 (-Tokens)", got)
		}
		_, err := m.Generate(t.Context(), r)
		if ra := portico.RetryAfterOf(err); !errors.Is(err, ErrLimited) || ra != 90*time.Second {
			t.Errorf("call after absurd usage = %v (RetryAfter %v), want ErrLimited after 90s", err, ra)
		}
	})
}

func TestOverCapacity(t *testing.T) {
	called := false
	l := mustNew(t, Config{Limits: Limits{Tokens: 1000}, Estimator: fixedEstimator(700)})
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		called = true
		return &portico.Response{}, nil
	}))
	_, err := m.Generate(context.Background(), req("a", 400))
	var ce *CapacityError
	if !errors.Is(err, ErrOverCapacity) || !errors.As(err, &ce) || portico.ClassOf(err) != portico.Incompatible {
		t.Fatalf("Generate(700 in + 400 out, capacity 1000) = %v, want Incompatible ErrOverCapacity", err)
	}
	if *ce != (CapacityError{Input: 700, MaxOutput: 400, Capacity: 1000}) || called {
		t.Errorf("CapacityError = %+v, model called %v; want {700 400 1000}, not called", *ce, called)
	}
	// Exactly the capacity fits.
	if _, err := m.Generate(context.Background(), req("a", 300)); err != nil {
		t.Errorf("Generate(700 + 300, capacity 1000) = %v, want nil", err)
	}
}

// TestRejectRetryAfter: the RetryAfter of a rejection is the exact time
// after which the same call is admitted: here, where the shortfall takes a
// whole number of nanoseconds, 1ns earlier it is still refused (in general
// see TestRetryAfterExact).
func TestRejectRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Tokens: 10/s, b = 100. Requests: 1/s, burst 1.
		l := mustNew(t, Config{Limits: Limits{Requests: 60, RequestBurst: 1, Tokens: 600, TokenBurst: 100}, Estimator: fixedEstimator(20)})
		m := l.Wrap(okModel(20, 80))
		rec := &recorder{}
		ctx := portico.ContextWithObserver(t.Context(), rec)
		if _, err := m.Generate(ctx, req("a", 80)); err != nil {
			t.Fatal(err)
		}
		_, err := m.Generate(ctx, req("a", 80))
		if !errors.Is(err, ErrLimited) || portico.ClassOf(err) != portico.RateLimited {
			t.Fatalf("second call = %v, want RateLimited ErrLimited", err)
		}
		if ra := portico.RetryAfterOf(err); ra != 10*time.Second {
			t.Fatalf("RetryAfter = %v, want 10s (100 tokens at 10/s)", ra)
		}
		time.Sleep(10*time.Second - time.Nanosecond)
		_, err = m.Generate(ctx, req("a", 80))
		if ra := portico.RetryAfterOf(err); !errors.Is(err, ErrLimited) || ra != time.Nanosecond {
			t.Fatalf("1ns early: %v (RetryAfter %v), want ErrLimited with 1ns", err, ra)
		}
		time.Sleep(time.Nanosecond)
		if _, err := m.Generate(ctx, req("a", 80)); err != nil {
			t.Fatalf("at RetryAfter: %v, want admitted", err)
		}
		ev := rec.events
		if len(ev) != 2 || ev[0].Kind != portico.EventRateLimitReject || ev[0].Delay != 10*time.Second || ev[0].Reason != "tokens" {
			t.Errorf("events = %+v, want two rate_limit_reject, the first with Delay 10s", ev)
		}
	})
}

// TestBucketsInSeries: a refusal by either bucket charges neither.
func TestBucketsInSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Requests: 60, RequestBurst: 1, Tokens: 600, TokenBurst: 1000}, Estimator: fixedEstimator(0)})
		m := l.Wrap(errModel(&portico.Error{Class: portico.Ambiguous})) // refunds nothing
		r := req("a", 100)
		m.Generate(t.Context(), r)
		// The request bucket refuses: the token bucket keeps 900.
		_, err := m.Generate(t.Context(), r)
		if ra := portico.RetryAfterOf(err); !errors.Is(err, ErrLimited) || ra != time.Second {
			t.Fatalf("request-limited call = %v, want ErrLimited after 1s", err)
		}
		if got := l.levelOf(r, time.Now()); got != 900 {
			t.Errorf("token level after a request-bucket refusal = %v, want 900", got)
		}
		// The token bucket refuses (950 > 910 after 1s at 10/s): the request
		// bucket is not charged.
		time.Sleep(time.Second)
		_, err = m.Generate(t.Context(), req("a", 950))
		if !errors.Is(err, ErrLimited) {
			t.Fatalf("token-limited call = %v, want ErrLimited", err)
		}
		e := l.acquire(l.keyOf(r), r, mono.Now())
		got, _ := e.req.at(mono.Now())
		e.mu.Unlock()
		if got != 1 {
			t.Errorf("request tokens after a token-bucket refusal = %v, want 1", got)
		}
	})
}

func TestWaitMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 600, TokenBurst: 100}, Mode: Wait, MaxWait: 20 * time.Second, Estimator: fixedEstimator(0)})
		m := l.Wrap(okModel(0, 100))
		rec := &recorder{}
		ctx := portico.ContextWithObserver(t.Context(), rec)
		m.Generate(ctx, req("a", 100))
		start := time.Now()
		if _, err := m.Generate(ctx, req("a", 100)); err != nil {
			t.Fatalf("waiting call = %v, want nil", err)
		}
		if waited := time.Since(start); waited != 10*time.Second {
			t.Errorf("waited %v, want 10s", waited)
		}
		if len(rec.events) != 1 || rec.events[0].Kind != portico.EventRateLimitWait || rec.events[0].Delay != 10*time.Second {
			t.Errorf("events = %+v, want one rate_limit_wait of 10s", rec.events)
		}

		// A wait beyond the deadline fails at once, carrying the delay.
		dctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start = time.Now()
		_, err := m.Generate(dctx, req("a", 100))
		if !errors.Is(err, ErrLimited) || portico.RetryAfterOf(err) != 10*time.Second || time.Since(start) != 0 {
			t.Errorf("wait 10s with 5s left = %v after %v, want ErrLimited RetryAfter 10s at once", err, time.Since(start))
		}
		// So does a wait beyond MaxWait (20s): 100 tokens of debt need 10s, so
		// charge more first.
		m2 := l.Wrap(okModel(0, 300)) // usage 300 > reserve 100: 200 charged
		time.Sleep(10 * time.Second)
		m2.Generate(t.Context(), req("a", 100))
		_, err = m.Generate(t.Context(), req("a", 100))
		if !errors.Is(err, ErrLimited) || portico.RetryAfterOf(err) != 30*time.Second {
			t.Errorf("wait 30s with MaxWait 20s = %v, want ErrLimited RetryAfter 30s", err)
		}
	})
}

func TestWaitCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 600, TokenBurst: 100, MaxInFlight: 1}, Mode: Wait, Estimator: fixedEstimator(0)})
		m := l.Wrap(okModel(0, 100))
		r := req("a", 100)
		m.Generate(t.Context(), r)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := m.Generate(ctx, r)
			done <- err
		}()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := l.inflightOf(r); n != 1 {
			t.Fatalf("in flight while waiting = %d, want 1", n)
		}
		cancel()
		err := <-done
		if portico.ClassOf(err) != portico.Canceled || !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled wait = %v, want Canceled", err)
		}
		if n := l.inflightOf(r); n != 0 {
			t.Errorf("in flight after cancel = %d, want 0", n)
		}
		if got := l.levelOf(r, time.Now()); got != 30 {
			t.Errorf("level after a canceled wait = %v, want 30 (3s of refill, nothing taken)", got)
		}
	})
}

func TestRefundRule(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{&portico.Error{Class: portico.Rejected}, 500},
		{&portico.Error{Class: portico.Permanent}, 500},
		{&portico.Error{Class: portico.Transient}, 500},
		{&portico.Error{Class: portico.Permanent, Status: 400}, 400},
		{&portico.Error{Class: portico.Incompatible, Status: 400}, 400},
		{&portico.Error{Class: portico.Transient, Status: 503}, 400},
		{&portico.Error{Class: portico.RateLimited, Status: 429}, 400},
		{&portico.Error{Class: portico.RateLimited}, 500},                  // an inner limiter: never sent
		{&portico.Error{Class: portico.RateLimited, Err: ErrLimited}, 500}, // the same, as a Limiter returns it
		{&portico.Error{Class: portico.Transient, Status: 200}, 0},         // an error event in a 200 stream
		{&portico.Error{Class: portico.RateLimited, Status: 200}, 0},
		{&portico.Error{Class: portico.Permanent, Status: 200}, 0},
		{&portico.Error{Class: portico.Incompatible, Status: 200}, 0},
		{&portico.Error{Class: portico.Ambiguous}, 0},
		{&portico.Error{Class: portico.Canceled}, 0},
		{&portico.Error{Class: portico.Deadline}, 0},
		{&portico.Error{Class: portico.InvalidResponse}, 0},
		{context.Canceled, 0},
		{errors.New("unclassified"), 0},
	}
	for _, tt := range tests {
		if got := Refund(tt.err, 100, 400); got != tt.want {
			t.Errorf("Refund(%v, 100, 400) = %d, want %d", tt.err, got, tt.want)
		}
	}
	// Through the limiter: a 429 keeps the input, refunds the output reserve.
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 1000}, Estimator: fixedEstimator(100)})
		r := req("a", 400)
		l.Wrap(errModel(&portico.Error{Class: portico.RateLimited, Status: 429})).Generate(t.Context(), r)
		if got := l.levelOf(r, time.Now()); got != 900 {
			t.Errorf("level after a 429 = %v, want 900", got)
		}
		// An inner Limiter's refusal never reached the provider: the outer
		// Limiter gets all of its 500 back.
		inner := mustNew(t, Config{Limits: Limits{Requests: 1}})
		model := l.Wrap(inner.Wrap(okModel(0, 0)))
		r2 := req("b", 400)
		if _, err := model.Generate(t.Context(), r2); err != nil {
			t.Fatal(err)
		}
		if _, err := model.Generate(t.Context(), r2); !errors.Is(err, ErrLimited) {
			t.Fatalf("second call through an inner Limiter of 1 request = %v, want ErrLimited", err)
		}
		if got := l.levelOf(r2, time.Now()); got != 500 {
			t.Errorf("level after an admitted call with no usage and an inner refusal = %v, want 500 (only the first call's 500 kept)", got)
		}
	})
}

// New refuses each value that can only be a mistake with a message naming
// the field.
func TestBadConfig(t *testing.T) {
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "ratelimit: no limit: set Limits.Requests, Tokens or MaxInFlight, or Config.Concurrency"},
		{Config{Limits: Limits{Requests: -1}}, "ratelimit: negative Limits.Requests (-1)"},
		{Config{Limits: Limits{Tokens: -5}}, "ratelimit: negative Limits.Tokens (-5)"},
		{Config{Limits: Limits{Tokens: 100, TokenBurst: -1}}, "ratelimit: negative Limits.TokenBurst (-1)"},
		{Config{Limits: Limits{RequestBurst: 5, Tokens: 100}}, "ratelimit: Limits.RequestBurst without Requests"},
		{Config{Limits: Limits{Requests: 5, TokenBurst: 5}}, "ratelimit: Limits.TokenBurst without Tokens"},
		{Config{Limits: Limits{Requests: 5, Period: -time.Second}}, "ratelimit: negative Limits.Period (-1s)"},
		{Config{Limits: Limits{MaxInFlight: -1}}, "ratelimit: negative Limits.MaxInFlight (-1)"},
		{Config{Limits: Limits{Tokens: 100}, DefaultMaxTokens: 101},
			"ratelimit: Config.DefaultMaxTokens 101 leaves no room for input in TokenBurst 100: no call with the default could ever be admitted"},
		// At the burst itself only an empty input fits: no real call does.
		{Config{Limits: Limits{Tokens: 1000, TokenBurst: 100}, DefaultMaxTokens: 100},
			"ratelimit: Config.DefaultMaxTokens 100 leaves no room for input in TokenBurst 100: no call with the default could ever be admitted"},
		{Config{Limits: Limits{Tokens: 100}, DefaultMaxTokens: -2}, "ratelimit: negative Config.DefaultMaxTokens other than RequireMaxTokens"},
		{Config{Limits: Limits{Requests: 5}, Queue: Queue{Size: 3}}, "ratelimit: Config.Queue.Size without Limits.MaxInFlight or Config.Concurrency"},
		{Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: -1}}, "ratelimit: negative Config.Queue.Size"},
		{Config{Limits: Limits{Requests: 5}, MaxWait: -1}, "ratelimit: negative Config.MaxWait"},
		{Config{Limits: Limits{Requests: 5}, Mode: 7}, "ratelimit: unknown Config.Mode Mode(7)"},
		{Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 1, Order: 9}}, "ratelimit: unknown Config.Queue.Order Order(9)"},
		{Config{Limits: Limits{Requests: 5}, Queue: Queue{PLAS: PLASConfig{Quantum: -1}}}, "ratelimit: negative Config.Queue.PLAS.Quantum"},
		{Config{Limits: Limits{Requests: 5}, Queue: Queue{PLAS: PLASConfig{Levels: -1}}}, "ratelimit: negative Config.Queue.PLAS.Levels"},
		{Config{Limits: Limits{Requests: 5}, Queue: Queue{PLAS: PLASConfig{Starvation: math.NaN()}}}, "ratelimit: negative or NaN Config.Queue.PLAS.Starvation"},
		{Config{Limits: Limits{Requests: 5}, Queue: Queue{ProgramTTL: -1}}, "ratelimit: negative Config.Queue.ProgramTTL"},
		{Config{Limits: Limits{Requests: 5}, MaxProviderHold: -1}, "ratelimit: negative Config.MaxProviderHold"},
	}
	for _, tt := range bad {
		if l, err := New(tt.cfg); err == nil || l != nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, %v; want nil, %q", tt.cfg, l, err, tt.want)
		}
	}
	// SetLimit holds the new limits to the same rule, and changes nothing.
	set := mustNew(t, Config{Limits: Limits{Tokens: 1000}, DefaultMaxTokens: 100})
	const want = "ratelimit: Config.DefaultMaxTokens 100 leaves no room for input in TokenBurst 100: no call with the default could ever be admitted"
	if err := set.SetLimit(Limits{Tokens: 100}); err == nil || err.Error() != want || set.limitsOf(0).Tokens != 1000 {
		t.Errorf("SetLimit(Tokens 100) = %v, Tokens now %d; want %q and 1000 kept", err, set.limitsOf(0).Tokens, want)
	}
	// Zero burst means the period's limit, and it admits; a default one token
	// below the burst leaves room for a one-token input.
	l := mustNew(t, Config{Limits: Limits{Requests: 1, Tokens: 10}, DefaultMaxTokens: 9, Estimator: fixedEstimator(1)})
	if _, err := l.Wrap(okModel(0, 1)).Generate(context.Background(), req("a", 0)); err != nil {
		t.Errorf("zero bursts: first call = %v, want admitted", err)
	}
}

func TestBadRequest(t *testing.T) {
	l := mustNew(t, Config{Limits: Limits{Tokens: 1000}, DefaultMaxTokens: RequireMaxTokens})
	neg := mustNew(t, Config{Limits: Limits{Tokens: 1000}, Estimator: fixedEstimator(-3)})
	huge := mustNew(t, Config{Limits: Limits{Tokens: 1000}, Estimator: fixedEstimator(math.MaxInt)})
	tests := []struct {
		name  string
		l     *Limiter
		r     *portico.Request
		want  error
		class portico.Class
	}{
		{"nil request", l, nil, portico.ErrNilRequest, portico.Permanent},
		{"negative max tokens", l, req("a", -1), ErrBadRequest, portico.Permanent},
		{"missing max tokens", l, req("a", 0), ErrBadRequest, portico.Permanent},
		{"negative estimate", neg, req("a", 10), ErrBadRequest, portico.Permanent},
		{"absurd estimate", huge, req("a", 10), ErrOverCapacity, portico.Incompatible},
		{"absurd max tokens", l, req("a", math.MaxInt), ErrOverCapacity, portico.Incompatible},
	}
	for _, tt := range tests {
		_, err := tt.l.Wrap(okModel(1, 1)).Generate(context.Background(), tt.r)
		if !errors.Is(err, tt.want) || portico.ClassOf(err) != tt.class {
			t.Errorf("%s: Generate = %v, want %v %v", tt.name, err, tt.class, tt.want)
		}
	}
}

// TestIsolation: a client hammering its key does not delay another's.
func TestIsolation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Requests: 60, Tokens: 6000}, Mode: Wait, Estimator: fixedEstimator(10)})
		m := l.Wrap(okModel(10, 90))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		hammered := make(chan int)
		go func() { // client a loops as fast as it is let in
			n := 0
			for ctx.Err() == nil {
				if _, err := m.Generate(ctx, req("a", 90)); err == nil {
					n++
				}
			}
			hammered <- n
		}()
		time.Sleep(90 * time.Second)
		start := time.Now()
		if _, err := m.Generate(t.Context(), req("b", 90)); err != nil || time.Since(start) != 0 {
			t.Errorf("client b while a hammers: %v after %v, want admitted at once", err, time.Since(start))
		}
		cancel()
		// a got its burst (60) then 1/s: 60 + 90, give or take the call in flight.
		if n := <-hammered; n < 149 || n > 151 {
			t.Errorf("client a admitted %d calls in 90s, want 150 ± 1 (burst 60 + 1/s)", n)
		}
	})
}

// TestWaitInLine: in Wait mode a waiting call holds its place: a small call
// arriving later does not overtake it, and a canceled wait gives its place
// back.
func TestWaitInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10 tokens/s, b = 100.
		l := mustNew(t, Config{Limits: Limits{Tokens: 600, TokenBurst: 100}, Mode: Wait, Estimator: fixedEstimator(0)})
		m := l.Wrap(errModel(&portico.Error{Class: portico.Ambiguous})) // refunds nothing
		m.Generate(t.Context(), req("a", 100))                          // level 0
		start := time.Now()
		admittedAt := make(chan time.Duration, 2)
		go func() { m.Generate(t.Context(), req("a", 100)); admittedAt <- time.Since(start) }()
		time.Sleep(time.Second)
		// Level 10 now, enough for 10 tokens, but the big call is first in
		// line: the small one waits for 100 + 10 - 10 = 100 tokens, 10s.
		go func() { m.Generate(t.Context(), req("a", 10)); admittedAt <- time.Since(start) }()
		big, small := <-admittedAt, <-admittedAt
		if big != 10*time.Second || small != 11*time.Second {
			t.Errorf("admitted big at %v, small at %v; want 10s and 11s (in line)", big, small)
		}

		// A canceled wait gives its place back.
		time.Sleep(10 * time.Second) // level 100
		m.Generate(t.Context(), req("a", 100))
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error)
		go func() { _, err := m.Generate(ctx, req("a", 100)); errc <- err }()
		time.Sleep(time.Second)
		cancel()
		if err := <-errc; portico.ClassOf(err) != portico.Canceled {
			t.Fatalf("canceled wait = %v, want Canceled", err)
		}
		s := time.Now()
		if _, err := m.Generate(t.Context(), req("a", 10)); !errors.Is(err, portico.ErrAmbiguous) || time.Since(s) != 0 {
			t.Errorf("small call after the cancel: %v after %v, want admitted at once (the model's error)", err, time.Since(s))
		}
	})
}

// TestRetryAfterExact: over random limits, levels, provider views, costs and
// a waiter ahead (the two within one burst of each bucket), a refused take's
// wait is the least whole nanosecond after which the refill covers the
// shortfall: the same take is admitted at now + wait, and refused at now +
// wait - 2ns. (It may be admitted at now + wait - 1ns: admission forgives a
// shortfall that the refill covers within 1ns, rate.Limiter's rule, so a
// round 1s wait is not reported as 999.999999ms.)
func TestRetryAfterExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	refused, early := 0, 0
	for range 50_000 {
		lim := &Limits{Requests: 1 + rng.IntN(1000), Tokens: 1 + rng.IntN(100_000), Period: time.Duration(1+rng.IntN(120_000)) * time.Millisecond}
		lim.RequestBurst = 1 + rng.IntN(lim.Requests)
		lim.TokenBurst = 1 + rng.IntN(2*lim.Tokens)
		if rng.IntN(4) == 0 {
			lim.Requests, lim.RequestBurst = 0, 0
		}
		start := time.Duration(rng.Int64N(int64(time.Second)))
		e := newEntry(key{}, lim, start)
		e.tok.level = rng.Float64() * float64(lim.TokenBurst)
		if lim.Requests > 0 {
			e.req.level = rng.Float64() * float64(lim.RequestBurst)
		}
		if rng.IntN(3) == 0 {
			e.tok.adopt(start, rng.IntN(lim.TokenBurst), lim.TokenBurst, time.Duration(rng.Int64N(int64(time.Minute))), time.Duration(rng.Int64N(int64(time.Minute))))
		}
		cost := 1 + rng.IntN(lim.TokenBurst)
		if rng.IntN(4) == 0 && (lim.Requests == 0 || lim.RequestBurst >= 2) {
			e.w().holds = []*hold{{tokens: float64(rng.IntN(lim.TokenBurst - cost + 1))}}
		}
		now := start + time.Duration(rng.Int64N(int64(100*time.Millisecond)))
		ok, wait, _, _ := e.take(now, cost, nil, 0)
		if ok {
			continue
		}
		refused++
		aheadTok, aheadReq := e.ahead(nil)
		need := float64(cost) + aheadTok
		if wait < 1 || !e.admitsAt(now+wait, need, aheadReq) || e.admitsAt(now+wait-2, need, aheadReq) {
			t.Fatalf("take(%d) at %v on %+v: wait %v; admitted at +wait: %v, at +wait-2ns: %v; want true, false",
				cost, now, *lim, wait, e.admitsAt(now+wait, need, aheadReq), e.admitsAt(now+wait-2, need, aheadReq))
		}
		if e.admitsAt(now+wait-1, need, aheadReq) {
			early++
		}
		// admitsAt agrees with take itself at now + wait.
		if ok, _, _, _ := e.take(now+wait, cost, nil, 0); !ok {
			t.Fatalf("take(%d) at now + RetryAfter %v refused", cost, wait)
		}
	}
	if refused < 10_000 {
		t.Errorf("only %d of 50000 random takes refused: the test barely runs", refused)
	}
	t.Logf("%d refusals, %d of them admitted 1ns before RetryAfter", refused, early)
}

// admitsAt reports whether both of e's buckets would admit tokens and a
// request behind aheadReq others at t, if nothing happened until then. It
// changes nothing.
func (e *entry) admitsAt(t time.Duration, tokens float64, aheadReq int) bool {
	if e.lim.Tokens > 0 {
		if l, lt := e.tok.at(t); !e.tok.fits(l, tokens, lt) {
			return false
		}
	}
	if e.lim.Requests > 0 {
		if l, lt := e.req.at(t); !e.req.fits(l, float64(aheadReq+1), lt) {
			return false
		}
	}
	return true
}

// TestLimiterBound is the property test through the whole Limiter, with the
// lock-free completions, the deferred settling of refunds and provider
// feedback in play: goroutines in virtual time make calls at random
// arrivals with idle spells, with random N_max, service times (some long
// enough for the bucket to refill under them) and outcomes (usage below,
// at or above the reservation, no usage, errors of every refund class, a
// provider view now and then); the net admitted tokens over every interval
// dt (admissions when the model is called, refunds by the rule when it
// returns) stay within b + r*(dt + 1ns). With one caller in Reject mode,
// where nothing happens between a refusal and its retry, the same call made
// again after exactly its RetryAfter is admitted, every time.
func TestLimiterBound(t *testing.T) {
	for _, tc := range []struct {
		mode    Mode
		callers int
	}{{Reject, 1}, {Reject, 4}, {Wait, 4}} {
		mode, callers := tc.mode, tc.callers
		t.Run(mode.String()+"/"+strconv.Itoa(callers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const b, perMin, in = 1000, 6000, 5 // r = 100 tokens/s
				l := mustNew(t, Config{Limits: Limits{Tokens: perMin, TokenBurst: b}, Mode: mode, MaxWait: 5 * time.Second, Estimator: fixedEstimator(in)})
				var mu sync.Mutex
				var evs []event
				record := func(d float64) {
					mu.Lock()
					evs = append(evs, event{time.Now(), d})
					mu.Unlock()
				}
				classes := []*portico.Error{
					{Class: portico.Rejected}, {Class: portico.Transient}, {Class: portico.Transient, Status: 503},
					{Class: portico.RateLimited, Status: 429}, {Class: portico.Ambiguous}, {Class: portico.Transient, Status: 200},
				}
				var seq atomic.Uint64
				m := l.Wrap(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
					rng := rand.New(rand.NewPCG(seq.Add(1), 3))
					reserve := in + r.MaxOutputTokens
					record(float64(reserve))
					service := time.Duration(rng.ExpFloat64() * float64(300*time.Millisecond))
					if rng.IntN(20) == 0 {
						service += 15 * time.Second // the bucket refills to full meanwhile
					}
					time.Sleep(service)
					var rl *portico.RateLimit
					if rng.IntN(10) == 0 {
						rl = &portico.RateLimit{Tokens: portico.Quota{Known: true, Limit: b, Remaining: rng.IntN(b), Reset: time.Duration(rng.IntN(20_000)) * time.Millisecond}}
					}
					switch x := rng.IntN(10); {
					case x < 6: // usage, sometimes beyond the reservation (charged, not counted)
						used := 1 + rng.IntN(reserve+reserve/4)
						if used < reserve {
							record(-float64(reserve - used))
						}
						return &portico.Response{Usage: portico.Usage{InputTokens: 1, OutputTokens: used - 1}, RateLimit: rl}, nil
					case x < 7: // no usage reported: no refund
						return &portico.Response{RateLimit: rl}, nil
					default:
						pe := *classes[rng.IntN(len(classes))]
						pe.RateLimit = rl
						record(-float64(Refund(&pe, in, r.MaxOutputTokens)))
						return nil, &pe
					}
				}))
				var wg sync.WaitGroup
				var retriedRefused, retried atomic.Int32
				for g := range callers {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(g), 11))
						r := req("a", 0)
						for range 250 {
							time.Sleep(time.Duration(rng.ExpFloat64() * float64(150*time.Millisecond)))
							if rng.IntN(50) == 0 {
								time.Sleep(12 * time.Second) // an idle spell
							}
							r.MaxOutputTokens = 1 + int(float64(b-in-1)*math.Pow(rng.Float64(), 3))
							_, err := m.Generate(t.Context(), r)
							if !errors.Is(err, ErrLimited) || mode != Reject {
								continue
							}
							time.Sleep(portico.RetryAfterOf(err))
							retried.Add(1)
							if _, err := m.Generate(t.Context(), r); errors.Is(err, ErrLimited) {
								retriedRefused.Add(1)
							}
						}
					})
				}
				wg.Wait()
				mu.Lock()
				defer mu.Unlock()
				if ex := maxExcess(evs, b, perMin/60.0); ex > 1e-6+perMin/60.0*1e-9 {
					t.Errorf("net admitted tokens exceed b + r*(dt + 1ns) by %v over %d events", ex, len(evs))
				}
				if mode == Reject && callers == 1 && (retried.Load() < 20 || retriedRefused.Load() != 0) {
					t.Errorf("retried at RetryAfter %d times, refused again %d: want >= 20 retries, none refused", retried.Load(), retriedRefused.Load())
				}
				t.Logf("%d events; %d retries at RetryAfter, %d refused again", len(evs), retried.Load(), retriedRefused.Load())
			})
		})
	}
}

// TestDefaultMaxTokens: a zero Config.DefaultMaxTokens reserves
// DefaultMaxTokens (1024) for a request without MaxOutputTokens, capped at
// half the smallest token bucket in force (a tier's, the fail-open share's),
// and follows SetLimit; a value set is taken as it is.
func TestDefaultMaxTokens(t *testing.T) {
	tier := func(r *portico.Request) string { return r.Identity.ClientKey }
	for _, tc := range []struct {
		name string
		cfg  Config
		set  *Limits
		want int
	}{
		{"large bucket", Config{Limits: Limits{Tokens: 1e6}}, nil, 1024},
		{"small bucket", Config{Limits: Limits{Tokens: 1e6, TokenBurst: 1000}}, nil, 500},
		{"small tier", Config{Limits: Limits{Tokens: 1e6}, Tier: tier, Tiers: map[string]Limits{"free": {Tokens: 600}}}, nil, 300},
		{"fail-open share", Config{Limits: Limits{Tokens: 1e6, TokenBurst: 10_000}, Shared: Shared{Store: newFakeStore(), FailOpen: true, Instances: 10}}, nil, 500},
		{"after SetLimit", Config{Limits: Limits{Tokens: 1e6}}, &Limits{Tokens: 1e6, TokenBurst: 400}, 200},
		{"set", Config{Limits: Limits{Tokens: 1e6, TokenBurst: 1000}, DefaultMaxTokens: 900}, nil, 900},
	} {
		l := mustNew(t, tc.cfg)
		if tc.set != nil {
			if err := l.SetLimit(*tc.set); err != nil {
				t.Fatal(err)
			}
		}
		if got := l.pricing.Load().def; got != tc.want {
			t.Errorf("%s: N_max without MaxOutputTokens = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestReasoningBudgetInNMax: a request without MaxOutputTokens that asks
// for a reasoning budget reserves the default N_max plus the budget (the
// thinking is output, billed and counted by the provider's output limit);
// one with MaxOutputTokens reserves that, which includes the reasoning.
func TestReasoningBudgetInNMax(t *testing.T) {
	l := mustNew(t, Config{Limits: Limits{Tokens: 1e6}})
	msgs := []portico.Message{portico.Text(portico.RoleUser, "hi")}
	for _, tc := range []struct {
		req  portico.Request
		want int
	}{
		{portico.Request{Messages: msgs}, 1024},
		{portico.Request{Messages: msgs, Reasoning: &portico.Reasoning{Budget: 4000}}, 5024},
		{portico.Request{Messages: msgs, Reasoning: &portico.Reasoning{Effort: portico.EffortHigh}}, 5120},
		{portico.Request{Messages: msgs, MaxOutputTokens: 8000, Reasoning: &portico.Reasoning{Budget: 4000}}, 8000},
	} {
		var tk ticket
		if err := l.price(&tc.req, l.pricing.Load(), &tk); err != nil || tk.max != tc.want {
			t.Errorf("price(%+v) = N_max %d, %v; want %d", tc.req.Reasoning, tk.max, err, tc.want)
		}
	}
}
