package stack

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// TestRequestModelDoesNotOpenBreakers: routes of several providers, none
// with a ModelName, and a request that names its model (Request.Model, as
// callers set it). The primary fails once (503s); the group sends the
// primary's model name to the fallback, whose provider answers 404 model
// not found, which every adapter classifies Unusable, and the fallback's
// breaker opens at once: one tenant's request (or a typo in its model
// name) closes the fallback to every tenant for OpenFor (30 s), and with
// Route.Breaker.Shared to every instance. A model the request chose is
// the request's fault on that route, not the route's.
func TestRequestModelDoesNotOpenBreakers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// What provider/anthropic makes of a model it does not have: 404
		// not_found_error, Unusable.
		only := func(model string) portico.Model {
			return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
				if req.Model != "" && req.Model != model {
					return nil, modeltest.StatusError(404)
				}
				return &portico.Response{Text: "from " + model, FinishReason: portico.FinishStop, Model: model}, nil
			})
		}
		down := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		s, err := New(Config{Routes: []Route{route("openai", down), route("anthropic", only("claude-haiku-4-5"))}})
		if err != nil {
			t.Fatal(err)
		}
		req := hello.Clone()
		req.Model = "gpt-4o-mini"
		if _, err := s.Generate(context.Background(), req); portico.ClassOf(err) != portico.Transient {
			t.Fatalf("Generate(model gpt-4o-mini, openai down) = %v, want the primary's Transient", err)
		}
		if st := s.Breaker("anthropic").State(); st != breaker.Closed {
			t.Errorf("anthropic breaker after a request for gpt-4o-mini = %v, want closed", st)
		}
		resp, err := s.Generate(context.Background(), hello)
		if err != nil || resp.Route != "anthropic" {
			t.Errorf("next request, no model named = %+v, %v; want anthropic's answer", resp, err)
		}
	})
}

// TestShortCallerDeadlineKeepsBreakerClosed: a healthy route whose answers
// take 400 ms, the only one that fits the request (the other's context window
// is too small), and callers whose own deadlines (300 ms) are shorter. With
// no other candidate to leave time for, the group gives the route all but
// its reserve (300/16 ms) and ends it there with ErrShareTimeout, a layer
// timeout: the route reports Ambiguous and its breaker counts it. After five
// such requests the breaker opens, and every tenant, however patient, is
// refused for 30 s. Class.RouteFault says a deadline is never the route's
// fault; a cut that only the caller's deadline caused should not be one
// either. (With one route the stack calls it without a group, and the same
// requests end with Deadline, which the breaker ignores.)
func TestShortCallerDeadlineKeepsBreakerClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "fine", FinishReason: portico.FinishStop}, Latency: 400 * time.Millisecond})
		small := route("small", modeltest.NewFake(modeltest.Answer("unused")))
		small.Capabilities.ContextWindow = 8
		s, err := New(Config{Routes: []Route{route("a", slow), small}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			_, err := s.Generate(ctx, hello)
			cancel()
			if err == nil {
				t.Fatalf("request %d under 300 ms = nil error, want a failure", i)
			}
		}
		if st := s.Breaker("a").State(); st != breaker.Closed {
			t.Errorf("breaker of a healthy route after callers' short deadlines = %v, want closed", st)
		}
		resp, err := s.Generate(context.Background(), hello)
		if err != nil || resp.Route != "a" {
			t.Errorf("patient request = %+v, %v; want a's answer", resp, err)
		}
	})
}

// TestSchemaViolationsOfOneTenantKeepBreakersClosed: healthy routes that
// answer every tenant, and one tenant whose schema (a pattern, which a
// best-effort SchemaJSON model often misses) their answers never satisfy.
// validate rejects each such answer as InvalidResponse, a route fault:
// retry repeats it, the group moves on, and both breakers count it, so
// five requests of that tenant open both breakers and every other tenant is
// refused (Rejected, both routes unavailable) for OpenFor, 30 s. What the
// schema of one request asks is that request's doing, as a content filter
// or a cut at its MaxOutputTokens is (package validate, Rejections: "one
// tenant's requests cannot open a route's breaker for every tenant").
func TestSchemaViolationsOfOneTenantKeepBreakersClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		word := func(name string) portico.Model {
			return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
				text := "fine"
				if req.Schema != nil {
					text = `{"code":"lorem"}`
				}
				return &portico.Response{Text: text, FinishReason: portico.FinishStop, Model: name}, nil
			})
		}
		jsonCaps := portico.Capabilities{Schema: portico.SchemaJSON}
		a, b := route("a", word("a")), route("b", word("b"))
		a.Capabilities, b.Capabilities = jsonCaps, jsonCaps
		s, err := New(Config{Routes: []Route{a, b}})
		if err != nil {
			t.Fatal(err)
		}
		code := &portico.Schema{Name: "code", JSON: []byte(`{"type":"object","properties":{"code":{"type":"string","pattern":"^[0-9]{6}$"}},"required":["code"]}`)}
		for i := range 5 {
			req := hello.Clone()
			req.Identity.ClientKey = "strict-tenant"
			req.Schema = code
			if _, err := s.Generate(context.Background(), req); portico.ClassOf(err) != portico.InvalidResponse {
				t.Fatalf("strict tenant's request %d = %v, want InvalidResponse", i, err)
			}
		}
		if sa, sb := s.Breaker("a").State(), s.Breaker("b").State(); sa != breaker.Closed || sb != breaker.Closed {
			t.Errorf("breakers after one tenant's schema violations = %v, %v; want closed", sa, sb)
		}
		req := hello.Clone()
		req.Identity.ClientKey = "other-tenant"
		if resp, err := s.Generate(context.Background(), req); err != nil || resp.Route != "a" {
			t.Errorf("another tenant's request = %+v, %v; want a's answer", resp, err)
		}
	})
}

