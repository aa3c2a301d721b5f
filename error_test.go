package portico

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico/internal/errtext"
)

func TestClassOf(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dctx, dcancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer dcancel()
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, OK},
		{"bare", io.EOF, Permanent},
		{"error", &Error{Class: Transient}, Transient},
		{"wrapped", fmt.Errorf("x: %w", &Error{Class: RateLimited}), RateLimited},
		{"joined first wins", errors.Join(&Error{Class: Incompatible}, &Error{Class: Transient}), Incompatible},
		{"canceled", context.Canceled, Canceled},
		{"deadline", context.DeadlineExceeded, Deadline},
		{"wrapped canceled", fmt.Errorf("call: %w", context.Canceled), Canceled},
		{"FromContext canceled", FromContext(ctx), Canceled},
		{"FromContext deadline", FromContext(dctx), Deadline},
		{"Error beats context", &Error{Class: Ambiguous, Err: context.DeadlineExceeded}, Ambiguous},
	}
	for _, tt := range tests {
		if got := ClassOf(tt.err); got != tt.want {
			t.Errorf("%s: ClassOf(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	if err := FromContext(context.Background()); err != nil {
		t.Errorf("FromContext(live ctx) = %v, want nil", err)
	}
	if err := FromContext(ctx); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCanceled) {
		t.Errorf("FromContext(canceled) = %v, want errors.Is context.Canceled and ErrCanceled", err)
	}
}

func TestErrorIsSentinels(t *testing.T) {
	sentinels := map[Class]error{
		Permanent: ErrPermanent, Transient: ErrTransient, RateLimited: ErrRateLimited,
		Incompatible: ErrIncompatible, InvalidResponse: ErrInvalidResponse, Ambiguous: ErrAmbiguous,
		Canceled: ErrCanceled, Deadline: ErrDeadline, Rejected: ErrRejected, Unusable: ErrUnusable,
	}
	for c, s := range sentinels {
		err := fmt.Errorf("wrap: %w", &Error{Class: c})
		for c2, s2 := range sentinels {
			if got, want := errors.Is(err, s2), c == c2; got != want {
				t.Errorf("errors.Is(%v error, %v) = %v, want %v", c, s2, got, want)
			}
		}
		if !errors.Is(err, s) {
			t.Errorf("errors.Is(%v error, own sentinel) = false", c)
		}
	}
	cause := errors.New("cause")
	e := &Error{Class: Transient, Err: cause}
	if !errors.Is(e, cause) {
		t.Errorf("errors.Is(Error, cause) = false, want true through Unwrap")
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Class: RateLimited, Status: 429, Code: "rate_limit_exceeded", Model: "m1",
		RetryAfter: 1500 * time.Millisecond, Reason: "slow down", Err: io.EOF}
	want := "portico: rate_limited status 429 code rate_limit_exceeded model m1 retry-after 1.5s: slow down: EOF"
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&Error{Class: Rejected}).Error(), "portico: rejected"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestClassPredicates(t *testing.T) {
	retryable := map[Class]bool{Transient: true, RateLimited: true}
	fault := map[Class]bool{Transient: true, RateLimited: true, Ambiguous: true, InvalidResponse: true, Unusable: true}
	for c := OK; c <= Unusable; c++ {
		if got := c.Retryable(); got != retryable[c] {
			t.Errorf("%v.Retryable() = %v, want %v", c, got, retryable[c])
		}
		if got := c.RouteFault(); got != fault[c] {
			t.Errorf("%v.RouteFault() = %v, want %v", c, got, fault[c])
		}
	}
	if got, want := Class(200).String(), "Class(200)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestRetryAfterOf(t *testing.T) {
	if got := RetryAfterOf(io.EOF); got != 0 {
		t.Errorf("RetryAfterOf(EOF) = %v, want 0", got)
	}
	if got := RetryAfterOf(fmt.Errorf("x: %w", &Error{Class: RateLimited, RetryAfter: time.Second})); got != time.Second {
		t.Errorf("RetryAfterOf = %v, want 1s", got)
	}
}

