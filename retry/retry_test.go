package retry

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var okResp = &portico.Response{Text: "ok", FinishReason: portico.FinishStop}

func transient() error {
	return &portico.Error{Class: portico.Transient, Status: 503, Reason: "overloaded"}
}

// counting is a Model that plays fn for call n (from 0) and counts calls.
type counting struct {
	n  atomic.Int64
	fn func(ctx context.Context, n int, req *portico.Request) (*portico.Response, error)
}

func (c *counting) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	n := int(c.n.Add(1)) - 1
	return c.fn(ctx, n, req)
}

func (c *counting) calls() int { return int(c.n.Load()) }

// failing returns a Model that always fails with err.
func failing(err error) *counting {
	return &counting{fn: func(context.Context, int, *portico.Request) (*portico.Response, error) { return nil, err }}
}

func mustNew(t *testing.T, cfg Config) *Retrier {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	return r
}

var userReq = &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}

// New refuses each value that can only be a mistake with a message naming
// the field.
func TestNewRejectsBadConfig(t *testing.T) {
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{MaxAttempts: -1}, "retry: negative Config.MaxAttempts (-1)"},
		{Config{Backoff: Backoff{BaseDelay: -1}}, "retry: negative Config.Backoff.BaseDelay (-1ns)"},
		{Config{Backoff: Backoff{MaxDelay: -time.Second}}, "retry: negative Config.Backoff.MaxDelay (-1s)"},
		{Config{Backoff: Backoff{BaseDelay: time.Second, MaxDelay: time.Millisecond}}, "retry: Config.Backoff.MaxDelay 1ms below BaseDelay 1s"},
		{Config{Backoff: Backoff{MaxRetryAfter: -1}}, "retry: negative Config.Backoff.MaxRetryAfter (-1ns)"},
		{Config{Backoff: Backoff{Schedule: Immediate + 1}}, "retry: unknown Config.Backoff.Schedule Schedule(4)"},
		{Config{MinAttemptTime: -1}, "retry: negative Config.MinAttemptTime (-1ns)"},
		{Config{Timeouts: Timeouts{Attempt: -1}}, "retry: negative Config.Timeouts.Attempt (-1ns)"},
		{Config{Timeouts: Timeouts{FirstChunk: -1}}, "retry: negative Config.Timeouts.FirstChunk (-1ns)"},
		{Config{Timeouts: Timeouts{ChunkGap: -time.Millisecond}}, "retry: negative Config.Timeouts.ChunkGap (-1ms)"},
		{Config{Budget: Budget{Ratio: -0.1}}, "retry: negative Config.Budget.Ratio"},
		{Config{Budget: Budget{Ratio: math.Inf(1)}}, "retry: Config.Budget.Ratio is not a finite number"},
		{Config{Budget: Budget{Burst: -1}}, "retry: negative Config.Budget.Burst"},
		{Config{Budget: Budget{Burst: maxBurst + 1}}, "retry: Config.Budget.Burst above 4611686018"},
		{Config{Budget: Budget{MaxKeys: -1}}, "retry: negative Config.Budget.MaxKeys"},
		{Config{Budget: Budget{DestinationRatio: -0.1}}, "retry: negative Config.Budget.DestinationRatio"},
		{Config{Budget: Budget{DestinationBurst: -1}}, "retry: negative Config.Budget.DestinationBurst"},
		{Config{Budget: Budget{DestinationRatio: math.NaN()}}, "retry: Config.Budget.DestinationRatio is not a finite number"},
		{Config{Timeouts: Timeouts{MinRate: -1}}, "retry: Config.Timeouts.MinRate is not a finite rate >= 0 (-1)"},
		{Config{Timeouts: Timeouts{MinRate: math.NaN()}, MaxAttempts: -1}, "retry: Config.Timeouts.MinRate is not a finite rate >= 0 (NaN)"},
		{Config{Timeouts: Timeouts{RateWindow: time.Second}, MaxAttempts: -1}, "retry: Config.Timeouts.RateWindow set without MinRate"},
		{Config{MaxAttempts: -1, Backoff: Backoff{Schedule: Immediate + 1}}, "retry: negative Config.MaxAttempts (-1)"},
	}
	for _, tt := range bad {
		if r, err := New(tt.cfg); r != nil || err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, %v; want nil, %q", tt.cfg, r, err, tt.want)
		}
	}
	r := mustNew(t, Config{})
	if r.maxAttempts != 3 || r.base != DefaultBaseDelay || r.max != DefaultMaxDelay || r.budget == nil {
		t.Errorf("New(Config{}) = attempts %d base %v max %v budget %v, want defaults", r.maxAttempts, r.base, r.max, r.budget != nil)
	}
	if got := r.BudgetLevel("m", "c"); got != DefaultBudgetBurst {
		t.Errorf("BudgetLevel of a new key = %v, want %v", got, DefaultBudgetBurst)
	}
	// The destination's budget: the client's ratio and a burst of 100, or the
	// client's burst when larger; none with ClientOnly.
	for _, tt := range []struct {
		b                Budget
		deposit, dcap    int64
		clientOnly, none bool
	}{
		{Budget{}, unit / 10, DefaultDestinationBurst * unit, false, false},
		{Budget{Ratio: 0.25, Burst: 500}, unit / 4, 500 * unit, false, false},
		{Budget{Ratio: 0.25, DestinationRatio: 0.05, DestinationBurst: 7}, unit / 20, 7 * unit, false, false},
		{Budget{NoRefill: true, DestinationRatio: 0.5}, 0, DefaultDestinationBurst * unit, false, false},
		{Budget{ClientOnly: true}, 0, 0, true, false},
		{Budget{Off: true}, 0, 0, false, true},
	} {
		r := mustNew(t, Config{Budget: tt.b})
		switch {
		case tt.none:
			if r.budget != nil || r.dests != nil {
				t.Errorf("Budget %+v: budgets kept, want none", tt.b)
			}
		case tt.clientOnly:
			if r.budget == nil || r.dests != nil {
				t.Errorf("Budget %+v: client budgets %v, destination budgets %v; want only client ones", tt.b, r.budget != nil, r.dests != nil)
			}
		case r.dests == nil || r.dests.depositAmt != tt.deposit || r.dests.capacity != tt.dcap:
			t.Errorf("Budget %+v: destination budget = %v, want deposit %d capacity %d", tt.b, r.dests, tt.deposit, tt.dcap)
		}
	}
}

