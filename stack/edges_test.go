package stack

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
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