func TestClassOfAllocs(t *testing.T) {
	err := error(&Error{Class: Transient, RetryAfter: time.Second})
	if n := testing.AllocsPerRun(100, func() { _ = ClassOf(err); _ = RetryAfterOf(err) }); n != 0 {
		t.Errorf("ClassOf(*Error) allocs = %v, want 0", n)
	}
}

func TestJoin(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	if Join() != nil || Join(nil, nil) != nil {
		t.Errorf("Join of nothing != nil")
	}
	if Join(nil, a) != a {
		t.Errorf("Join(nil, a) = %v, want a itself", Join(nil, a))
	}
	j := Join(a, nil, b)
	if j.Error() != "a; b" || !errors.Is(j, a) || !errors.Is(j, b) {
		t.Errorf("Join(a, b) = %q, want \"a; b\" wrapping both", j)
	}
}

func TestFromContextMessage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, want := FromContext(ctx).Error(), "portico: canceled: context canceled"; got != want {
		t.Errorf("FromContext(canceled) = %q, want %q", got, want)
	}
	cause := errors.New("shutting down")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)
	err := FromContext(ctx)
	if got, want := err.Error(), "portico: canceled: context canceled; shutting down"; got != want || !errors.Is(err, cause) {
		t.Errorf("FromContext(cause) = %q, want %q wrapping the cause", got, want)
	}
}

func TestContractErrors(t *testing.T) {
	if ClassOf(ErrNilRequest) != Permanent || ClassOf(ErrNilResponse) != InvalidResponse {
		t.Errorf("ErrNilRequest, ErrNilResponse classes = %v, %v; want permanent, invalid_response", ClassOf(ErrNilRequest), ClassOf(ErrNilResponse))
	}
}

func TestFromContextLayerTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeoutCause(context.Background(), 0, fmt.Errorf("share spent: %w", ErrLayerTimeout))
	defer cancel()
	<-ctx.Done()
	err := FromContext(ctx)
	if ClassOf(err) != Ambiguous || !errors.Is(err, ErrLayerTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("FromContext(layer timeout) = %v (%v), want ambiguous wrapping the cause and DeadlineExceeded", err, ClassOf(err))
	}
}

