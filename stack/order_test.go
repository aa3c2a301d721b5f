package stack

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// TestDeadlineCoversClientWait: the end-to-end deadline sits outside the
// client limiter, so time waiting for admission counts and the limiter sees
// the deadline. Deadline 1 s, 1 request per second in Wait mode, 3 calls at
// once (each answer takes 100 ms): the first is admitted and answers at
// 100 ms; the second's 1 s wait reaches the deadline and fails there with
// Deadline; the third's 2 s wait cannot end before the deadline and is
// refused at once, RateLimited. With the deadline inside the limiter, the
// limiter saw none: the second and third waited 1 s and 2 s, then answered
// at 1.1 s and 2.1 s, past the deadline they were promised.
func TestDeadlineCoversClientWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("ok").Response, Latency: 100 * time.Millisecond})
		s, err := New(Config{
			Routes:   []Route{route("r", f)},
			Deadline: time.Second,
			Client:   &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: time.Second}, Mode: ratelimit.Wait},
		})
		if err != nil {
			t.Fatal(err)
		}
		req := hello.Clone()
		req.Identity.ClientKey = "c"
		type result struct {
			class   portico.Class
			elapsed time.Duration
		}
		var (
			mu      sync.Mutex
			results []result
			retry   time.Duration
			wg      sync.WaitGroup
		)
		start := time.Now()
		for range 3 {
			wg.Go(func() {
				_, err := s.Generate(context.Background(), req)
				mu.Lock()
				defer mu.Unlock()
				results = append(results, result{portico.ClassOf(err), time.Since(start)})
				if portico.ClassOf(err) == portico.RateLimited {
					retry = portico.RetryAfterOf(err)
				}
			})
		}
		wg.Wait()
		slices.SortFunc(results, func(a, b result) int { return int(a.elapsed - b.elapsed) })
		want := []result{
			{portico.RateLimited, 0},
			{portico.OK, 100 * time.Millisecond},
			{portico.Deadline, time.Second},
		}
		if !slices.Equal(results, want) {
			t.Errorf("outcomes (class, time) = %v, want %v", results, want)
		}
		if retry != 2*time.Second {
			t.Errorf("refused call's RetryAfter = %v, want 2s (behind the admitted and the waiting call)", retry)
		}
		// The second call's admission and its deadline fall on the same
		// instant: it may reach the model, which then sees the deadline.
		if n := f.Count(); n != 1 && n != 2 {
			t.Errorf("model calls = %d, want 1 or 2", n)
		}
	})
}

// TestOneRouteCostsAsTwo: the same answer (the same usage, at the same
// prices) has the same Cost whether the stack has one route or a fallback
// group of two whose primary answers. The one-route stack reported 0.
func TestOneRouteCostsAsTwo(t *testing.T) {
	caps := portico.Capabilities{InputPrice: 0.25, OutputPrice: 2}
	answer := modeltest.Outcome{Response: &portico.Response{
		Text: "ok", FinishReason: portico.FinishStop,
		Usage: portico.Usage{InputTokens: 1000, OutputTokens: 100},
	}}
	priced := func(name string) Route {
		r := route(name, modeltest.NewFake(answer))
		r.Capabilities = caps
		return r
	}
	one, err := New(Config{Routes: []Route{priced("a")}})
	if err != nil {
		t.Fatal(err)
	}
	two, err := New(Config{Routes: []Route{priced("a"), priced("b")}})
	if err != nil {
		t.Fatal(err)
	}
	r1, err1 := one.Generate(context.Background(), hello)
	r2, err2 := two.Generate(context.Background(), hello)
	if err1 != nil || err2 != nil {
		t.Fatalf("Generate = %v, %v; want answers", err1, err2)
	}
	// 1000*0.25 + 100*2
	if r1.Cost != 450 || r2.Cost != 450 {
		t.Errorf("Cost: one route %v, two routes %v; want 450 both", r1.Cost, r2.Cost)
	}
}