func TestWhichClassesAreRetried(t *testing.T) {
	tests := []struct {
		class     portico.Class
		reqNo     bool // Request.NoAmbiguousRetry
		routeNo   bool // Config.NoAmbiguousRetry
		invalid   bool // RetryInvalidResponse
		wantCalls int
	}{
		{portico.Transient, true, true, false, 3},
		{portico.RateLimited, true, true, false, 3},
		{portico.Ambiguous, false, false, false, 3}, // the default
		{portico.Ambiguous, true, false, false, 1},
		{portico.Ambiguous, false, true, false, 1},
		{portico.InvalidResponse, false, false, false, 1},
		{portico.InvalidResponse, false, false, true, 3},
		{portico.Permanent, false, false, true, 1},
		{portico.Incompatible, false, false, true, 1},
		{portico.Unusable, false, false, true, 1},
		{portico.Canceled, false, false, true, 1},
		{portico.Deadline, false, false, true, 1},
		{portico.Rejected, false, false, true, 1},
	}
	for _, tt := range tests {
		base := failing(&portico.Error{Class: tt.class})
		r := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, RetryInvalidResponse: tt.invalid, NoAmbiguousRetry: tt.routeNo})
		req := userReq.Clone()
		req.NoAmbiguousRetry = tt.reqNo
		_, err := r.Wrap(base).Generate(context.Background(), req)
		if got := base.calls(); got != tt.wantCalls {
			t.Errorf("class %v NoAmbiguousRetry request %v route %v, retryInvalid %v: calls = %d, want %d",
				tt.class, tt.reqNo, tt.routeNo, tt.invalid, got, tt.wantCalls)
		}
		if got := portico.ClassOf(err); got != tt.class {
			t.Errorf("class %v: ClassOf(err) = %v, want %v", tt.class, got, tt.class)
		}
		if tt.wantCalls == 3 && !errors.Is(err, ErrAttemptsExhausted) {
			t.Errorf("class %v: errors.Is(err, ErrAttemptsExhausted) = false, want true", tt.class)
		}
	}
	// An unclassified error is Permanent: never retried.
	plain := failing(errors.New("boom"))
	mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}}).Wrap(plain).Generate(context.Background(), userReq)
	if plain.calls() != 1 {
		t.Errorf("plain error: calls = %d, want 1", plain.calls())
	}
}