// The class is said once: a cause of the same class keeps its fields and
// reason, a cause of another class keeps its class too.
func TestNestedErrorMessage(t *testing.T) {
	inner := &Error{Class: Ambiguous, Model: "m", Reason: "attempt timeout"}
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Class: Ambiguous, Reason: "retry", Err: inner}, "portico: ambiguous: retry: model m: attempt timeout"},
		{&Error{Class: Ambiguous, Err: inner}, "portico: ambiguous model m: attempt timeout"},
		{&Error{Class: Ambiguous, Err: &Error{Class: Ambiguous, Reason: "timeout"}}, "portico: ambiguous: timeout"},
		{&Error{Class: Ambiguous, Reason: "r", Err: ErrAmbiguous}, "portico: ambiguous: r"},
		{&Error{Class: Deadline, Reason: "no time", Err: inner}, "portico: deadline: no time: ambiguous model m: attempt timeout"},
		{&Error{Class: Ambiguous, Err: Join(inner, io.EOF)}, "portico: ambiguous model m: attempt timeout; EOF"},
		// A word that only begins with the class name is not the class.
		{&Error{Class: Canceled, Err: errors.New("portico: canceledx")}, "portico: canceled: canceledx"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestRoundDuration(t *testing.T) {
	for _, tt := range []struct{ d, want time.Duration }{
		{1500213 * time.Microsecond, 1500 * time.Millisecond},
		{250*time.Millisecond + 499*time.Microsecond, 250 * time.Millisecond},
		{1499 * time.Nanosecond, time.Microsecond},
		{300 * time.Nanosecond, 300 * time.Nanosecond},
		{-999 * time.Nanosecond, -999 * time.Nanosecond},
		{999999 * time.Nanosecond, time.Millisecond},
		{0, 0},
		{-1500213 * time.Microsecond, -1500 * time.Millisecond},
	} {
		if got := RoundDuration(tt.d); got != tt.want {
			t.Errorf("RoundDuration(%v) = %v, want %v", tt.d, got, tt.want)
		}
	}
	e := &Error{Class: RateLimited, RetryAfter: 1500213 * time.Microsecond}
	if got, want := e.Error(), "portico: rate_limited retry-after 1.5s"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// UsageOf finds the billed usage when outer layers wrap the error that carries
// it, through Unwrap() error and Unwrap() []error alike.
func TestUsageOf(t *testing.T) {
	u := &Usage{InputTokens: 3}
	inner := &Error{Class: InvalidResponse, Usage: u}
	outer := &Error{Class: Transient, Reason: "retries exhausted", Err: Join(errors.New("x"), fmt.Errorf("w: %w", inner))}
	if got := UsageOf(outer); got != u {
		t.Errorf("UsageOf(wrapped) = %v, want the inner Usage", got)
	}
	if got := UsageOf(&Error{Class: Transient, Err: io.EOF}); got != nil {
		t.Errorf("UsageOf(no usage) = %v, want nil", got)
	}
	if got := UsageOf(nil); got != nil {
		t.Errorf("UsageOf(nil) = %v, want nil", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = UsageOf(outer) }); n != 0 {
		t.Errorf("UsageOf allocs = %v, want 0", n)
	}
}

func TestNewLayerTimeout(t *testing.T) {
	a, b := NewLayerTimeout("a timeout"), NewLayerTimeout("a timeout")
	if a.Error() != "a timeout" || !errors.Is(a, ErrLayerTimeout) || !errors.Is(a, a) || errors.Is(a, b) {
		t.Errorf("NewLayerTimeout: message %q, Is(ErrLayerTimeout) %v, Is(itself) %v, Is(another) %v; want its message, true, true, false",
			a.Error(), errors.Is(a, ErrLayerTimeout), errors.Is(a, a), errors.Is(a, b))
	}
}

// TestIsDeadlineCut: only an Ambiguous or Transient error that matches
// ErrDeadlineCut is a cut of the caller's deadline.
func TestIsDeadlineCut(t *testing.T) {
	cut := fmt.Errorf("share: %w", ErrDeadlineCut)
	for _, tc := range []struct {
		c    Class
		err  error
		want bool
	}{
		{Ambiguous, cut, true},
		{Transient, &Error{Class: Transient, Err: cut}, true},
		{Deadline, cut, false},
		{RateLimited, cut, false},
		{Ambiguous, NewLayerTimeout("attempt timeout"), false},
		{Transient, nil, false},
	} {
		if got := IsDeadlineCut(tc.c, tc.err); got != tc.want {
			t.Errorf("IsDeadlineCut(%v, %v) = %v, want %v", tc.c, tc.err, got, tc.want)
		}
	}
}

// TestIsUnanswered: an unanswered cut (Ambiguous or Transient) and a
// refusal not to be retried (Incompatible) are unanswered failures; the
// mark on another class (the caller's own deadline, a route fault), a cut
// not marked unanswered, and an Incompatible failure not marked are not.
func TestIsUnanswered(t *testing.T) {
	cut := Unanswered(NewLayerTimeout("share timeout"))
	refusal := UnansweredRefusal(errors.New("provider: 503"))
	for _, tc := range []struct {
		c    Class
		err  error
		want bool
	}{
		{Ambiguous, cut, true},
		{Transient, &Error{Class: Transient, Err: cut}, true},
		{Incompatible, &Error{Class: Incompatible, Status: 503, Err: refusal}, true},
		{Incompatible, UnansweredRefusal(nil), true},
		{Deadline, cut, false},
		{Canceled, refusal, false},
		{Unusable, refusal, false},
		{Ambiguous, DeadlineCut(NewLayerTimeout("share timeout")), false},
		{Incompatible, &Error{Class: Incompatible, Status: 400}, false},
		{Incompatible, nil, false},
	} {
		if got := IsUnanswered(tc.c, tc.err); got != tc.want {
			t.Errorf("IsUnanswered(%v, %v) = %v, want %v", tc.c, tc.err, got, tc.want)
		}
	}
}

// TestUnansweredRefusal: a provider's error marked as a refusal not to be
// retried keeps its message and what it matches, and matches ErrUnanswered
// but not ErrDeadlineCut (it is no cut of any deadline).
func TestUnansweredRefusal(t *testing.T) {
	cause := &Error{Class: Transient, Status: 503, Reason: "overloaded"}
	m := UnansweredRefusal(cause)
	var pe *Error
	if m.Error() != cause.Error() || !errors.Is(m, ErrUnanswered) || errors.Is(m, ErrDeadlineCut) || !errors.As(m, &pe) || pe != cause {
		t.Errorf("UnansweredRefusal(%v) = %q, matching ErrUnanswered %v, ErrDeadlineCut %v, reaching its cause %v; want the message, true, false, true",
			cause, m, errors.Is(m, ErrUnanswered), errors.Is(m, ErrDeadlineCut), errors.As(m, &pe))
	}
	if UnansweredRefusal(nil) != ErrUnanswered {
		t.Errorf("UnansweredRefusal(nil) = %v, want ErrUnanswered", UnansweredRefusal(nil))
	}
}

// TestDeadlineCut: a layer timeout marked as a cut keeps its message and
// what it matches, and matches ErrDeadlineCut; the timeout alone does not.
func TestDeadlineCut(t *testing.T) {
	timeout := NewLayerTimeout("group: share timeout")
	cut := DeadlineCut(timeout)
	if cut.Error() != "group: share timeout" || !errors.Is(cut, timeout) || !errors.Is(cut, ErrLayerTimeout) || !errors.Is(cut, ErrDeadlineCut) {
		t.Errorf("DeadlineCut(%v) = %q, matching timeout %v, ErrLayerTimeout %v, ErrDeadlineCut %v; want the message and all three",
			timeout, cut, errors.Is(cut, timeout), errors.Is(cut, ErrLayerTimeout), errors.Is(cut, ErrDeadlineCut))
	}
	if errors.Is(timeout, ErrDeadlineCut) {
		t.Error("the timeout alone matches ErrDeadlineCut")
	}
	if e := FromContext(canceledBy(cut)); ClassOf(e) != Ambiguous || !IsDeadlineCut(ClassOf(e), e) {
		t.Errorf("FromContext of a context ended by the cut = %v, want Ambiguous and a deadline cut", e)
	}
}

func canceledBy(cause error) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return ctx
}

// TestGone: a done context gives the error of a call that sent nothing,
// Canceled or Deadline as the context ended, never Ambiguous (a layer's own
// timeout too: nothing was sent), wrapping the context's error and cause,
// NotSent set; a live one gives nil.
func TestGone(t *testing.T) {
	if err := Gone(context.Background()); err != nil {
		t.Errorf("Gone(live) = %v, want nil", err)
	}
	shutdown := errors.New("shutting down")
	canceled, cancel := context.WithCancelCause(context.Background())
	cancel(shutdown)
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancelExpired()
	layer, cancelLayer := context.WithTimeoutCause(context.Background(), 0, NewLayerTimeout("share spent"))
	defer cancelLayer()
	<-layer.Done()
	for _, c := range []struct {
		name  string
		ctx   context.Context
		class Class
		is    []error
		msg   string
	}{
		{"canceled", canceled, Canceled, []error{context.Canceled, shutdown, ErrCanceled}, "portico: canceled: context canceled; shutting down"},
		{"expired", expired, Deadline, []error{context.DeadlineExceeded, ErrDeadline}, "portico: deadline: context deadline exceeded"},
		{"layer timeout", layer, Deadline, []error{context.DeadlineExceeded, ErrLayerTimeout}, "portico: deadline: context deadline exceeded; share spent"},
	} {
		err := Gone(c.ctx)
		var pe *Error
		if !errors.As(err, &pe) || pe.Class != c.class || !pe.NotSent || err.Error() != c.msg {
			t.Errorf("Gone(%s) = %v (%+v), want class %v, NotSent, %q", c.name, err, pe, c.class, c.msg)
		}
		for _, target := range c.is {
			if !errors.Is(err, target) {
				t.Errorf("Gone(%s) = %v, want it to match %v", c.name, err, target)
			}
		}
	}
}

// TestErrorSaysEachThingOnce: a reason the class or the cause says is left
// out, and so is each part of the cause the message said already; a
// package's name goes with the part it introduces, and a part left out
// leaves its separator to the next.
func TestErrorSaysEachThingOnce(t *testing.T) {
	for _, tt := range []struct {
		err  *Error
		want string
	}{
		{&Error{Class: RateLimited, Status: 429, Reason: "rate limited"}, "portico: rate_limited status 429"},
		{&Error{Class: InvalidResponse, Status: 200, Model: "m", Reason: "malformed response", Err: Join(ErrMalformed, errors.New("openai: SDK error (text withheld)"))},
			"portico: invalid_response status 200 model m: malformed response; openai: SDK error (text withheld)"},
		{&Error{Class: Rejected, Model: "m", Reason: "overloaded", Err: errors.New("ratelimit: overloaded")}, "portico: rejected model m: ratelimit: overloaded"},
		{&Error{Class: Rejected, RefusedBy: CircuitBreaker, Model: "a", Reason: "breaker half-open, probes busy", Err: errors.New("breaker: open")},
			"portico: rejected by breaker model a: breaker half-open, probes busy"},
		{&Error{Class: RateLimited, RefusedBy: ClientLimit, RetryAfter: 1500 * time.Millisecond, Reason: "rate limit: requests", Err: errors.New("ratelimit: rate limited")},
			"portico: rate_limited by client_limit retry-after 1.5s: rate limit: requests"},
		{&Error{Class: Ambiguous, Reason: "timeout after send", Err: Join(errors.New("effect: outcome unknown"), &Error{Class: Ambiguous, Reason: "timeout after send"})},
			"portico: ambiguous: effect: outcome unknown; timeout after send"},
		{&Error{Class: Rejected, RefusedBy: CircuitBreaker, Err: &Error{Class: Rejected, RefusedBy: CircuitBreaker, Model: "a", Reason: "open elsewhere"}},
			"portico: rejected by breaker model a: open elsewhere"},
		{&Error{Class: Transient, Model: "m", Err: &Error{Class: Transient, Model: "m", Reason: "overloaded"}}, "portico: transient model m: overloaded"},
		{&Error{Class: Unusable, Err: errors.New("ratelimit")}, "portico: unusable: ratelimit"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestRefuser(t *testing.T) {
	names := map[Refuser]string{NotRefused: "", ClientLimit: "client_limit", RouteLimit: "route_limit", CircuitBreaker: "breaker",
		Cooldown: "cooldown", Throttle: "throttle", RetryBudget: "retry_budget", SpendBudget: "spend_budget", 200: "Refuser(200)"}
	for r, want := range names {
		if got := r.String(); got != want {
			t.Errorf("Refuser(%d).String() = %q, want %q", r, got, want)
		}
	}
	inner := &Error{Class: RateLimited, RefusedBy: RouteLimit}
	for _, tt := range []struct {
		err  error
		want Refuser
	}{
		{nil, NotRefused},
		{io.EOF, NotRefused},
		{inner, RouteLimit},
		{fmt.Errorf("calling: %w", inner), RouteLimit},
		{&Error{Class: RateLimited, Err: inner}, NotRefused}, // the outer error says who ended the call
	} {
		if got := RefuserOf(tt.err); got != tt.want {
			t.Errorf("RefuserOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// FuzzErrorSaysEachThingOnce: whatever its class, refuser, reason and
// cause, an error's message says no part twice (errtext.Repeated, which
// modeltest.Repeated offers to every layer's tests).
func FuzzErrorSaysEachThingOnce(f *testing.F) {
	f.Add(uint8(RateLimited), uint8(ClientLimit), "rate limit: requests", "ratelimit: rate limited", "rate limited")
	f.Add(uint8(InvalidResponse), uint8(0), "malformed response", "malformed response", "openai: SDK error")
	f.Add(uint8(Rejected), uint8(CircuitBreaker), "breaker open", "breaker: open", "")
	f.Fuzz(func(t *testing.T, class, by uint8, reason, cause, inner string) {
		if strings.Contains(reason, ": ") || strings.Contains(reason, "; ") {
			return // a reason is one part
		}
		err := error(errors.New(cause))
		if inner != "" {
			err = Join(err, &Error{Class: Class(class % 11), Reason: inner})
		}
		e := &Error{Class: Class(class % 11), RefusedBy: Refuser(by % 7), Reason: reason, Err: err}
		if part := errtext.Repeated(e.Error()); part != "" {
			t.Fatalf("%q says %q twice", e.Error(), part)
		}
	})
}
