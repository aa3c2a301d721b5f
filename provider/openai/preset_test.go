package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/stack"
	"github.com/portico-llm/portico/validate"
)

// These tests run the real preset (stack.New) over providers served by
// fakeopenai in memory, through the OpenAI SDK and this adapter, in virtual
// time: what the issue 10 rules mean for a deployment of two providers.

// provider serves models over its own in-memory fake and returns a route per
// model, each named after it and calling it by name.
func provider(t *testing.T, name string, models ...fakeopenai.ModelConfig) (*fakeopenai.Server, []stack.Route) {
	t.Helper()
	s, m := startPipe(t, fakeopenai.Config{Models: models})
	var rs []stack.Route
	for _, mc := range models {
		rs = append(rs, stack.Route{Route: portico.Route{Name: mc.Name, Model: m, ModelName: mc.Name,
			Capabilities: portico.Capabilities{Provider: name, Schema: portico.SchemaStrict}}})
	}
	return s, rs
}

func preset(t *testing.T, cfg stack.Config, routes ...[]stack.Route) *stack.Stack {
	t.Helper()
	for _, rs := range routes {
		cfg.Routes = append(cfg.Routes, rs...)
	}
	s, err := stack.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hops(resp *portico.Response) []string {
	var out []string
	for _, h := range resp.Hops {
		out = append(out, h.Route+":"+h.Reason)
	}
	return out
}

func same(a []string, b ...string) bool { return slices.Equal(a, b) }

func limit429(d time.Duration) fakeopenai.Fault {
	return fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfter: d}
}

// A 429 with retry-after: 5 on the primary, a healthy secondary at another
// provider: the answer comes from the secondary at once, after the
// primary's 20 ms and the secondary's 30 ms (on main: 10.09 s, two 5 s waits
// in place and a third 429). The primary then cools down: skipped without a
// call until 5 s after its 429, called again then.
func TestPresetLeavesARateLimitedPrimaryAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Latency: 20 * time.Millisecond, Script: []fakeopenai.Fault{limit429(5 * time.Second)}})
		sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b", Latency: 30 * time.Millisecond})
		s := preset(t, stack.Config{}, a, b)
		t0 := time.Now()
		resp, err := s.Generate(t.Context(), userReq("a", "hello"))
		if err != nil || resp.Route != "b" || !same(hops(resp), "a:rate_limited") {
			t.Fatalf("Generate = %v, %v; want b's answer after a's 429", resp, err)
		}
		got := time.Since(t0)
		t.Logf("answered by %s after %v (virtual time), %d call(s) to a", resp.Route, got, sa.Count("a"))
		if got != 50*time.Millisecond || sa.Count("a") != 1 {
			t.Errorf("answered after %v, %d calls to a; want 50ms, 1 call", got, sa.Count("a"))
		}
		t429 := t0.Add(20 * time.Millisecond) // the 429 came back then
		for _, at := range []time.Duration{time.Second, 4999 * time.Millisecond} {
			time.Sleep(at - time.Since(t429))
			resp, err = s.Generate(t.Context(), userReq("a", "hello"))
			if err != nil || resp.Route != "b" || !same(hops(resp), "a:cooldown") || sa.Count("a") != 1 {
				t.Errorf("at %v: Generate = %v, %v, calls to a %d; want b's answer, a skipped in its cooldown", at, resp, err, sa.Count("a"))
			}
		}
		time.Sleep(5*time.Second - time.Since(t429))
		resp, err = s.Generate(t.Context(), userReq("a", "hello"))
		if err != nil || resp.Route != "a" || sa.Count("a") != 2 || sb.Count("b") != 3 {
			t.Errorf("at 5s: Generate = %v, %v, calls a %d b %d; want a's answer on its second call, b called 3 times", resp, err, sa.Count("a"), sb.Count("b"))
		}
	})
}