func TestExhaustedErrorKeepsFieldsAndCauses(t *testing.T) {
	first := &portico.Error{Class: portico.Transient, Status: 502}
	last := &portico.Error{Class: portico.RateLimited, Status: 429, Code: "rate_limit_exceeded", RetryAfter: time.Millisecond}
	base := &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
		if n == 0 {
			return nil, first
		}
		return nil, last
	}}
	r := mustNew(t, Config{MaxAttempts: 2, Backoff: Backoff{Schedule: Immediate}})
	synctest.Test(t, func(t *testing.T) {
		_, err := r.Wrap(base).Generate(context.Background(), userReq)
		var pe *portico.Error
		if !errors.As(err, &pe) {
			t.Fatalf("errors.As(%v, *portico.Error) = false", err)
		}
		if pe.Class != portico.RateLimited || pe.Status != 429 || pe.Code != "rate_limit_exceeded" || pe.RetryAfter != time.Millisecond {
			t.Errorf("surfaced error = %+v, want the last attempt's class, status, code and hint", pe)
		}
		if !errors.Is(err, first) || !errors.Is(err, last) || !errors.Is(err, ErrAttemptsExhausted) {
			t.Errorf("errors.Is(err, each attempt's error and ErrAttemptsExhausted) = %v %v %v, want all true",
				errors.Is(err, first), errors.Is(err, last), errors.Is(err, ErrAttemptsExhausted))
		}
		if n, m := occurrences(err, first), occurrences(err, last); n != 1 || m != 1 {
			t.Errorf("each attempt's error in the tree: first %d times, last %d times, want once each", n, m)
		}
	})
}

// occurrences counts how often target appears in err's tree.
func occurrences(err, target error) int {
	if err == nil {
		return 0
	}
	n := 0
	if err == target {
		n++
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		n += occurrences(u.Unwrap(), target)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			n += occurrences(e, target)
		}
	}
	return n
}

// Seed 001: three nested layers of 3 attempts each make 27 calls for one
// always-failing request; one layer makes 3.
func TestNestedLayersMultiply(t *testing.T) {
	for _, layers := range []int{1, 2, 3} {
		base := failing(transient())
		var m portico.Model = base
		for range layers {
			m = mustNew(t, Config{MaxAttempts: 3, Budget: Budget{Off: true}, Backoff: Backoff{Schedule: Immediate}}).Wrap(m)
		}
		_, err := m.Generate(context.Background(), userReq)
		want := 1
		for range layers {
			want *= 3
		}
		if got := base.calls(); got != want {
			t.Errorf("%d nested layers: calls = %d, want %d", layers, got, want)
		}
		if !errors.Is(err, portico.ErrTransient) {
			t.Errorf("%d nested layers: err = %v, want transient", layers, err)
		}
	}
}

