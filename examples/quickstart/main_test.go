package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/retry"
)

// genai's dependencies start an OpenCensus worker at init, for good.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// TestQuickstart runs the main job on a small load over loopback and checks
// what must hold whatever the faults and the machine's speed: every request
// ends accepted or with a classified error; each fake server saw exactly
// the attempts its route sent, no more (no SDK retries) and no fewer; the
// answers the caller got are those the routes gave, from at least two of
// them; and each route's retries stay within its budgets.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about a second of real HTTP load")
	}
	cfg := runConfig{requests: 120, concurrency: 16, clients: 12, seed: 7}
	var out bytes.Buffer
	res, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatalf("run = %v", err)
	}
	failed := 0
	for _, n := range res.failed {
		failed += n
	}
	if res.requests != cfg.requests || res.accepted+failed != cfg.requests || res.unclassified != 0 {
		t.Errorf("requests = %d: accepted %d + failed %d, %d unclassified; want %d, each accepted or a *portico.Error",
			res.requests, res.accepted, failed, res.unclassified, cfg.requests)
	}
	answers, answering := 0, 0
	for i := range res.routes {
		rs, name := &res.routes[i], dial.Providers[i].Name
		answers += rs.answers
		// Every attempt the adapter sent reached the server exactly once.
		if rs.server != rs.sent || rs.sent > rs.attempts {
			t.Errorf("%s: server saw %d requests, the route sent %d of %d attempts; want equal", name, rs.server, rs.sent, rs.attempts)
		}
		// The route's answers are the caller's answers stamped with it.
		if rs.answered != rs.answers {
			t.Errorf("%s: answered %d calls, the caller got %d answers from it; want equal", name, rs.answered, rs.answers)
		}
		if rs.answers > 0 {
			answering++
		}
		// Retry budgets: per (route, client) at most Burst + Ratio * calls.
		if bound := float64(cfg.clients*retry.DefaultBudgetBurst) + 0.1*float64(rs.calls); float64(rs.retries) > bound {
			t.Errorf("%s: %d retries over %d calls, want <= %.1f (budget bound)", name, rs.retries, rs.calls, bound)
		}
		if rs.attempts > rs.calls+rs.retries {
			t.Errorf("%s: %d attempts, want <= calls %d + retries %d", name, rs.attempts, rs.calls, rs.retries)
		}
	}
	if answers+res.cached != res.accepted || res.cached != int(res.cache.Hits) {
		t.Errorf("answers by route add up to %d, and %d from the cache (%d hits), want the %d accepted", answers, res.cached, res.cache.Hits, res.accepted)
	}
	if len(res.spent) != cfg.clients || slices.Min(res.spent) <= 0 {
		t.Errorf("spend per tenant = %v, want %d tenants who each spent something", res.spent, cfg.clients)
	}
	// Which routes answer depends on the machine's speed (cooldowns and
	// breakers end on real time), but a fallback always shows: at least two
	// routes answer.
	if answering < 2 {
		t.Errorf("%d routes answered; want the fallback to show in at least two", answering)
	}
	// OpenAI's first 12 requests are refused: each such attempt is
	// retried (the route's retry may wait out the 150 ms Retry-After
	// within its MaxRetryAfter) or ends its call failed, and the group
	// moves on from OpenAI. On a loaded machine the primary's share of
	// the deadline may end before a 429 arrives, so any failure class
	// counts.
	o := &res.routes[dial.OpenAI]
	failedOpenAI := 0
	for _, n := range o.failed {
		failedOpenAI += n
	}
	if scripted := min(12, o.server); failedOpenAI+o.retries < scripted || o.fallbacks == 0 {
		t.Errorf("openai: %d failed calls (%v), %d retries, %d fallbacks; want at least the %d scripted 429s the server served retried or failed, and a fallback",
			failedOpenAI, o.failed, o.retries, o.fallbacks, scripted)
	}
	// Every request marks its system prompt as a cache breakpoint: the
	// Anthropic fake writes it once and reads it after, the others report
	// it cached; the answers are priced at their routes' prices.
	if u := res.usage; u.CachedInputTokens == 0 || u.CacheWriteTokens == 0 || u.ReasoningTokens == 0 || res.cost <= 0 {
		t.Errorf("usage %+v, cost %g; want cache reads, cache writes, reasoning and a cost", u, res.cost)
	}
	for _, line := range []string{"requests ", "accepted ", "attempts/request ", "retries by class ", "budget exhaustions ", "fallbacks ", "latency ", "tokens ", "cost ", "cache ", "spend per tenant ", "\nopenai ", "\nanthropic ", "\ngemini "} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("summary lacks %q:\n%s", line, out.String())
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	if _, err := run(context.Background(), &bytes.Buffer{}, runConfig{requests: 0, concurrency: 1, clients: 1}); err == nil {
		t.Errorf("run with -n 0 = nil error, want one")
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	var cfg runConfig
	cfg.requests, cfg.concurrency, cfg.clients = 1, 1, 1
	cfg.url[dial.Anthropic] = "http://127.0.0.1:1/"
	if _, err := run(context.Background(), &bytes.Buffer{}, cfg); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("run with -anthropic-url and no key = %v, want an error naming ANTHROPIC_API_KEY", err)
	}
}

