package fallback

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/rank"
)

// TestHedgedClear: whatever a raced request went through (an answer, hops,
// hedges that won or lost, more attempts than the plan's buffer holds, a
// failure that moved on, a cooldown, a request wrong on any route, every
// route failing, a Policy's order, a MaxCost, a deadline), the state it
// leaves in its Group's slot is, field by field, the state of a new slot,
// and the slot is free: the next request starts from nothing of it.
func TestHedgedClear(t *testing.T) {
	fail := func(err *portico.Error) *modeltest.Fake {
		return modeltest.NewFake(modeltest.Outcome{Err: err, Latency: ms})
	}
	caps := portico.Capabilities{OutputPrice: 1, ContextWindow: 1000}
	costly := &portico.Request{Messages: idem.Messages, MaxOutputTokens: 10, Contract: &portico.Contract{MaxCost: 1000, Deadline: time.Minute}}
	wrong := &portico.Request{Messages: idem.Messages, MaxOutputTokens: -1}
	for _, c := range []struct {
		name   string
		routes func() []portico.Route
		policy rank.Policy
		max    int
		req    *portico.Request
		ok     bool
	}{
		{"answer", func() []portico.Route { return []portico.Route{named("a", after("a", ms)), named("b", after("b", ms))} }, nil, 0, idem, true},
		{"hedge wins", func() []portico.Route {
			return []portico.Route{named("a", after("a", 10*time.Second)), named("b", after("b", ms))}
		}, nil, 0, idem, true},
		{"hedges beyond the buffer", func() []portico.Route {
			return []portico.Route{named("a", after("a", 10*time.Second)), named("b", after("b", 10*time.Second)), named("c", after("c", 150*ms))}
		}, nil, 3, idem, true},
		{"failure moves on, cooling", func() []portico.Route {
			return []portico.Route{named("a", fail(modeltest.RateLimitError(time.Second))), named("b", after("b", ms))}
		}, nil, 0, idem, true},
		{"every route fails", func() []portico.Route {
			return []portico.Route{named("a", fail(modeltest.StatusError(503))), named("b", fail(modeltest.StatusError(503)))}
		}, nil, 0, idem, false},
		{"wrong on any route", func() []portico.Route { return []portico.Route{named("a", after("a", ms)), named("b", after("b", ms))} }, nil, 0, wrong, false},
		{"policy, cost and deadline", func() []portico.Route {
			a, b := named("a", fail(modeltest.StatusError(500))), named("b", after("b", ms))
			a.Capabilities, b.Capabilities = caps, caps
			return []portico.Route{a, b}
		}, rank.ByCost, 0, costly, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := MustNew(Config{Routes: c.routes(), Policy: c.policy,
					Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms, MaxAttempts: c.max})})
				resp, err := g.Generate(context.Background(), c.req)
				if (err == nil) != c.ok {
					t.Fatalf("Generate = %+v, %v; want an answer: %v", resp, err, c.ok)
				}
				used := 0
				for i := range g.hedged {
					sl := &g.hedged[i]
					if w := sl.Word.Load(); w != 0 {
						t.Errorf("slot %d: word %d after the request, want 0 (free)", i, w)
					}
					hs := sl.V.Load()
					if hs == nil {
						continue
					}
					used++
					fresh := new(hedged)
					fresh.init(g)
					if c.policy == nil && hs.r.primary == &g.cfg.Routes[0] {
						fresh.r.primary = hs.r.primary // kept in Routes order: always the first
					}
					for k := range fresh.p.buf { // clear keeps the tries' routes, the group's
						for j := range g.cfg.Routes {
							if rt := &g.cfg.Routes[j]; hs.p.buf[k].rt == rt {
								fresh.p.buf[k].rt = rt
							}
						}
					}
					if !reflect.DeepEqual(hs, fresh) {
						t.Errorf("slot %d after the request:\n%+v\n%+v\nwant a new slot's:\n%+v\n%+v", i, hs.r, hs.p, fresh.r, fresh.p)
					}
				}
				if used != 1 {
					t.Errorf("%d slots hold a state, want 1", used)
				}
			})
		})
	}
}

// TestHedgedPanic: a raced route's panic goes on to the caller, its slot's
// state is dropped rather than reused half cleared, the slot is free, and
// the next request is served from a new state.
func TestHedgedPanic(t *testing.T) {
	calls := 0
	boom := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		if calls++; calls == 1 {
			panic("boom")
		}
		return modeltest.Answer("a").Response, nil
	})
	g := MustNew(Config{Routes: []portico.Route{named("a", boom), named("b", after("b", ms))},
		Hedge: hedge.MustNew(hedge.Config{Delay: time.Hour})})
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want boom", p)
			}
		}()
		g.Generate(context.Background(), idem)
		t.Error("Generate returned, want its panic")
	}()
	for i := range g.hedged {
		if sl := &g.hedged[i]; sl.Word.Load() != 0 || sl.V.Load() != nil {
			t.Errorf("slot %d after the panic: word %d, state %p; want free and empty", i, sl.Word.Load(), sl.V.Load())
		}
	}
	if resp, err := g.Generate(context.Background(), idem); err != nil || resp.Route != "a" {
		t.Errorf("Generate after the panic = %+v, %v; want a's answer", resp, err)
	}
}