// Seed 001: a budget of 20 retries without refill over 100 always-failing
// requests yields exactly 120 attempts, against 300 without a budget.
func TestBudgetWithoutRefill(t *testing.T) {
	var exhausted []int
	obs := observerFunc(func(_ context.Context, e portico.Event) {
		if e.Kind == portico.EventBudgetExhausted {
			exhausted = append(exhausted, e.Attempt)
		}
	})
	ctx := portico.ContextWithObserver(context.Background(), obs)
	for _, tt := range []struct {
		budget Budget
		want   int
	}{
		{Budget{NoRefill: true, Burst: 20}, 120},
		{Budget{Off: true}, 300},
	} {
		exhausted = nil
		base := failing(transient())
		m := mustNew(t, Config{MaxAttempts: 3, Budget: tt.budget, Backoff: Backoff{Schedule: Immediate}}).Wrap(base)
		budgetErrs := 0
		for range 100 {
			_, err := m.Generate(ctx, userReq)
			if errors.Is(err, ErrBudgetExhausted) {
				budgetErrs++
				if !errors.Is(err, portico.ErrTransient) {
					t.Errorf("budget error %v: want it to keep the class transient", err)
				}
			}
		}
		if got := base.calls(); got != tt.want {
			t.Errorf("budget %+v: attempts over 100 failing requests = %d, want %d", tt.budget, got, tt.want)
		}
		if tt.want == 120 && (budgetErrs != 90 || len(exhausted) != 90) {
			// 10 requests retried twice, then 90 found the bucket empty at their first retry.
			t.Errorf("budget %+v: budget errors = %d, events = %d, want 90 and 90", tt.budget, budgetErrs, len(exhausted))
		}
	}
}

// The default 10% budget: over n failing requests, retries <= burst + 0.1*n.
func TestBudgetRatioBound(t *testing.T) {
	base := failing(transient())
	m := mustNew(t, Config{MaxAttempts: 5, Backoff: Backoff{Schedule: Immediate}}).Wrap(base)
	const n = 1000
	for range n {
		m.Generate(context.Background(), userReq)
	}
	retries := base.calls() - n
	// The bucket starts full at 10, so the first request's 0.1 is lost to the
	// cap; the other 999 deposit 99.9: 109 whole retries, within the bound
	// burst + ratio*n = 110.
	if want := 109; retries != want {
		t.Errorf("retries over %d failing requests = %d, want %d", n, retries, want)
	}
}

type observerFunc func(context.Context, portico.Event)

func (f observerFunc) Observe(ctx context.Context, e portico.Event) { f(ctx, e) }

func TestAttemptVisibleInContextAndHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []portico.Attempt
		base := &counting{fn: func(ctx context.Context, n int, _ *portico.Request) (*portico.Response, error) {
			seen = append(seen, portico.AttemptFromContext(ctx))
			if n < 2 {
				return nil, transient()
			}
			return okResp, nil
		}}
		var infos []Info
		var events []portico.Event
		ctx := portico.ContextWithObserver(context.Background(), observerFunc(func(_ context.Context, e portico.Event) {
			events = append(events, e)
		}))
		r := mustNew(t, Config{OnRetry: func(i Info) { infos = append(infos, i) }, Backoff: Backoff{Schedule: Exponential, BaseDelay: 10 * time.Millisecond}})
		req := userReq.Clone()
		req.Identity.ClientKey = "alice"
		resp, err := r.Wrap(base).Generate(ctx, req)
		if err != nil || resp != okResp {
			t.Fatalf("Generate = %v, %v, want okResp", resp, err)
		}
		if len(seen) != 3 || seen[0] != (portico.Attempt{}) || seen[1].Index != 1 || seen[2].Index != 2 ||
			seen[1].ID == "" || seen[2].ID == "" || seen[1].ID == seen[2].ID {
			t.Errorf("attempts seen = %+v, want index 0 without id, then 1 and 2 with distinct ids", seen)
		}
		if len(infos) != 2 {
			t.Fatalf("OnRetry calls = %d, want 2", len(infos))
		}
		for k, want := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond} {
			in := infos[k]
			if in.Attempt != k+1 || in.Class != portico.Transient || in.Delay != want || in.RetryAfter ||
				in.Destination != "m" || in.ClientKey != "alice" || !errors.Is(in.Err, portico.ErrTransient) {
				t.Errorf("OnRetry #%d = %+v, want attempt %d transient delay %v for m/alice", k, in, k+1, want)
			}
			e := events[k]
			if e.Kind != portico.EventRetry || e.Attempt != k+1 || e.Class != portico.Transient || e.Delay != want || e.Route != "m" {
				t.Errorf("event #%d = %+v, want retry attempt %d delay %v", k, e, k+1, want)
			}
		}
	})
}