// Two deployments behind one key, declared as one quota: the first's 429
// cools both down, and the request goes to the other provider without
// calling the second deployment.
func TestPresetSharedQuotaCoolsDownTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sa, a := provider(t, "azure",
			fakeopenai.ModelConfig{Name: "eastus", Script: []fakeopenai.Fault{limit429(5 * time.Second)}},
			fakeopenai.ModelConfig{Name: "westus"})
		for i := range a {
			a[i].Capabilities.Quota = "azure-key-1"
		}
		_, b := provider(t, "openai", fakeopenai.ModelConfig{Name: "b"})
		s := preset(t, stack.Config{}, a, b)
		resp, err := s.Generate(t.Context(), userReq("eastus", "hello"))
		if err != nil || resp.Route != "b" || !same(hops(resp), "eastus:rate_limited", "westus:cooldown") || sa.Count("westus") != 0 {
			t.Fatalf("Generate = %v, %v, westus calls %d; want b's answer, westus skipped in the shared cooldown", resp, err, sa.Count("westus"))
		}
		time.Sleep(5 * time.Second)
		resp, err = s.Generate(t.Context(), userReq("eastus", "hello"))
		if err != nil || resp.Route != "eastus" {
			t.Errorf("at 5s: Generate = %v, %v; want eastus's answer", resp, err)
		}
	})
}

// Two deployments behind one key and no other route: the first's 429
// (retry-after: 2) cools both down, and the second cannot serve before it
// either. The group then does what one route would have done, wait 2 s in
// place within the deadline, and the second deployment answers; it failed
// at once with the hint, where a stack of one route waits and answers.
func TestPresetSharedQuotaAloneWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sa, a := provider(t, "azure",
			fakeopenai.ModelConfig{Name: "eastus", Latency: 20 * time.Millisecond, Script: []fakeopenai.Fault{limit429(2 * time.Second)}},
			fakeopenai.ModelConfig{Name: "westus", Latency: 30 * time.Millisecond})
		for i := range a {
			a[i].Capabilities.Quota = "azure-key-1"
		}
		s := preset(t, stack.Config{Deadline: 10 * time.Second}, a)
		t0 := time.Now()
		resp, err := s.Generate(t.Context(), userReq("eastus", "hello"))
		if err != nil || resp.Route != "westus" || !same(hops(resp), "eastus:rate_limited") {
			t.Fatalf("Generate = %v, %v; want westus's answer after eastus's 429", resp, err)
		}
		// eastus's 429 came at 20 ms; its Retry-After ends at 2.02 s, and
		// westus answers 30 ms later.
		if got := time.Since(t0); got != 2050*time.Millisecond || sa.Count("eastus") != 1 || sa.Count("westus") != 1 {
			t.Errorf("answered after %v, calls eastus %d westus %d; want 2.05s, 1 and 1", got, sa.Count("eastus"), sa.Count("westus"))
		}
	})
}

// With every route cooling down or open, nothing is called and the error
// says when the first comes back: RetryAfterOf is the least of a's
// cooldown (5 s from the start) and b's breaker, open at once on b's 401
// (revoked key) for 3 s; at 3 s b's probe is due, and made.
func TestPresetEveryRouteUnavailableSaysWhen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Script: []fakeopenai.Fault{limit429(5 * time.Second)}})
		sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b", Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 401, Fraction: 1}}})
		b[0].Breaker.OpenFor = 3 * time.Second
		s := preset(t, stack.Config{}, a, b)
		t0 := time.Now()
		_, err := s.Generate(t.Context(), userReq("a", "hello"))
		if portico.ClassOf(err) != portico.RateLimited || portico.RetryAfterOf(err) != 5*time.Second {
			t.Fatalf("first Generate = %v; want rate_limited with a's retry-after 5s", err)
		}
		for _, tc := range []struct {
			at, want time.Duration
		}{{time.Second, 2 * time.Second}, {2500 * time.Millisecond, 500 * time.Millisecond}} {
			time.Sleep(tc.at - time.Since(t0))
			_, err = s.Generate(t.Context(), userReq("a", "hello"))
			var pe *portico.Error
			if !errors.As(err, &pe) || pe.Class != portico.RateLimited || pe.RetryAfter != tc.want || !pe.NotSent {
				t.Errorf("at %v: Generate = %v; want rate_limited, RetryAfterOf %v, nothing sent", tc.at, err, tc.want)
			}
		}
		if sa.Count("a") != 1 || sb.Count("b") != 1 {
			t.Errorf("calls a %d b %d, want 1 each", sa.Count("a"), sb.Count("b"))
		}
		time.Sleep(3*time.Second - time.Since(t0))
		_, err = s.Generate(t.Context(), userReq("a", "hello"))
		if portico.ClassOf(err) != portico.RateLimited || portico.RetryAfterOf(err) != 2*time.Second || sa.Count("a") != 1 || sb.Count("b") != 2 {
			t.Errorf("at 3s: Generate = %v, calls a %d b %d; want b's failed probe, then rate_limited with a's 2s", err, sa.Count("a"), sb.Count("b"))
		}
	})
}

