package stack_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/stack"
)

// Config.Hedge with one route hedges to that route, as its doc says,
// whether or not the route continues its own broken streams (with
// Capabilities.Continuation the stack calls it through a group).
func TestConfigHedgeOneContinuingRoute(t *testing.T) {
	for _, cont := range []portico.Continuation{portico.ContinueNone, portico.ContinuePrefill} {
		synctest.Test(t, func(t *testing.T) {
			fake := modeltest.NewFake(
				modeltest.Outcome{Response: modeltest.Answer("slow").Response, Latency: 10 * time.Second},
				modeltest.Outcome{Response: modeltest.Answer("fast").Response, Latency: time.Second})
			s, err := stack.New(stack.Config{
				Routes: []stack.Route{{Route: portico.Route{Name: "a", Model: fake, Capabilities: portico.Capabilities{Continuation: cont}}}},
				Hedge:  &hedge.Config{Delay: 100 * time.Millisecond},
			})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}, MaxOutputTokens: 16}
			resp, err := s.Generate(context.Background(), r)
			if err != nil || resp.Text != "fast" || time.Since(start) != 1100*time.Millisecond || fake.Count() != 2 {
				t.Errorf("continuation %v: Generate = %v, %v after %v with %d calls, want the hedge's answer after 1.1s, 2 calls",
					cont, resp, err, time.Since(start), fake.Count())
			}
		})
	}
}

// Contract.MaxCost bounds a request's hedges as it bounds a group's: a
// request that may cost 0.15, on routes whose calls are estimated at 0.1
// each (100 output tokens at 0.001), gets no hedge, since a second call
// may be billed too, whether the hedge would go to the next route
// (Config.Hedge) or to the route itself (Route.Hedge).
func TestHedgeKeepsMaxCost(t *testing.T) {
	caps := portico.Capabilities{ContextWindow: 8000, MaxOutput: 1000, OutputPrice: 1e-3}
	for _, name := range []string{"Config.Hedge", "Route.Hedge"} {
		synctest.Test(t, func(t *testing.T) {
			slowA := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("a").Response, Latency: time.Second})
			fastB := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("b").Response, Latency: 100 * time.Millisecond})
			cfg := stack.Config{Routes: []stack.Route{
				{Route: portico.Route{Name: "a", Model: slowA, Capabilities: caps}},
				{Route: portico.Route{Name: "b", Model: fastB, Capabilities: caps}},
			}}
			if name == "Config.Hedge" {
				cfg.Hedge = &hedge.Config{Delay: 100 * time.Millisecond}
			} else {
				cfg.Routes[0].Hedge = &hedge.Config{Delay: 100 * time.Millisecond}
			}
			s, err := stack.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}, MaxOutputTokens: 100,
				Contract: &portico.Contract{MaxCost: 0.15}}
			resp, err := s.Generate(context.Background(), r)
			if err != nil || resp.Text != "a" {
				t.Fatalf("%s: Generate = %v, %v, want a's answer", name, resp, err)
			}
			if n := slowA.Count() + fastB.Count(); n != 1 {
				t.Errorf("%s: %d calls (a %d, b %d), want 1: a hedge may cost 0.2 in all, above MaxCost 0.15", name, n, slowA.Count(), fastB.Count())
			}
		})
	}
}

// A streamed request that continues broken streams, on one route that
// continues them, with Config.Hedge: the hedge, sent at 100 ms, wins with
// its first chunk at 110 ms and breaks after two; the group continues it
// on the route, as a prefill of what was delivered, the continuation
// marked no hedge (it is a new request), and the caller gets each chunk
// once.
func TestConfigHedgeContinuedStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cut := &portico.Error{Class: portico.Ambiguous, Reason: "connection reset"}
		fake := modeltest.NewFake(
			modeltest.Outcome{Response: modeltest.Answer("slow").Response, TTFT: 10 * time.Second},
			modeltest.Outcome{Chunks: []string{"one", " two"}, Err: cut, TTFT: 10 * time.Millisecond},
			modeltest.Outcome{Response: modeltest.Answer(" three").Response, Chunks: []string{" three"}})
		s, err := stack.New(stack.Config{
			Routes: []stack.Route{{Route: portico.Route{Name: "a", Model: fake,
				Capabilities: portico.Capabilities{Continuation: portico.ContinuePrefill}}, Skip: stack.SkipRetry}},
			Hedge: &hedge.Config{Delay: 100 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		r := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}, MaxOutputTokens: 16,
			ContinueOnBreak: true, OnChunk: func(c portico.Chunk) error { got = append(got, c.Text); return nil }}
		resp, err := s.Generate(context.Background(), r)
		if err != nil || resp.Text != "one two three" || strings.Join(got, "|") != "one| two| three" {
			t.Fatalf("Generate = %v, %v, chunks %q; want \"one two three\" in chunks one, two, three", resp, err, got)
		}
		reqs := fake.Requests()
		if len(reqs) != 3 || !reqs[1].Hedge || reqs[2].Hedge || reqs[2].Prefix != "one two" {
			t.Errorf("%d calls; want 3: the first, a hedge, and a continuation of \"one two\" not marked a hedge", len(reqs))
			for i, q := range reqs {
				t.Logf("call %d: Hedge %v, Prefix %q", i, q.Hedge, q.Prefix)
			}
		}
	})
}