func TestRetryAfterPrecedence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limited := &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: 3 * time.Second}
		var at []time.Duration
		start := time.Now()
		base := &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
			at = append(at, time.Since(start))
			if n == 0 {
				return nil, limited
			}
			return okResp, nil
		}}
		var info Info
		// The backoff alone would wait at most 10 ms; the hint says 3 s.
		r := mustNew(t, Config{OnRetry: func(i Info) { info = i }, Backoff: Backoff{BaseDelay: 10 * time.Millisecond}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := r.Wrap(base).Generate(ctx, userReq); err != nil {
			t.Fatalf("Generate = %v, want success", err)
		}
		if len(at) != 2 || at[1] != 3*time.Second {
			t.Errorf("attempt times = %v, want [0s 3s]", at)
		}
		if !info.RetryAfter || info.Delay != 3*time.Second || info.Class != portico.RateLimited {
			t.Errorf("OnRetry = %+v, want the 3s Retry-After hint", info)
		}
	})
}

func TestRetryAfterBeyondDeadline(t *testing.T) {
	for _, tt := range []struct {
		name     string
		hint     time.Duration
		deadline time.Duration
		maxHint  time.Duration
	}{
		{"beyond deadline", 5 * time.Second, 2 * time.Second, 0},
		{"beyond MaxRetryAfter", 2 * time.Minute, 0, 0},
		{"beyond configured MaxRetryAfter", 2 * time.Second, 0, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				limited := &portico.Error{Class: portico.RateLimited, Status: 429, Code: "rate_limit_exceeded", RetryAfter: tt.hint}
				base := failing(limited)
				r := mustNew(t, Config{Backoff: Backoff{MaxRetryAfter: tt.maxHint}})
				ctx := context.Background()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				start := time.Now()
				_, err := r.Wrap(base).Generate(ctx, userReq)
				if base.calls() != 1 || time.Since(start) != 0 {
					t.Errorf("calls = %d after %v, want 1 and an immediate end", base.calls(), time.Since(start))
				}
				var pe *portico.Error
				if !errors.As(err, &pe) || pe.Class != portico.RateLimited || pe.RetryAfter != tt.hint || pe.Status != 429 {
					t.Errorf("err = %v, want rate_limited with the %v hint", err, tt.hint)
				}
				if !errors.Is(err, ErrRetryAfterTooLong) || !errors.Is(err, limited) {
					t.Errorf("errors.Is(err, ErrRetryAfterTooLong / the 429) = %v / %v, want true", errors.Is(err, ErrRetryAfterTooLong), errors.Is(err, limited))
				}
			})
		})
	}
}

// The caller's cancellation during a backoff wait ends the call at once, with
// no further attempt.
func TestCancellationDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := failing(transient())
		r := mustNew(t, Config{Backoff: Backoff{Schedule: Exponential, BaseDelay: time.Second}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		start := time.Now()
		go func() {
			_, err := r.Wrap(base).Generate(ctx, userReq)
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		cancel()
		err := <-done
		if base.calls() != 1 || time.Since(start) != 300*time.Millisecond {
			t.Errorf("calls = %d, ended after %v, want 1 call and the end at the cancel (300ms)", base.calls(), time.Since(start))
		}
		if portico.ClassOf(err) != portico.Canceled || !errors.Is(err, context.Canceled) || !errors.Is(err, portico.ErrTransient) {
			t.Errorf("err = %v, want canceled wrapping context.Canceled and the last attempt's error", err)
		}
	})
}