// TestShortDeadlineWithAFallback: a fast model (40 ms an answer) and
// callers that allow 80 ms. With one route the stack calls it and every
// request is answered; with a fallback route too, the group's MinAttempt
// (100 ms) no longer stops the first call: it takes the caller's 80 ms, and
// every request is answered too. A fallback does not make a request that
// one route serves fail without a call.
func TestShortDeadlineWithAFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast := func() *modeltest.Fake {
			return modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "fine", FinishReason: portico.FinishStop}, Latency: 40 * time.Millisecond})
		}
		for _, n := range []int{1, 2} {
			a := fast()
			routes := []Route{route("a", a)}
			if n == 2 {
				routes = append(routes, route("b", fast()))
			}
			s, err := New(Config{Routes: routes})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
			resp, err := s.Generate(ctx, hello)
			cancel()
			if err != nil || resp.Route != "a" || a.Count() != 1 {
				t.Errorf("%d routes, 80 ms deadline: Generate = %+v, %v, a called %d times; want a's answer", n, resp, err, a.Count())
			}
		}
	})
}

// TestImpatientTenantKeepsConcurrencyLimit: a healthy route (300 ms an
// answer) with an adaptive in-flight cap (AIMD from 20), and one tenant
// whose callers allow 200 ms, one call at a time. The caller's deadline
// says nothing of the destination's capacity, as for breakers and
// throttles: the cap stays at 20, and a burst of 20 calls from a patient
// tenant after them is served, none shed.
func TestImpatientTenantKeepsConcurrencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "fine", FinishReason: portico.FinishStop}, Latency: 300 * time.Millisecond})
		a := route("a", slow)
		lim := adaptiveLimit(t, adaptive.Config{Algorithm: adaptive.AIMD{}, Initial: 20})
		a.Limiter = &ratelimit.Config{Concurrency: lim}
		s, err := New(Config{Routes: []Route{a}})
		if err != nil {
			t.Fatal(err)
		}
		impatient := hello.Clone()
		impatient.Identity.ClientKey = "impatient"
		for range 100 {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			if _, err := s.Generate(ctx, impatient); portico.ClassOf(err) != portico.Deadline {
				t.Fatalf("impatient call = %v, want Deadline", err)
			}
			cancel()
		}
		if got := lim.Limit(); got != 20 {
			t.Errorf("limit after one tenant's deadlines = %d, want 20", got)
		}
		var wg sync.WaitGroup
		var shed atomic.Int32
		for range 20 {
			wg.Go(func() {
				r := hello.Clone()
				r.Identity.ClientKey = "patient"
				if _, err := s.Generate(context.Background(), r); err != nil {
					shed.Add(1)
				}
			})
		}
		wg.Wait()
		if n := shed.Load(); n != 0 {
			t.Errorf("patient burst of 20: %d failed, want none", n)
		}
	})
}

// TestSlowReaderKeepsConcurrencyLimit: a healthy route that streams its
// answers in 100 ms, with the default adaptive cap (Gradient2 from 20), and
// one tenant whose OnChunk takes 300 ms a chunk (a slow client at the end of
// a server-sent stream). The Limiter times a call from its admission to its
// end, the reader's time included, so five bursts of that tenant teach
// Gradient2 that the route slowed from 100 ms to 2.5 s: its limit falls
// from 28 to 15, and 5 of the next 20 calls of other tenants are shed. The
// reader's time is not the destination's (retry's ChunkGap and MinRate
// leave it out): the limit should not fall, and the burst be served.
func TestSlowReaderKeepsConcurrencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "one two three four five six seven eight", FinishReason: portico.FinishStop}, Latency: 100 * time.Millisecond})
		a := route("a", f)
		lim := adaptiveLimit(t, adaptive.Config{Initial: 20})
		a.Limiter = &ratelimit.Config{Concurrency: lim}
		s, err := New(Config{Routes: []Route{a}})
		if err != nil {
			t.Fatal(err)
		}
		// burst sends 20 streamed calls of tenant key at once and returns
		// how many failed; a slow tenant's OnChunk takes 300 ms.
		burst := func(key string, slow bool) int {
			var wg sync.WaitGroup
			var failed atomic.Int32
			for range 20 {
				wg.Go(func() {
					r := hello.Clone()
					r.Identity.ClientKey = key
					r.OnChunk = func(portico.Chunk) error {
						if slow {
							time.Sleep(300 * time.Millisecond)
						}
						return nil
					}
					if _, err := s.Generate(context.Background(), r); err != nil {
						failed.Add(1)
					}
				})
			}
			wg.Wait()
			return int(failed.Load())
		}
		for range 5 {
			burst("normal", false)
		}
		before := lim.Limit()
		for range 5 {
			burst("slow-reader", true)
		}
		if after := lim.Limit(); after < before {
			t.Errorf("limit %d before one tenant's slow reads, %d after; want no lower", before, after)
		}
		if n := burst("normal", false); n != 0 {
			t.Errorf("other tenants' burst of 20 after them: %d failed, want none", n)
		}
	})
}

