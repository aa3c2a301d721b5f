package fallback

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// The group's error says NotSent when it called no route: every route
// skipped (unavailable, filtered, no time left) or the caller's context done
// before the first call; a rate limiter outside the group then gives the
// whole reservation back. Once a route was called, it does not, even when
// the route's own error said NotSent after an earlier route was called.
func TestErrorNotSentWhenNoRouteCalled(t *testing.T) {
	unsentPermanent := &portico.Error{Class: portico.Permanent, Reason: "cannot be priced", NotSent: true}
	unsentTransient := &portico.Error{Class: portico.Transient, Reason: "connection refused", NotSent: true}
	tests := []struct {
		name  string
		ctx   func() (context.Context, context.CancelFunc)
		setup func() []portico.Route
		want  bool
		class portico.Class
		calls int // calls to every route together
	}{
		{"all unavailable", live, func() []portico.Route {
			a, b := route(&fake{name: "a"}, portico.Capabilities{}), route(&fake{name: "b"}, portico.Capabilities{})
			a.Health, b.Health = down{}, down{}
			return []portico.Route{a, b}
		}, true, portico.Rejected, 0},
		{"no time for the first route", within(0), func() []portico.Route {
			return []portico.Route{route(&fake{name: "a"}, portico.Capabilities{}), route(&fake{name: "b"}, portico.Capabilities{})}
		}, true, portico.Deadline, 0},
		{"canceled, all unavailable", canceled, func() []portico.Route {
			a := route(&fake{name: "a"}, portico.Capabilities{})
			a.Health = down{}
			return []portico.Route{a}
		}, true, portico.Canceled, 0},
		{"one route called and failed", live, func() []portico.Route {
			a, b := route(&fake{name: "a", err: perr(portico.Transient)}, portico.Capabilities{}), route(&fake{name: "b"}, portico.Capabilities{})
			b.Health = down{}
			return []portico.Route{a, b}
		}, false, portico.Transient, 1},
		{"stopped at an unsent error after a skip", live, func() []portico.Route {
			a, b := route(&fake{name: "a"}, portico.Capabilities{}), route(&fake{name: "b", err: unsentPermanent}, portico.Capabilities{})
			a.Health = down{}
			return []portico.Route{a, b}
		}, true, portico.Permanent, 1},
		{"every route called refused without sending", live, func() []portico.Route {
			refused := &portico.Error{Class: portico.Rejected, Reason: "throttled", NotSent: true}
			return []portico.Route{route(&fake{name: "a", err: refused}, portico.Capabilities{}), route(&fake{name: "b", err: unsentTransient}, portico.Capabilities{})}
		}, true, portico.Transient, 2},
		{"a refusal after a call", live, func() []portico.Route {
			refused := &portico.Error{Class: portico.Rejected, Reason: "throttled", NotSent: true}
			return []portico.Route{route(&fake{name: "a", err: &portico.Error{Class: portico.Incompatible, Status: 400}}, portico.Capabilities{}),
				route(&fake{name: "b", err: refused}, portico.Capabilities{})}
		}, false, portico.Rejected, 2},
		{"stopped at an unsent error after a call", live, func() []portico.Route {
			a, b := route(&fake{name: "a", err: perr(portico.Transient)}, portico.Capabilities{}), route(&fake{name: "b", err: unsentPermanent}, portico.Capabilities{})
			return []portico.Route{a, b}
		}, false, portico.Permanent, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				routes := tt.setup()
				g := MustNew(Config{Routes: routes})
				ctx, cancel := tt.ctx()
				defer cancel()
				_, err := g.Generate(ctx, simple)
				var pe *portico.Error
				if !errors.As(err, &pe) || pe.NotSent != tt.want || pe.Class != tt.class {
					t.Errorf("err = %v (NotSent %v), want class %v with NotSent %v", err, pe != nil && pe.NotSent, tt.class, tt.want)
				}
				calls := 0
				for _, r := range routes {
					calls += r.Model.(*fake).n()
				}
				if calls != tt.calls {
					t.Errorf("route calls = %d, want %d", calls, tt.calls)
				}
			})
		})
	}
}

func live() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }

func canceled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}

func within(d time.Duration) func() (context.Context, context.CancelFunc) {
	return func() (context.Context, context.CancelFunc) { return context.WithTimeout(context.Background(), d) }
}