// Cancellation during an attempt: the attempt's canceled error is final.
func TestCancellationDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &counting{fn: func(ctx context.Context, _ int, _ *portico.Request) (*portico.Response, error) {
			<-ctx.Done()
			return nil, portico.FromContext(ctx)
		}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		_, err := mustNew(t, Config{}).Wrap(base).Generate(ctx, userReq)
		if base.calls() != 1 || portico.ClassOf(err) != portico.Canceled {
			t.Errorf("calls = %d, class %v, want 1 and canceled", base.calls(), portico.ClassOf(err))
		}
	})
}

// slowFail fails with a transient error after d, or earlier with the context's.
func slowFail(d time.Duration) *counting {
	return &counting{fn: func(ctx context.Context, _ int, _ *portico.Request) (*portico.Response, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, portico.FromContext(ctx)
		case <-t.C:
			return nil, transient()
		}
	}}
}

// Seed 001's 600 ms example: attempts of at most 200 ms, waits of 50 and
// 100 ms, a 600 ms deadline. After two failures and two waits 550 ms are
// spent: the third attempt gets at most 50 ms, or, when it needs more, is not
// started (and its wait not begun).
func TestDeadline600ms(t *testing.T) {
	t.Run("third attempt gets 50ms", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var starts, ends []time.Duration
			start := time.Now()
			inner := slowFail(200 * time.Millisecond)
			base := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
				starts = append(starts, time.Since(start))
				resp, err := inner.Generate(ctx, req)
				ends = append(ends, time.Since(start))
				return resp, err
			})
			r := mustNew(t, Config{Backoff: Backoff{Schedule: Exponential, BaseDelay: 50 * time.Millisecond}})
			ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
			defer cancel()
			_, err := r.Wrap(base).Generate(ctx, userReq)
			ms := time.Millisecond
			wantStarts := []time.Duration{0, 250 * ms, 550 * ms}
			wantEnds := []time.Duration{200 * ms, 450 * ms, 600 * ms}
			if !equal(starts, wantStarts) || !equal(ends, wantEnds) {
				t.Errorf("attempts started %v ended %v, want %v and %v", starts, ends, wantStarts, wantEnds)
			}
			if got := ends[2] - starts[2]; got > 50*ms {
				t.Errorf("third attempt ran %v, want at most 50ms", got)
			}
			if portico.ClassOf(err) != portico.Deadline {
				t.Errorf("err = %v, want deadline", err)
			}
		})
	})
	// An attempt never gets more time than remains: with a 200 ms
	// Timeouts.Attempt and streaming timeouts too, each attempt's context ends at
	// min(start + 200 ms, 600 ms), so the third, started at 550 ms, has 50 ms.
	for _, stream := range []bool{false, true} {
		name := "attempt timeout capped by the deadline"
		if stream {
			name += ", streamed"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var left []time.Duration
				inner := slowFail(200 * time.Millisecond)
				base := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
					dl, ok := ctx.Deadline()
					if !ok {
						t.Errorf("attempt context without a deadline")
					}
					left = append(left, time.Until(dl))
					return inner.Generate(ctx, req)
				})
				r := mustNew(t, Config{Backoff: Backoff{Schedule: Exponential, BaseDelay: 50 * time.Millisecond}, Timeouts: Timeouts{Attempt: 200 * time.Millisecond, FirstChunk: time.Second, ChunkGap: time.Second}})
				ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
				defer cancel()
				req := userReq.Clone()
				if stream {
					req.OnChunk = func(portico.Chunk) error { return nil }
				}
				start := time.Now()
				_, err := r.Wrap(base).Generate(ctx, req)
				ms := time.Millisecond
				if want := []time.Duration{200 * ms, 200 * ms, 50 * ms}; !equal(left, want) {
					t.Errorf("time each attempt's context allowed = %v, want %v", left, want)
				}
				if time.Since(start) != 600*ms || portico.ClassOf(err) != portico.Deadline {
					t.Errorf("ended at %v with %v, want at 600ms with a deadline error", time.Since(start), err)
				}
			})
		})
	}
	t.Run("third attempt not started", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := slowFail(200 * time.Millisecond)
			r := mustNew(t, Config{MinAttemptTime: 100 * time.Millisecond, Backoff: Backoff{Schedule: Exponential, BaseDelay: 50 * time.Millisecond}})
			ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := r.Wrap(base).Generate(ctx, userReq)
			// At 450 ms, a 100 ms wait would leave 50 ms < 100 ms: stop at once.
			if base.calls() != 2 || time.Since(start) != 450*time.Millisecond {
				t.Errorf("calls = %d, ended at %v, want 2 and 450ms", base.calls(), time.Since(start))
			}
			var pe *portico.Error
			if !errors.As(err, &pe) || pe.Class != portico.Deadline || !errors.Is(err, ErrNoTimeLeft) || pe.RetryAfter != 100*time.Millisecond {
				t.Errorf("err = %v, want deadline, ErrNoTimeLeft, carrying the 100ms wait", err)
			}
			if !errors.Is(err, portico.ErrDeadline) || !errors.Is(err, portico.ErrTransient) {
				t.Errorf("err = %v, want it to match ErrDeadline and wrap the transient cause", err)
			}
		})
	})
	t.Run("first attempt not started", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := slowFail(200 * time.Millisecond)
			r := mustNew(t, Config{MinAttemptTime: time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
			defer cancel()
			_, err := r.Wrap(base).Generate(ctx, userReq)
			if base.calls() != 0 || !errors.Is(err, ErrNoTimeLeft) || portico.ClassOf(err) != portico.Deadline {
				t.Errorf("calls = %d, err = %v, want 0 and a deadline ErrNoTimeLeft", base.calls(), err)
			}
		})
	})
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hung atomic.Int64
		base := &counting{fn: func(ctx context.Context, n int, _ *portico.Request) (*portico.Response, error) {
			if n == 0 {
				hung.Add(1)
				<-ctx.Done() // a hung attempt
				return nil, portico.FromContext(ctx)
			}
			return okResp, nil
		}}
		for _, no := range []bool{false, true} {
			base.n.Store(0)
			r := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{Attempt: time.Second}})
			req := userReq.Clone()
			req.NoAmbiguousRetry = no
			start := time.Now()
			resp, err := r.Wrap(base).Generate(context.Background(), req)
			if !no {
				if err != nil || resp != okResp || base.calls() != 2 || time.Since(start) != time.Second {
					t.Errorf("default: Generate = %v, %v after %d calls, %v; want success on the 2nd call after 1s", resp, err, base.calls(), time.Since(start))
				}
				continue
			}
			if base.calls() != 1 || portico.ClassOf(err) != portico.Ambiguous || !errors.Is(err, ErrAttemptTimeout) {
				t.Errorf("NoAmbiguousRetry: calls %d err %v, want 1 call, ambiguous ErrAttemptTimeout", base.calls(), err)
			}
		}
	})
}

