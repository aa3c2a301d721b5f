package ratelimit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// TestOverCapacityFallsBack: a call too large for one route's token bucket
// is Incompatible, not Permanent, so a fallback group moves on to a route
// whose bucket is large enough. Route "small" (Tokens 2000) and route "big"
// (Tokens 200,000) each sit behind their own limiter keyed ByModel; a
// 2,500-token prompt with 100 output tokens is refused by small's limiter
// without calling small, and big answers. (It was Permanent, which stops the
// group: the request failed and big was never called.)
func TestOverCapacityFallsBack(t *testing.T) {
	est := portico.EstimatorFunc(func(*portico.Request) int { return 2500 })
	newLim := func(tokens int) *ratelimit.Limiter {
		l, err := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Tokens: tokens}, Key: ratelimit.ByModel, Estimator: est})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	small, big := modeltest.NewFake(modeltest.Answer("small")), modeltest.NewFake(modeltest.Answer("big"))
	g, err := fallback.New(fallback.Config{Routes: []portico.Route{
		{Name: "small", ModelName: "small-model", Model: newLim(2000).Wrap(small)},
		{Name: "big", ModelName: "big-model", Model: newLim(200_000).Wrap(big)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "a long prompt")}, MaxOutputTokens: 100}
	resp, err := g.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate(2500 + 100 tokens; small holds 2000, big 200000) = %v, want big's answer", err)
	}
	if resp.Route != "big" || resp.Text != "big" || small.Count() != 0 || big.Count() != 1 {
		t.Errorf("answer from route %q (%q), calls small=%d big=%d; want big, big, 0 and 1", resp.Route, resp.Text, small.Count(), big.Count())
	}
	if len(resp.Hops) != 1 || resp.Hops[0].Route != "small" || resp.Hops[0].Reason != "incompatible" {
		t.Fatalf("Hops = %+v, want one: small, incompatible", resp.Hops)
	}
	herr := resp.Hops[0].Err
	var pe *portico.Error
	var ce *ratelimit.CapacityError
	if !errors.As(herr, &pe) || pe.Class != portico.Incompatible || pe.Model != "small-model" {
		t.Errorf("small's error = %v, want an Incompatible *portico.Error naming model small-model", herr)
	}
	if !errors.Is(herr, ratelimit.ErrOverCapacity) || !errors.Is(herr, portico.ErrIncompatible) || !errors.As(herr, &ce) ||
		*ce != (ratelimit.CapacityError{Input: 2500, MaxOutput: 100, Capacity: 2000}) {
		t.Errorf("small's error = %v (CapacityError %+v), want ErrOverCapacity and ErrIncompatible with {2500 100 2000}", herr, ce)
	}
	if portico.ClassOf(herr).Retryable() {
		t.Errorf("ClassOf(small's error) = %v, retryable; want never retried on the same route", portico.ClassOf(herr))
	}
}
