package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/portico-llm/portico"
	proute "github.com/portico-llm/portico/route"
)

// Kind is how a group of routes chooses among them, each route built with
// its own layers (limiter, breaker, retry, validate...) as Config.Routes
// says: [Weighted], [Threshold], [Cascade] or [Balance], each a Config of
// package route or fallback that the stack completes with the group's
// routes. A nil Kind is the fallback group over the routes in their order
// (Config.Fallback).
//
// A router ([Threshold], [Balance]) picks one route per request, and the
// group's fallback stands behind its pick: the picked route is the first
// candidate of a fallback group (Config.Fallback, Config.Hedge) over the
// group's routes, the others following in their order, so a pick that
// fails, is cooling down or is cut moves on as a fallback group does. A
// [Cascade] moves on by its own rule: a failed or rejected step goes to
// the next step.
type Kind interface {
	build(b *builder) (portico.Model, error)
}

// Weighted splits a group's requests at random in the proportions of its
// weights, one per route, each > 0 and finite: a canary at 1:99, a cost
// split at 7:3. It is Config.Fallback with these Weights ([rank.Split]
// when Fallback.Policy is nil): the next route after a failure, and the
// route a hedge goes to (Config.Hedge), are drawn in the same
// proportions among the rest. Each weight is scaled by its route's
// headroom, what its limiter has left for the request (1 without a
// limiter): a route at 10% of its limits gets about 10% of its share.
//
// [rank.Split]: https://pkg.go.dev/github.com/portico-llm/portico/rank#Split
type Weighted []float64

func (w Weighted) build(b *builder) (portico.Model, error) {
	if len(w) != len(b.routes) {
		return nil, fmt.Errorf("stack: Weighted has %d weights for %d routes", len(w), len(b.routes))
	}
	cfg := b.cfg
	cfg.Fallback.Weights = w
	return b.s.group(cfg, b.routes, b.est)
}

// Threshold is RouteLLM's threshold router (package route's Threshold) over a group
// of two routes, the weak one then the strong one: a request whose score
// is above the threshold goes strong, any other weak, and the group's
// fallback stands behind the pick (see [Kind]). Strong and Weak must be
// left zero (the stack sets them); a nil Estimator is
// Config.Fallback.Estimator's.
type Threshold proute.ThresholdConfig

func (t Threshold) build(b *builder) (portico.Model, error) {
	if len(b.routes) != 2 {
		return nil, fmt.Errorf("stack: Threshold needs two routes, the weak then the strong, not %d", len(b.routes))
	}
	c := proute.ThresholdConfig(t)
	if c.Strong.Model != nil || c.Weak.Model != nil {
		return nil, errors.New("stack: Threshold's Strong and Weak are the group's routes: leave them zero")
	}
	c.Weak, c.Strong = b.behind(0), b.behind(1)
	c.Estimator = cmp.Or(c.Estimator, b.est)
	th, err := proute.NewThreshold(c)
	if err != nil {
		return nil, err
	}
	return answered(th), nil
}

// Cascade is FrugalGPT's cascade (package route's Cascade) over a group's routes,
// in cost order, cheapest first: Steps holds one route.Step per route,
// in the group's order, each with its acceptance scorer and threshold and
// its Route left zero (the stack sets it); nil Steps make every route a
// step that accepts any answer. A failed or rejected step moves on to the
// next. A nil Estimator is Config.Fallback.Estimator's.
type Cascade proute.CascadeConfig

func (c Cascade) build(b *builder) (portico.Model, error) {
	cc := proute.CascadeConfig(c)
	steps := slices.Clone(cc.Steps)
	if steps == nil {
		steps = make([]proute.Step, len(b.routes))
	}
	if len(steps) != len(b.routes) {
		return nil, fmt.Errorf("stack: Cascade has %d steps for %d routes", len(steps), len(b.routes))
	}
	for i, r := range b.routes {
		if steps[i].Route.Model != nil || steps[i].Route.Name != "" {
			return nil, fmt.Errorf("stack: Cascade step %d's Route is the group's route %q: leave it zero", i, r.Name)
		}
		steps[i].Route = r
	}
	cc.Steps = steps
	cc.Estimator = cmp.Or(cc.Estimator, b.est)
	return proute.NewCascade(cc)
}

// Balance spreads a group's requests over its routes, replicas of one
// model, with a route.Balancer of this Config: round robin, least in
// flight, session affinity (Autellix) or prefix-aware (Preble's E2), as
// its Strategy says; the group's fallback stands behind the pick (see
// [Kind]), and a replica whose breaker is open is not picked. Replicas
// must be left nil (the stack sets them); a nil Estimator is
// Config.Fallback.Estimator's.
type Balance proute.BalancerConfig

func (c Balance) build(b *builder) (portico.Model, error) {
	bc := proute.BalancerConfig(c)
	if bc.Replicas != nil {
		return nil, errors.New("stack: Balance's Replicas are the group's routes: leave them nil")
	}
	for i := range b.routes {
		bc.Replicas = append(bc.Replicas, b.behind(i))
	}
	bc.Estimator = cmp.Or(bc.Estimator, b.est)
	bal, err := proute.NewBalancer(bc)
	if err != nil {
		return nil, err
	}
	return answered(bal), nil
}

// builder is what a Kind builds a group from: the stack, its Config, the
// group's routes (each with its layers, its breaker as Health) and the
// Estimator.
type builder struct {
	s      *Stack
	cfg    Config
	routes []portico.Route
	est    portico.Estimator
	err    error // of a group behind a pick (behind)
}

// behind returns route i of the group with the group's fallback behind
// it: a route of i's name, Capabilities and Health whose Model is a
// fallback group over route i then the others in their order (route i
// itself when it is alone), which tells answered which route answered.
// Its errors are the group's, which New reports.
func (b *builder) behind(i int) portico.Route {
	r := b.routes[i]
	if len(b.routes) == 1 {
		return r
	}
	order := append([]portico.Route{r}, b.routes[:i]...)
	order = append(order, b.routes[i+1:]...)
	cfg := b.cfg
	cfg.Fallback.Policy, cfg.Fallback.Weights = nil, nil // route i first, then the group's order
	g, err := b.s.group(cfg, order, b.est)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return r
	}
	r.Model = recordAnswer(g)
	return r
}

// answerKey is the context key of the *answer a router's call records.
type answerKey struct{}

// answer is what the group behind a router's pick answered with: its
// Route and Cost, which the router's own stamp of the pick would replace.
type answer struct {
	route string
	cost  float64
}

// recordAnswer records in the context's *answer the Route and Cost of m's
// answer.
func recordAnswer(m portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		resp, err := m.Generate(ctx, req)
		if a, ok := ctx.Value(answerKey{}).(*answer); ok && resp != nil {
			a.route, a.cost = resp.Route, resp.Cost
		}
		return resp, err
	})
}

// answered calls router m and gives its answer the Route and Cost the
// group behind the pick recorded (the route that answered, and its price,
// where m's stamp names the route it picked), keeping the router's Hops.
func answered(m portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		a := new(answer)
		resp, err := m.Generate(context.WithValue(ctx, answerKey{}, a), req)
		if resp != nil && a.route != "" {
			resp.Route, resp.Cost = a.route, a.cost
		}
		return resp, err
	})
}