// noCooldowns keeps no cooldown, so that only the breaker keeps a route out.
type noCooldowns struct{}

func (noCooldowns) Until(string) time.Time { return time.Time{} }
func (noCooldowns) Set(string, time.Time)  {}

// The breaker's probe does not come before the Retry-After the route
// announced: tripped at once by a 429 with retry-after: 5, with OpenFor
// 1 s, a's breaker stays open until 5 s (the stack's cooldowns are turned
// off here, so the breaker alone keeps a out), and its probe is the request
// at 5 s, which closes it.
func TestPresetBreakerProbeWaitsForRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Script: []fakeopenai.Fault{limit429(5 * time.Second)}})
		_, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
		a[0].Breaker = breaker.Config{Trip: breaker.ConsecutiveFailures(1), OpenFor: time.Second}
		s := preset(t, stack.Config{Fallback: fallback.Config{Cooldowns: noCooldowns{}}}, a, b)
		t0 := time.Now()
		if resp, err := s.Generate(t.Context(), userReq("a", "hello")); err != nil || resp.Route != "b" {
			t.Fatalf("Generate = %v, %v; want b's answer", resp, err)
		}
		brk := s.Breaker("a")
		for _, at := range []time.Duration{time.Second, 2 * time.Second, 4999 * time.Millisecond} {
			time.Sleep(at - time.Since(t0))
			if brk.Available() || brk.RetryAfter() != 5*time.Second-at {
				t.Errorf("at %v: breaker available %v, RetryAfter %v; want false, %v", at, brk.Available(), brk.RetryAfter(), 5*time.Second-at)
			}
			resp, err := s.Generate(t.Context(), userReq("a", "hello"))
			if err != nil || resp.Route != "b" || !same(hops(resp), "a:unavailable") || sa.Count("a") != 1 {
				t.Errorf("at %v: Generate = %v, %v, calls to a %d; want b's answer, a skipped unavailable", at, resp, err, sa.Count("a"))
			}
		}
		time.Sleep(5*time.Second - time.Since(t0))
		resp, err := s.Generate(t.Context(), userReq("a", "hello"))
		if err != nil || resp.Route != "a" || sa.Count("a") != 2 || brk.State() != breaker.Closed {
			t.Errorf("at 5s: Generate = %v, %v, calls to a %d, breaker %v; want a's probe answering, closed", resp, err, sa.Count("a"), brk.State())
		}
	})
}