// TestRoute runs -route on a small load over loopback: the split's first
// draws, among the requests that found both routes available, are 7:3
// within the binomial bound; every request of both runs is answered or
// fails classified; and the cascade's cost is c1 per accepted cheap
// answer plus c2 per escalation (c1 more when the cheap step answered
// before it), seed 000's prices; and a key pool moves a 429 storm on one
// key to the others.
func TestRoute(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about a second of real HTTP load")
	}
	const n = 200
	var out bytes.Buffer
	eps, err := startEndpoints(context.Background(), &out, runConfig{seed: 7})
	defer closeEndpoints(eps)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runRoute(context.Background(), &out, eps, n, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	placed := res.first["openai"] + res.first["anthropic"]
	if !binom.Within(res.first["openai"], placed, 0.7) || res.by["openai"]+res.by["anthropic"]+res.failed != n {
		t.Errorf("split: drawn first %v of %d, answered %v, failed %d; want openai %.0f ± %.1f, and %d in all",
			res.first, placed, res.by, res.failed, 0.7*float64(placed), binom.Bound(placed, 0.7), n)
	}
	lo := cheapCost*float64(res.accepted) + strongCost*float64(res.escalated)
	if res.accepted+res.escalated+res.cascadeFails != n || res.cost < lo-1e-9 || res.cost > lo+cheapCost*float64(res.escalated)+1e-9 {
		t.Errorf("cascade: accepted %d, escalated %d, failed %d, cost %v; want %d in all and cost in [%v, %v]",
			res.accepted, res.escalated, res.cascadeFails, res.cost, n, lo, lo+cheapCost*float64(res.escalated))
	}
	// The key pool: every request answered in every phase; in the storm
	// key-2 answers none, and each call it got (those in flight when the
	// storm began) moved on to another key; before and after, it serves.
	for p, ph := range res.pool {
		if ph.failed != 0 || ph.answers[0]+ph.answers[1]+ph.answers[2] != n/3 {
			t.Errorf("pool phase %d: %d failed, answers %v; want all %d answered", p, ph.failed, ph.answers, n/3)
		}
		if storm := p == 1; storm && (ph.answers[1] != 0 || ph.moved != ph.calls[1] || ph.calls[1] == 0) ||
			!storm && (ph.answers[1] == 0 || ph.moved != 0) {
			t.Errorf("pool phase %d: calls %v, answers %v, moved on %d; want key-2 out only in the storm (phase 1), each of its calls moved on", p, ph.calls, ph.answers, ph.moved)
		}
	}
}
