package fallback

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// TestRealLimiterPassesOn puts package ratelimit's own limiter in front of
// the fallback, one request per minute: its second request is refused at
// once, even in Wait mode (a minute's wait does not fit the 8 s deadline), and
// the group moves to the next route instead of queueing.
func TestRealLimiterPassesOn(t *testing.T) {
	for _, mode := range []ratelimit.Mode{ratelimit.Reject, ratelimit.Wait} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b, c := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}, &fake{name: "c"}
				lim, err := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Requests: 1}, Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), {Name: "b", Model: lim.Wrap(b)}, route(c, portico.Capabilities{})}})
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
				defer cancel()
				hops := [][]string{{"a:transient:transient"}, {"a:transient:transient", "b:rate_limited:rate_limited"}}
				for i, want := range []string{"b", "c"} {
					start := time.Now()
					resp, err := g.Generate(ctx, simple)
					if err != nil || resp.Route != want {
						t.Fatalf("request %d: Generate = %v, %v; want %s's answer", i, resp, err, want)
					}
					if got := hopsOf(t, resp.Hops); !eq(got, hops[i]) {
						t.Errorf("request %d: Hops = %v, want %v", i, got, hops[i])
					}
					if el := time.Since(start); el != 0 {
						t.Errorf("request %d took %v, want 0: no queueing", i, el)
					}
				}
				if b.n() != 1 || c.n() != 1 {
					t.Errorf("calls b=%d c=%d, want 1 and 1", b.n(), c.n())
				}
			})
		})
	}
}

// TestExhaustedKeepsTheStatus: a group whose routes answered 503 returns a
// Transient error with Status 503, so a limiter outside it refunds only the
// output it reserved (the input was sent), as for one route's 503.
func TestExhaustedKeepsTheStatus(t *testing.T) {
	down := &portico.Error{Class: portico.Transient, Status: 503}
	g := MustNew(Config{Routes: []portico.Route{route(&fake{name: "a", err: down}, portico.Capabilities{}), route(&fake{name: "b", err: down}, portico.Capabilities{})}})
	_, err := g.Generate(context.Background(), simple)
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class != portico.Transient || pe.Status != 503 {
		t.Fatalf("Generate = %v, want Transient with Status 503", err)
	}
	if got := ratelimit.Refund(err, 100, 50); got != 50 {
		t.Errorf("Refund(exhausted after two 503s, in 100, out 50) = %d, want 50 (the output only)", got)
	}
}