// A fault of the primary route, not of the request (its key revoked, its
// deployment gone, its quota spent): the secondary answers, the primary was called once (not retried), and its
// breaker is open, so later requests go to the secondary without calling it.
func TestPresetRouteFaultMovesOn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fakeopenai.Fault
	}{
		{"401 revoked key", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 401}},
		{"403", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 403}},
		{"404 model not found", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 404}},
		{"429 insufficient_quota", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, Code: "insufficient_quota", Type: "insufficient_quota"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := tc.fault
				f.Fraction = 1
				sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Faults: []fakeopenai.Fault{f}})
				sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
				s := preset(t, stack.Config{}, a, b)
				resp, err := s.Generate(t.Context(), userReq("a", "hello"))
				if err != nil || resp.Route != "b" || !same(hops(resp), "a:unusable") {
					t.Fatalf("Generate = %v, %v; want b's answer after a hop from a (unusable)", resp, err)
				}
				if st := s.Breaker("a").State(); st != breaker.Open || sa.Count("a") != 1 {
					t.Errorf("a's breaker %v after %d calls, want open after 1", st, sa.Count("a"))
				}
				for range 3 {
					if resp, err = s.Generate(t.Context(), userReq("a", "hello")); err != nil || resp.Route != "b" || !same(hops(resp), "a:unavailable") {
						t.Errorf("later Generate = %v, %v; want b's answer, a skipped", resp, err)
					}
				}
				if sa.Count("a") != 1 || sb.Count("b") != 4 {
					t.Errorf("calls a %d b %d, want 1 and 4", sa.Count("a"), sb.Count("b"))
				}
			})
		})
	}
}

// TestPresetRequestRefusedMovesOn: what one provider refuses of a request
// another serves (Groq's tool_use_failed, any 400 or 422 its wording does
// not explain otherwise, a 4xx that also says x-should-retry: false) is
// this request's on this route: the secondary answers after one call to
// the primary, which is not retried, and the primary's breaker stays closed
// however many requests it refuses (a 400 was Permanent and stopped the
// group).
func TestPresetRequestRefusedMovesOn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fakeopenai.Fault
	}{
		{"400 tool_use_failed", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 400, Type: "invalid_request_error", Code: "tool_use_failed",
			Message: "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details."}},
		{"400 invalid_request_error", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 400, Type: "invalid_request_error", Message: "Invalid value for 'tool_choice'."}},
		{"422", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 422}},
		{"400 x-should-retry: false", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 400, ShouldRetry: "false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := tc.fault
				f.Fraction = 1
				sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Faults: []fakeopenai.Fault{f}})
				sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
				s := preset(t, stack.Config{}, a, b)
				for i := range 10 {
					resp, err := s.Generate(t.Context(), userReq("a", "hello"))
					if err != nil || resp.Route != "b" || !same(hops(resp), "a:incompatible") {
						t.Fatalf("request %d: Generate = %v, %v; want b's answer after a hop from a (incompatible)", i, resp, err)
					}
				}
				if st := s.Breaker("a").State(); st != breaker.Closed || sa.Count("a") != 10 || sb.Count("b") != 10 {
					t.Errorf("a's breaker %v, calls a %d b %d; want closed, 10 and 10 (one call to a per request)", st, sa.Count("a"), sb.Count("b"))
				}
			})
		})
	}
}

// TestPresetNoRetryRunOpens: a retryable status (503, 429) that says
// x-should-retry: false is advice about the request: it is called once on
// that route and moves on, and one such answer opens nothing; but a route
// that answers every request so serves no one. Ten requests, each answered
// so by the primary: the secondary answers all ten, the primary's breaker
// opens after the fifth (the run of consecutive failures, as for an
// unanswered cut) and the primary sees 5 calls. Before, such answers were
// ignored by the breaker and the primary saw all 10, every request paying
// its round trip for ever.
func TestPresetNoRetryRunOpens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fakeopenai.Fault
	}{
		{"503", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, Header: http.Header{"X-Should-Retry": {"false"}}}},
		{"429", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, ShouldRetry: "false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := tc.fault
				f.Fraction = 1
				sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Faults: []fakeopenai.Fault{f}})
				sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
				s := preset(t, stack.Config{}, a, b)
				answered, opened := 0, -1
				var got [][]string
				for i := range 10 {
					resp, err := s.Generate(t.Context(), userReq("a", "hello"))
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					if resp.Route == "b" {
						answered++
					}
					got = append(got, hops(resp))
					if opened < 0 && s.Breaker("a").State() == breaker.Open {
						opened = i + 1
					}
				}
				t.Logf("%s x-should-retry: false on every request: %d of 10 answered by b, a saw %d calls, a's breaker open after request %d",
					tc.name, answered, sa.Count("a"), opened)
				for i, h := range got {
					want := "a:incompatible"
					if i >= 5 {
						want = "a:unavailable"
					}
					if !same(h, want) {
						t.Errorf("request %d: hops %v, want [%s]", i, h, want)
					}
				}
				if answered != 10 || opened != 5 || sa.Count("a") != 5 || sb.Count("b") != 10 {
					t.Errorf("%d answered by b, open after request %d, calls a %d b %d; want 10, 5, 5 and 10", answered, opened, sa.Count("a"), sb.Count("b"))
				}
			})
		})
	}
}