// TestNotServedModelCalledOnce: 20 requests name a model the primary (no
// ModelName) does not serve. Its 404 is the request's (Incompatible, the
// breaker stays closed), and the route remembers it: it sees one call, not
// 20, each later request going to the fallback without a round trip, until
// notServedFor has passed. Another model is still sent to it.
func TestNotServedModelCalledOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary := modeltest.NewFakeFunc(func(n int, req *portico.Request) modeltest.Outcome {
			if req.Model == "gpt-x" {
				return modeltest.Fail(modeltest.StatusError(404))
			}
			return modeltest.Answer("primary")
		})
		fallback := modeltest.NewFake(modeltest.Answer("fallback"))
		s, err := New(Config{Routes: []Route{route("a", primary), route("b", fallback)}})
		if err != nil {
			t.Fatal(err)
		}
		req := hello.Clone()
		req.Model = "gpt-x"
		for i := range 20 {
			resp, err := s.Generate(context.Background(), req)
			if err != nil || resp.Route != "b" || len(resp.Hops) != 1 || portico.ClassOf(resp.Hops[0].Err) != portico.Incompatible {
				t.Fatalf("request %d = %+v, %v; want b's answer after a's Incompatible", i, resp, err)
			}
		}
		if got := primary.Count(); got != 1 {
			t.Errorf("primary saw %d calls for 20 requests naming a model it lacks, want 1", got)
		}
		if st := s.Breaker("a").State(); st != breaker.Closed {
			t.Errorf("breaker a = %v, want closed", st)
		}
		other := hello.Clone()
		other.Model = "gpt-y"
		if resp, err := s.Generate(context.Background(), other); err != nil || resp.Route != "a" || primary.Count() != 2 {
			t.Errorf("another model = %+v, %v (%d calls); want a's answer, its second call", resp, err, primary.Count())
		}
		time.Sleep(notServedFor)
		s.Generate(context.Background(), req)
		if got := primary.Count(); got != 3 {
			t.Errorf("after notServedFor the primary saw %d calls, want 3 (asked again)", got)
		}
	})
}

// A route remembers at most notServedModels models, of names up to
// notServedName bytes, and makes room by dropping the one that expires first.
func TestNotServedBounded(t *testing.T) {
	var m notServed
	now := time.Unix(1000, 0)
	err := &portico.Error{Class: portico.Incompatible, Status: 404}
	for i := range notServedModels + 10 {
		m.remember(strconv.Itoa(i), err, now.Add(time.Duration(i)*time.Second))
	}
	if got := len(m.known); got != notServedModels || int(m.n.Load()) != got {
		t.Errorf("remembered %d models (n %d), want %d", got, m.n.Load(), notServedModels)
	}
	if m.refused("9", now) != nil || m.refused("10", now) == nil {
		t.Errorf("the first ten, which expire first, should be gone and the eleventh kept")
	}
	m.remember(strings.Repeat("x", notServedName+1), err, now)
	if _, ok := m.known[strings.Repeat("x", notServedName+1)]; ok {
		t.Errorf("a model name longer than notServedName was remembered")
	}
	if e := m.refused("10", now.Add(10*time.Second+notServedFor)); e != nil {
		t.Errorf("refused after notServedFor = %v, want nil", e)
	}
	var pe *portico.Error
	if e := m.refused("11", now); !errors.As(e, &pe) || !pe.NotSent || pe.Class != portico.Incompatible || pe.Status != 404 || pe.Model != "11" {
		t.Errorf("refused = %v, want the remembered Incompatible 404 for model 11, NotSent", e)
	}
	// What one tenant's 404 carried (a provider's message may quote its
	// prompt) is not handed to the next request: only its status, code and
	// reason are kept.
	secret := &portico.Error{Class: portico.Incompatible, Status: 404, Code: "model_not_found", Reason: "model not served by this route",
		Err: errors.New("SECRET prompt text")}
	m.remember("m", secret, now)
	if e := m.refused("m", now); e == nil || errors.Unwrap(e) != nil || strings.Contains(e.Error(), "SECRET") {
		t.Errorf("refused = %v, want no cause", e)
	} else if want := "portico: incompatible status 404 code model_not_found model m: model not served by this route, remembered"; e.Error() != want {
		t.Errorf("refused = %q, want %q", e.Error(), want)
	}
}