// Retries run concurrently without races and share one budget per key.
func TestConcurrentBudget(t *testing.T) {
	base := failing(transient())
	m := mustNew(t, Config{Budget: Budget{NoRefill: true, Burst: 50}, Backoff: Backoff{Schedule: Immediate}}).Wrap(base)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				m.Generate(context.Background(), userReq)
			}
		})
	}
	wg.Wait()
	if got := base.calls(); got != 850 {
		t.Errorf("attempts = %d, want 800 + 50", got)
	}
}

func TestHappyPathAllocs(t *testing.T) {
	base := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return okResp, nil })
	ctx := context.Background()
	for _, cfg := range []Config{{}, {Budget: Budget{Off: true}}, {MinAttemptTime: time.Second}} {
		m := mustNew(t, cfg).Wrap(base)
		req := userReq.Clone()
		req.Identity.ClientKey = "alice"
		m.Generate(ctx, req) // creates the key
		if got := testing.AllocsPerRun(1000, func() { m.Generate(ctx, req) }); got != 0 {
			t.Errorf("config %+v: allocs per first-try success = %v, want 0", cfg, got)
		}
	}
}

// A nil request fails Permanent without reaching the wrapped Model, as in the
// other layers, instead of a nil dereference.
func TestNilRequest(t *testing.T) {
	base := failing(transient())
	resp, err := mustNew(t, Config{}).Wrap(base).Generate(context.Background(), nil)
	if resp != nil || !errors.Is(err, portico.ErrNilRequest) || portico.ClassOf(err) != portico.Permanent || base.calls() != 0 {
		t.Errorf("Generate(nil request) = (%v, %v) after %d calls, want a permanent error and no call", resp, err, base.calls())
	}
}

