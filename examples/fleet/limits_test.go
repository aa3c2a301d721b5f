package main_test

import (
	"testing"
	"time"

	"github.com/portico-llm/portico"
)

// TestFleetSharedLimits: 200 tenants allowed 2 requests a minute each send
// 3, one through each instance, and one tenant bursts 60; OpenAI is
// allowed 100 a minute for the whole fleet. Each tenant gets exactly its
// 2, the burst starves nobody, OpenAI sees its 100 (plus what refilled
// while the test ran) and Anthropic serves the rest.
func TestFleetSharedLimits(t *testing.T) {
	f := newFleet(t, setup{client: 2, openai: 100, store: longTimeout})
	var reqs []*portico.Request
	for round := range 3 {
		for n := range 200 {
			reqs = append(reqs, request(tenant(n), n%2 == round%2))
		}
		for range 20 {
			reqs = append(reqs, request("burst", false))
		}
	}
	start := time.Now()
	out := f.fire(t.Context(), 12, reqs)
	elapsed := time.Since(start)
	accepted := map[string]int{}
	routes := map[string]int{}
	for _, o := range out {
		switch c := portico.ClassOf(o.err); c {
		case portico.OK:
			accepted[o.tenant]++
			routes[o.route]++
		case portico.RateLimited:
		default:
			t.Errorf("%s: %v (%v), want an answer or RateLimited", o.tenant, o.err, c)
		}
	}
	for n := range 200 {
		if accepted[tenant(n)] != 2 {
			t.Errorf("%s accepted %d, want its limit 2", tenant(n), accepted[tenant(n)])
		}
	}
	if accepted["burst"] != 2 {
		t.Errorf("burst tenant accepted %d of 60, want its limit 2", accepted["burst"])
	}
	// The route's bucket starts full (100) and refills 100/min meanwhile.
	maxOAI := 100 + int(elapsed.Minutes()*100) + 1
	oai, ant := f.oai.Count(gpt), f.ant.Count(claude)
	if oai < 100 || oai > maxOAI || routes["openai"] != oai || routes["anthropic"] != ant || oai+ant != 402 {
		t.Errorf("openai saw %d (want 100..%d), anthropic %d, answered by route %v; want 402 answers, each attempt one",
			oai, maxOAI, ant, routes)
	}
	f.noSecrets(t, out)
}
