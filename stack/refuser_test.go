package stack

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// TestPresetSaysWhoRefused: the preset's client limiter and its per-model
// limiters refuse with errors a service tells apart without reading them:
// a tenant past its plan gets portico.ClientLimit, a tenant within it whose
// routes' provider accounts are spent gets portico.RouteLimit, with one
// route and with two. Both used to give the same error.
func TestPresetSaysWhoRefused(t *testing.T) {
	hour := func(n int) ratelimit.Limits { return ratelimit.Limits{Requests: n, Period: time.Hour} }
	for _, c := range []struct {
		name   string
		routes int
		want   []portico.Refuser // for requests of tenants a, a, b, c
	}{
		{"one route", 1, []portico.Refuser{portico.NotRefused, portico.ClientLimit, portico.NotRefused, portico.RouteLimit}},
		{"two routes", 2, []portico.Refuser{portico.NotRefused, portico.ClientLimit, portico.NotRefused, portico.NotRefused}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var routes []Route
				for _, n := range []string{"a", "b"}[:c.routes] {
					r := route(n, modeltest.NewFake(modeltest.Answer("hi")))
					r.Limiter = &ratelimit.Config{Limits: hour(2)} // each provider account: two an hour
					routes = append(routes, r)
				}
				s, err := New(Config{Routes: routes, Client: &ratelimit.Config{Limits: hour(1)}})
				if err != nil {
					t.Fatal(err)
				}
				for i, tenant := range []string{"a", "a", "b", "c"} {
					req := hello.Clone()
					req.Identity.ClientKey = tenant
					_, err := s.Generate(context.Background(), req)
					if got := portico.RefuserOf(err); got != c.want[i] || (got != portico.NotRefused) != (err != nil) {
						t.Errorf("request %d (tenant %s) = %v, RefuserOf %q; want %q", i, tenant, err, got, c.want[i])
					}
				}
				if c.routes == 2 { // c went to b; d takes b's last, e finds both spent
					var err error
					for _, tenant := range []string{"d", "e"} {
						req := hello.Clone()
						req.Identity.ClientKey = tenant
						_, err = s.Generate(context.Background(), req)
					}
					if got := portico.RefuserOf(err); got != portico.RouteLimit || portico.ClassOf(err) != portico.RateLimited {
						t.Errorf("tenant e, both routes spent = %v, RefuserOf %q; want rate_limited by route_limit", err, got)
					}
				}
			})
		})
	}
}