// TestPresetNoRetryAmongAnswersStaysClosed: a route that answers some
// requests and advises not to retry others (4 answers of x-should-retry:
// false, then an answer, four times over) serves: each answer ends the
// run, so its breaker stays closed for all 20 requests, and each request
// is answered, by the primary or after one call to it by the secondary.
func TestPresetNoRetryAmongAnswersStaysClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refusal := fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, ShouldRetry: "false"}
		var script []fakeopenai.Fault
		for range 4 {
			script = append(script, refusal, refusal, refusal, refusal, fakeopenai.Fault{})
		}
		sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Script: script})
		sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
		s := preset(t, stack.Config{}, a, b)
		byA := 0
		for i := range 20 {
			resp, err := s.Generate(t.Context(), userReq("a", "hello"))
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if resp.Route == "a" {
				byA++
			}
			if st := s.Breaker("a").State(); st != breaker.Closed {
				t.Fatalf("after request %d: a's breaker %v, want closed", i, st)
			}
		}
		if byA != 4 || sa.Count("a") != 20 || sb.Count("b") != 16 {
			t.Errorf("%d answered by a, calls a %d b %d; want 4, 20 and 16", byA, sa.Count("a"), sb.Count("b"))
		}
	})
}

// Fallback.StopOnUnusable keeps the old rule: the primary's 401 is the
// answer, and the secondary is not called.
func TestPresetStopOnUnusable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 401, Fraction: 1}}})
		sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
		s := preset(t, stack.Config{Fallback: fallback.Config{StopOnUnusable: true}}, a, b)
		_, err := s.Generate(t.Context(), userReq("a", "hello"))
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Unusable || pe.Status != 401 || sb.Count("b") != 0 {
			t.Errorf("Generate = %v, b calls %d; want a's unusable 401, b not called", err, sb.Count("b"))
		}
	})
}

// A request wrong anywhere stops at once and sends nothing: a negative
// max tokens, a malformed Contract, a schema that does not compile (refused
// by validate before the adapter is called; the group does not move on
// from a Permanent error).
func TestPresetMalformedRequestSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a"})
		sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
		s := preset(t, stack.Config{}, a, b)
		negative := userReq("a", "hello")
		negative.MaxOutputTokens = -1
		contract := userReq("a", "hello")
		contract.Contract = &portico.Contract{MaxCost: -1}
		schema := userReq("a", "hello")
		schema.Schema = &portico.Schema{Name: "s", JSON: json.RawMessage(`{"type": 12}`)}
		for _, tc := range []struct {
			name  string
			req   *portico.Request
			check func(error) bool
		}{
			{"negative max tokens", negative, func(err error) bool { return err.Error() == "portico: permanent: negative token count" }},
			{"malformed contract", contract, func(err error) bool {
				return err.Error() == "portico: permanent: negative or NaN Contract.MaxCost"
			}},
			{"schema that does not compile", schema, func(err error) bool { return errors.Is(err, validate.ErrSchema) }},
		} {
			_, err := s.Generate(context.Background(), tc.req)
			if portico.ClassOf(err) != portico.Permanent || !tc.check(err) {
				t.Errorf("%s: Generate = %v, want its permanent error", tc.name, err)
			}
		}
		if n := len(sa.Requests()) + len(sb.Requests()); n != 0 {
			t.Errorf("%d requests reached the providers, want none", n)
		}
		if st := s.Breaker("a").State(); st != breaker.Closed {
			t.Errorf("a's breaker = %v, want closed", st)
		}
	})
}
