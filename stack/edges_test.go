package stack

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/throttle"
	"github.com/portico-llm/portico/trace"
	"github.com/portico-llm/portico/validate"
)

// Any duration means what it says: a Deadline of math.MaxInt64 (about 292
// years), from the stack, the request's Contract or the caller's context, is
// no deadline in practice, not an overflow that fails every call at once.
// Through one route, and through a group whose first route fails once
// (retried) then for good (the group moves on). Outside a synctest bubble,
// whose clock reads before the origin of the layers' and hides the
// overflow.
func TestHugeDeadline(t *testing.T) {
	for _, n := range []int{1, 2} {
		var routes []Route
		if n == 2 {
			bad := route("a", modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)), modeltest.Fail(modeltest.StatusError(401))))
			bad.Retry = retry.Config{Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}}
			routes = append(routes, bad)
		}
		good := modeltest.NewFake(modeltest.Answer("ok"))
		routes = append(routes, route("b", good))
		s, err := New(Config{Routes: routes, Deadline: math.MaxInt64})
		if err != nil {
			t.Fatal(err)
		}
		req := hello.Clone()
		req.Contract = &portico.Contract{Deadline: math.MaxInt64}
		ctx, cancel := context.WithTimeout(context.Background(), math.MaxInt64)
		for _, c := range []struct {
			name string
			ctx  context.Context
			req  *portico.Request
		}{
			{"Config.Deadline", context.Background(), hello},
			{"Contract.Deadline", context.Background(), req},
			{"context's", ctx, hello},
		} {
			if resp, err := s.Generate(c.ctx, c.req); err != nil || resp.Text != "ok" {
				t.Errorf("%d routes, %s MaxInt64: Generate = %v, %v, want the answer", n, c.name, resp, err)
			}
		}
		cancel()
	}
}

// A typed nil Model (a nil *modeltest.Fake here; a nil *openai.Model in a
// service) is refused when the stack is built, as a nil one is, not at the
// first request with a nil-pointer panic; and so by every layer's Wrap.
func TestTypedNilModel(t *testing.T) {
	var typed portico.Model = (*modeltest.Fake)(nil)
	for _, routes := range [][]Route{
		{route("a", typed)},
		{route("a", modeltest.NewFake()), route("b", typed)},
	} {
		if s, err := New(Config{Routes: routes}); err == nil || !strings.HasPrefix(err.Error(), "stack: ") {
			t.Errorf("New with a typed nil Model among %d routes = %v, %v, want an error starting with \"stack: \"", len(routes), s, err)
		}
	}
	lim, _ := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: time.Second}})
	tr, _ := trace.New(trace.Config{})
	for name, wrap := range map[string]portico.Middleware{
		"trace.Wrap":        tr.Wrap,
		"trace.WrapAttempt": tr.WrapAttempt,
		"ratelimit":         lim.Wrap,
		"retry":             retry.MustNew(retry.Config{}).Wrap,
		"hedge":             hedge.MustNew(hedge.Config{}).Wrap,
		"breaker":           breaker.MustNew(breaker.Config{}).Wrap,
		"throttle":          throttle.MustNew(throttle.Config{}).Wrap,
		"validate":          validate.MustNew(validate.Config{}).Wrap,
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s of a typed nil Model did not panic", name)
				}
			}()
			wrap(typed)
		}()
	}
}

// A request with no messages is wrong on any route: it fails at once,
// Permanent, and nothing is sent.
func TestNoMessages(t *testing.T) {
	f := modeltest.NewFake()
	s, err := New(Config{Routes: []Route{route("a", f), route("b", f)}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Generate(context.Background(), &portico.Request{Model: "m", MaxOutputTokens: 16})
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class != portico.Permanent || pe.Reason != "no messages" || f.Count() != 0 {
		t.Errorf("Generate(no messages) = %v after %d calls, want Permanent \"no messages\" before any", err, f.Count())
	}
}

// Requests have a size cap, as answers do (the adapters' MaxResponseBytes):
// one above the stack's MaxRequestBytes (64 MiB by default) fails at once,
// Permanent, nothing sent; one above a route's Capabilities.MaxRequestBytes
// is Incompatible there, and the group answers from another route.
func TestMaxRequestBytes(t *testing.T) {
	big := func(n int) *portico.Request { // n bytes of Request.Size
		return &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, strings.Repeat("x", n-len(portico.RoleUser)))}}
	}
	refused := func(err error, class portico.Class) bool {
		var pe *portico.Error
		return errors.As(err, &pe) && pe.Class == class && pe.Reason == "request size"
	}
	notSent := func(err error) bool {
		var pe *portico.Error
		return errors.As(err, &pe) && pe.NotSent
	}

	f := modeltest.NewFake(modeltest.Answer("ok"))
	s, _ := New(Config{Routes: []Route{route("a", f)}})
	if _, err := s.Generate(context.Background(), big(DefaultMaxRequestBytes+1)); !refused(err, portico.Permanent) || !notSent(err) || f.Count() != 0 {
		t.Errorf("default cap, 64 MiB + 1 byte: Generate = %v after %d calls, want Permanent \"request size\", not sent", err, f.Count())
	}
	if resp, err := s.Generate(context.Background(), big(1000)); err != nil || resp.Text != "ok" {
		t.Errorf("default cap, 1000 bytes: Generate = %v, %v, want the answer", resp, err)
	}

	small, other := modeltest.NewFake(modeltest.Answer("small")), modeltest.NewFake(modeltest.Answer("other"))
	a := route("a", small)
	a.Capabilities.MaxRequestBytes = 50
	s, _ = New(Config{Routes: []Route{a, route("b", other)}, MaxRequestBytes: 100})
	if _, err := s.Generate(context.Background(), big(101)); !refused(err, portico.Permanent) || small.Count()+other.Count() != 0 {
		t.Errorf("stack cap 100, 101 bytes: Generate = %v, want Permanent \"request size\" before any route", err)
	}
	if resp, err := s.Generate(context.Background(), big(60)); err != nil || resp.Text != "other" || small.Count() != 0 {
		t.Errorf("route a's cap 50, 60 bytes: Generate = %v, %v after %d calls to a, want b's answer, a not called", resp, err, small.Count())
	}
	if resp, err := s.Generate(context.Background(), big(50)); err != nil || resp.Text != "small" {
		t.Errorf("route a's cap 50, 50 bytes: Generate = %v, %v, want a's answer", resp, err)
	}

	s, _ = New(Config{Routes: []Route{a}, MaxRequestBytes: -1})
	if _, err := s.Generate(context.Background(), big(60)); portico.ClassOf(err) != portico.Incompatible || small.Count() != 1 {
		t.Errorf("one route, cap 50, 60 bytes: Generate = %v after %d calls, want Incompatible (the group's), not sent", err, small.Count())
	}
}
