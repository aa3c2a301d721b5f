package fallback

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/rank"
)

// An Unusable failure (a 401 of this route's key, a 404 of its deployment)
// is this route's, not the request's: the group moves on to the next route,
// and the route's breaker (zero Config) opens at once, so the next request
// skips it without a call.
func TestUnusableMovesOnAndOpensTheBreaker(t *testing.T) {
	revoked := &portico.Error{Class: portico.Unusable, Status: 401, Code: "invalid_api_key"}
	a, b := &fake{name: "a", err: revoked}, &fake{name: "b"}
	br := breaker.MustNew(breaker.Config{Name: "a"})
	ra := route(a, portico.Capabilities{Provider: "p1"})
	ra.Model, ra.Health = br.Wrap(a), br
	g := MustNew(Config{Routes: []portico.Route{ra, route(b, portico.Capabilities{Provider: "p2"})}})
	resp, err := g.Generate(context.Background(), simple)
	if err != nil || resp.Route != "b" {
		t.Fatalf("Generate = %v, %v; want b's answer", resp, err)
	}
	if got, want := hopsOf(t, resp.Hops), []string{"a:unusable:unusable"}; !eq(got, want) {
		t.Errorf("Hops = %v, want %v", got, want)
	}
	if br.State() != breaker.Open {
		t.Errorf("a's breaker = %v, want open after one unusable failure", br.State())
	}
	resp, err = g.Generate(context.Background(), simple)
	if err != nil || resp.Route != "b" || a.n() != 1 || b.n() != 2 {
		t.Fatalf("second Generate = %v, %v; calls a %d b %d; want b's answer, a not called again", resp, err, a.n(), b.n())
	}
	if got, want := hopsOf(t, resp.Hops), []string{"a:unavailable:nil"}; !eq(got, want) {
		t.Errorf("second Hops = %v, want %v", got, want)
	}
}

// StopOnUnusable keeps the old rule: the group stops at an Unusable route and
// returns its error unchanged, calling no other route.
func TestStopOnUnusable(t *testing.T) {
	revoked := &portico.Error{Class: portico.Unusable, Status: 403}
	a, b := &fake{name: "a", err: revoked}, &fake{name: "b"}
	g := MustNew(Config{StopOnUnusable: true, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
	resp, err := g.Generate(context.Background(), simple)
	if resp != nil || err != error(revoked) || b.n() != 0 {
		t.Errorf("Generate = %v, %v, b calls %d; want a's error unchanged, b not called", resp, err, b.n())
	}
	// After another route was left, the stop keeps the earlier hops.
	c := &fake{name: "c", err: perr(portico.Transient)}
	g = MustNew(Config{StopOnUnusable: true, Routes: []portico.Route{route(c, portico.Capabilities{}), route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
	_, err = g.Generate(context.Background(), simple)
	var ex *Exhausted
	if portico.ClassOf(err) != portico.Unusable || !errors.As(err, &ex) || !ex.Stopped || len(ex.Hops) != 2 || b.n() != 0 {
		t.Errorf("Generate = %v; want unusable, stopped at a after c, b not called", err)
	}
}

// Every route Unusable: the group's error is Unusable, not retryable, and
// lists each route.
func TestAllUnusable(t *testing.T) {
	a, b := &fake{name: "a", err: perr(portico.Unusable)}, &fake{name: "b", err: perr(portico.Unusable)}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
	_, err := g.Generate(context.Background(), simple)
	if portico.ClassOf(err) != portico.Unusable || !errors.Is(err, ErrExhausted) || a.n() != 1 || b.n() != 1 {
		t.Errorf("Generate = %v (calls %d, %d); want unusable, exhausted, each route once", err, a.n(), b.n())
	}
}

// A request wrong on any route (a negative MaxOutputTokens, a malformed
// Contract) stops at once with Fits' Permanent error, calling nothing and
// skipping nothing: before, each route was skipped as unfit and the group
// answered Incompatible. The same with a Policy, and when the first route
// would also lack a capability (the Permanent check comes first).
func TestMalformedRequestStopsAtOnce(t *testing.T) {
	img := portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "https://x/y.png"}}}
	for _, tc := range []struct {
		name   string
		req    *portico.Request
		reason string
	}{
		{"negative max tokens", &portico.Request{Messages: simple.Messages, MaxOutputTokens: -1}, "negative token count"},
		{"negative max tokens, image on a text route", &portico.Request{Messages: []portico.Message{img}, MaxOutputTokens: -5}, "negative token count"},
		{"negative contract deadline", &portico.Request{Messages: simple.Messages, Contract: &portico.Contract{Deadline: -1}}, "negative Contract.Deadline"},
		{"negative contract cost", &portico.Request{Messages: simple.Messages, Contract: &portico.Contract{MaxCost: -1}}, "negative or NaN Contract.MaxCost"},
	} {
		for _, cfg := range []struct {
			name   string
			policy rank.Policy
			hedge  *hedge.Hedger
		}{{"in order", nil, nil}, {"ranked", rank.ByCost, nil}, {"hedged", nil, hedge.MustNew(hedge.Config{Delay: time.Second})}} {
			a, b := &fake{name: "a"}, &fake{name: "b"}
			rb := route(b, portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage})
			rb.Health = down{}
			g := MustNew(Config{Policy: cfg.policy, Hedge: cfg.hedge, Routes: []portico.Route{route(a, portico.Capabilities{ContextWindow: 8192}), rb}})
			resp, err := g.Generate(context.Background(), tc.req)
			var pe *portico.Error
			if resp != nil || !errors.As(err, &pe) || pe.Class != portico.Permanent || pe.Reason != tc.reason || errors.Is(err, ErrExhausted) {
				t.Errorf("%s (%s): Generate = %v, %v; want the permanent %q alone", tc.name, cfg.name, resp, err, tc.reason)
			}
			if a.n()+b.n() != 0 {
				t.Errorf("%s: calls a %d b %d, want none", tc.name, a.n(), b.n())
			}
		}
	}
}
