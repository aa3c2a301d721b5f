package stack

import (
	"slices"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// headroom returns the group's [fallback.Config].Headroom over routes:
// each route's limiter's [ratelimit.Limiter.Headroom] for the request as
// the route is called with it ([portico.Route.RequestFor]), 1 for a route
// without a limiter; nil when no route has one. A [Weighted] group (a key
// pool) thus splits by weight times headroom, so a key whose x-ratelimit
// headers report its limits nearly used gets less before it answers 429.
//
// [fallback.Config]: https://pkg.go.dev/github.com/portico-llm/portico/fallback#Config
func (s *Stack) headroom(routes []portico.Route) func(int, *portico.Request) float64 {
	lims := make([]*ratelimit.Limiter, len(routes))
	for i := range routes {
		lims[i] = s.route(routes[i].Name).limiter
	}
	if !slices.ContainsFunc(lims, func(l *ratelimit.Limiter) bool { return l != nil }) {
		return nil
	}
	return func(i int, req *portico.Request) float64 {
		if lims[i] == nil {
			return 1
		}
		return lims[i].Headroom(routes[i].RequestFor(req))
	}
}
