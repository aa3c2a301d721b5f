package stack

import (
	"context"
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