// The retry layer's timeout sentinels mark a layer's own timeout, so that
// adapters tell it from the caller's cancel.
func TestTimeoutSentinelsAreLayerTimeouts(t *testing.T) {
	for _, e := range []error{ErrAttemptTimeout, ErrFirstChunkTimeout, ErrChunkGapTimeout} {
		if !errors.Is(e, portico.ErrLayerTimeout) || !errors.Is(e, e) || errors.Is(e, ErrBudgetExhausted) {
			t.Errorf("errors.Is(%v, ErrLayerTimeout / itself / another) wrong", e)
		}
	}
	if errors.Is(ErrAttemptTimeout, ErrFirstChunkTimeout) {
		t.Errorf("errors.Is(ErrAttemptTimeout, ErrFirstChunkTimeout) = true, want distinct sentinels")
	}
}

// A wait the context caps (portico.ContextWithMaxWait: a fallback group that
// has another route) is taken in place only up to the cap: a longer
// Retry-After ends the call at once with the hint, a shorter one is waited
// and the attempt made. Backoff waits without a hint are not capped.
func TestMaxWaitCapsRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name      string
		err       *portico.Error
		wantCalls int
		wantTime  time.Duration
	}{
		{"429 beyond the cap", &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: 5 * time.Second}, 1, 0},
		{"503 beyond the cap", &portico.Error{Class: portico.Transient, Status: 503, RetryAfter: 2 * time.Second}, 1, 0},
		{"429 within the cap", &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: 500 * time.Millisecond}, 3, time.Second},
		{"no hint: backoff", &portico.Error{Class: portico.RateLimited, Status: 429}, 3, 3 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := failing(tt.err)
				r := mustNew(t, Config{Backoff: Backoff{Schedule: Exponential, BaseDelay: time.Second, MaxDelay: 2 * time.Second}})
				ctx := portico.ContextWithMaxWait(context.Background(), 500*time.Millisecond)
				start := time.Now()
				_, err := r.Wrap(base).Generate(ctx, userReq)
				if base.calls() != tt.wantCalls || time.Since(start) != tt.wantTime {
					t.Errorf("calls = %d after %v, want %d after %v", base.calls(), time.Since(start), tt.wantCalls, tt.wantTime)
				}
				var pe *portico.Error
				if !errors.As(err, &pe) || pe.RetryAfter != tt.err.RetryAfter || pe.Status != tt.err.Status {
					t.Fatalf("err = %v, want the last attempt's status and hint", err)
				}
				if tt.wantCalls == 1 && (pe.Class != portico.RateLimited || !errors.Is(err, ErrRetryAfterTooLong) || !errors.Is(err, tt.err) || pe.NotSent) {
					t.Errorf("err = %v (NotSent %v), want rate_limited, ErrRetryAfterTooLong wrapping the attempt's error, sent", err, pe.NotSent)
				}
			})
		})
	}
}

// Each Schedule is named, and a value past Immediate says its number.
func TestScheduleString(t *testing.T) {
	for s, want := range map[Schedule]string{FullJitter: "full_jitter", DecorrelatedJitter: "decorrelated_jitter",
		Exponential: "exponential", Immediate: "immediate", Immediate + 1: "Schedule(4)"} {
		if got := s.String(); got != want {
			t.Errorf("Schedule(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}
