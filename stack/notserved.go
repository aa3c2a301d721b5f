package stack

import (
	"context"
	"errors"
	"net/http"

	"github.com/portico-llm/portico"
)

// notServed is the middleware, inside every judging layer of a route
// without a ModelName (its throttle, retry and breaker; only ModelMiddleware
// is inside it), that makes a 404 for a model the request named a fault of
// the pair, not of the route: the Unusable error becomes Incompatible ("model
// not served by this route"), which the group moves on from, the breaker
// does not count and a throttle counts as accepted. A route that sends
// whatever model the caller names cannot tell a model it does not serve
// (another provider's name, a typo) from a missing deployment; taking it out
// of rotation for every tenant because one request named a model it lacks
// would be worse than one 404 per such request.
func notServed(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		resp, err := next.Generate(ctx, req)
		if err == nil || req.Model == "" {
			return resp, err
		}
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Unusable || pe.Status != http.StatusNotFound {
			return resp, err
		}
		out := *pe
		out.Class = portico.Incompatible
		out.Reason = "model not served by this route"
		if pe.Reason != "" {
			out.Reason += " (" + pe.Reason + ")"
		}
		return resp, &out
	})
}
