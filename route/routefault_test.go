package route

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
)

// guarded returns a route named name over m behind a breaker of the zero
// Config, which is also its Health.
func guarded(name string, m portico.Model, caps portico.Capabilities) (portico.Route, *breaker.Breaker) {
	b := breaker.MustNew(breaker.Config{Name: name})
	return portico.Route{Name: name, Model: b.Wrap(m), Capabilities: caps, Health: b}, b
}

// A request wrong on any route stops every router at once with Fits'
// Permanent error, calling nothing: before, each route was skipped as unfit
// and the router answered Incompatible (or, with a route down, Rejected).
func TestMalformedRequestStopsEveryRouter(t *testing.T) {
	img := portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "https://x/y.png"}}}
	bad := []*portico.Request{
		{Messages: []portico.Message{portico.Text(portico.RoleUser, "x")}, MaxOutputTokens: -1},
		{Messages: []portico.Message{img}, MaxOutputTokens: -1}, // and the first route reads no image
		{Messages: []portico.Message{portico.Text(portico.RoleUser, "x")}, Contract: &portico.Contract{Deadline: -time.Second}},
	}
	var calls atomic.Int64
	text := portico.Route{Name: "text", Model: answer("text", portico.Usage{}, &calls)}
	down := &switchHealth{}
	down.down.Store(true)
	vision := portico.Route{Name: "vision", Model: answer("vision", portico.Usage{}, &calls), Health: down,
		Capabilities: portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage, InputPrice: 1}}
	router := must(NewRouter(RouterConfig{Routes: []portico.Route{text, vision}}))
	threshold := must(NewThreshold(ThresholdConfig{Strong: vision, Weak: text}))
	cascade := must(NewCascade(CascadeConfig{Steps: []Step{{Route: text}, {Route: vision}}}))
	for _, m := range []struct {
		name string
		m    portico.Model
	}{{"router", router}, {"threshold", threshold}, {"cascade", cascade}} {
		for i, req := range bad {
			_, err := m.m.Generate(context.Background(), req)
			if portico.ClassOf(err) != portico.Permanent || errors.Is(err, ErrNoRoute) {
				t.Errorf("%s, request %d: Generate = %v, want Fits' permanent error alone", m.name, i, err)
			}
		}
	}
	if _, err := router.Pick(PickInfo{Request: bad[0]}); portico.ClassOf(err) != portico.Permanent {
		t.Errorf("Router.Pick = %v, want permanent", err)
	}
	if calls.Load() != 0 {
		t.Errorf("calls = %d, want none", calls.Load())
	}
}

// An Unusable failure takes the route out of rotation through its breaker
// (it trips at once): a Router, a Threshold and a Balancer return it, as any
// failure, and their next call goes elsewhere; a Cascade moves on to its next
// step at once, as after any route fault.
func TestUnusableLeavesTheRotation(t *testing.T) {
	var aCalls, bCalls atomic.Int64
	reset := func() { aCalls.Store(0); bCalls.Store(0) }
	revoked := func() portico.Model { return failWith(portico.Unusable, &aCalls) }
	ok := answer("b", portico.Usage{}, &bCalls)
	cheap := portico.Capabilities{InputPrice: 1, OutputPrice: 1}
	dear := portico.Capabilities{InputPrice: 2, OutputPrice: 2}

	ra, _ := guarded("a", revoked(), cheap)
	router := must(NewRouter(RouterConfig{Routes: []portico.Route{ra, {Name: "b", Model: ok, Capabilities: dear}}}))
	ra, _ = guarded("a", revoked(), cheap)
	threshold := must(NewThreshold(ThresholdConfig{Weak: ra, Strong: portico.Route{Name: "b", Model: ok, Capabilities: dear}, Threshold: 2}))
	ra, _ = guarded("a", revoked(), cheap)
	balancer := must(NewBalancer(BalancerConfig{Replicas: []portico.Route{ra, {Name: "b", Model: ok}}}))
	for _, m := range []struct {
		name string
		m    portico.Model
	}{{"router", router}, {"threshold", threshold}, {"balancer", balancer}} {
		reset()
		_, err := m.m.Generate(context.Background(), userReq("x"))
		if portico.ClassOf(err) != portico.Unusable || aCalls.Load() != 1 {
			t.Errorf("%s: first Generate = %v after %d calls to a, want a's unusable error", m.name, err, aCalls.Load())
		}
		for range 3 {
			if resp, err := m.m.Generate(context.Background(), userReq("x")); err != nil || resp.Route != "b" {
				t.Errorf("%s: later Generate = %v, %v; want b's answer", m.name, resp, err)
			}
		}
		if aCalls.Load() != 1 || bCalls.Load() != 3 {
			t.Errorf("%s: calls a %d b %d, want 1 and 3", m.name, aCalls.Load(), bCalls.Load())
		}
	}

	reset()
	ra, _ = guarded("a", revoked(), cheap)
	cascade := must(NewCascade(CascadeConfig{Steps: []Step{{Route: ra}, {Route: portico.Route{Name: "b", Model: ok, Capabilities: dear}}}}))
	resp, err := cascade.Generate(context.Background(), userReq("x"))
	if err != nil || resp.Route != "b" || len(resp.Hops) != 1 || resp.Hops[0].Reason != "unusable" {
		t.Fatalf("cascade: Generate = %v, %v; want b's answer after a hop from a (unusable)", resp, err)
	}
	if resp, err = cascade.Generate(context.Background(), userReq("x")); err != nil || resp.Route != "b" || resp.Hops[0].Reason != "unavailable" || aCalls.Load() != 1 {
		t.Errorf("cascade: second Generate = %v, %v (a calls %d); want b's answer, a skipped unavailable", resp, err, aCalls.Load())
	}
}

// With no route available, every router's error says when the first comes
// back: the least RetryAfter of the unavailable routes' Health (0, unknown,
// is no answer), Rejected; with none merely unavailable it stays
// Incompatible, without a RetryAfter.
func TestNoRouteSaysWhenOneComesBack(t *testing.T) {
	mk := func(name string, wait time.Duration, caps portico.Capabilities) portico.Route {
		h := &switchHealth{}
		h.down.Store(true)
		h.wait.Store(int64(wait))
		return portico.Route{Name: name, Model: answer(name, portico.Usage{}, nil), Health: h, Capabilities: caps}
	}
	a, b, c := mk("a", 5*time.Second, portico.Capabilities{}), mk("b", 3*time.Second, portico.Capabilities{InputPrice: 1}), mk("c", 0, portico.Capabilities{InputPrice: 2})
	small := portico.Route{Name: "small", Model: answer("small", portico.Usage{}, nil), Capabilities: portico.Capabilities{ContextWindow: 1}}
	router := must(NewRouter(RouterConfig{Routes: []portico.Route{a, b, c, small}}))
	threshold := must(NewThreshold(ThresholdConfig{Strong: a, Weak: b}))
	cascade := must(NewCascade(CascadeConfig{Steps: []Step{{Route: a}, {Route: small}, {Route: b}, {Route: c}}}))
	balancer := must(NewBalancer(BalancerConfig{Replicas: []portico.Route{a, b, c}}))
	for _, m := range []struct {
		name string
		m    portico.Model
	}{{"router", router}, {"threshold", threshold}, {"cascade", cascade}, {"balancer", balancer}} {
		_, err := m.m.Generate(context.Background(), userReq("hello"))
		if portico.ClassOf(err) != portico.Rejected || portico.RetryAfterOf(err) != 3*time.Second || !errors.Is(err, ErrNoRoute) {
			t.Errorf("%s: Generate = %v, want rejected, no route, retry-after 3s", m.name, err)
		}
	}
	onlySmall := must(NewRouter(RouterConfig{Routes: []portico.Route{small}}))
	if _, err := onlySmall.Generate(context.Background(), userReq("hello")); portico.ClassOf(err) != portico.Incompatible || portico.RetryAfterOf(err) != 0 {
		t.Errorf("no route fits: Generate = %v, want incompatible without retry-after", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
