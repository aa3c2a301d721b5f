package stack

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/respcache"
	"github.com/portico-llm/portico/spend"
)

// TestPresetCacheBeforeLimits: the cache is the first layer: a tenant
// allowed one request a minute and one request's spend asks the same
// question three times and is answered three times, with one route call,
// one request's token and one charge; a new question is then refused by
// the client limit.
func TestPresetCacheBeforeLimits(t *testing.T) {
	f := modeltest.NewFake(modeltest.Answer("cached answer"))
	r := route("r", f)
	r.Capabilities.OutputPrice = 0.001 // 16 tokens of N_max: 0.016 reserved, 0.004 charged
	s, err := New(Config{Routes: []Route{r}, Cache: &respcache.Config{},
		Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: time.Minute}},
		Spend:  &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 0.01}}}})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(q string) (*portico.Response, error) {
		return s.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, q)},
			MaxOutputTokens: 16, Identity: portico.Identity{ClientKey: "t"}})
	}
	for i := range 3 {
		if resp, err := ask("same"); err != nil || resp.Text != "cached answer" {
			t.Fatalf("request %d = %v, want the answer", i, err)
		}
	}
	if f.Count() != 1 || s.Cache().Stats() != (respcache.Stats{Hits: 2, Misses: 1}) {
		t.Errorf("route calls %d, cache %+v; want 1 call, 2 hits, 1 miss", f.Count(), s.Cache().Stats())
	}
	bs, _ := s.Spend().Balances(context.Background(), &portico.Request{Identity: portico.Identity{ClientKey: "t"}})
	if got := bs[0].Spent; got != 0.004 {
		t.Errorf("spent %v, want 0.004 (one answer of 4 tokens)", got)
	}
	if _, err := ask("another"); portico.RefuserOf(err) != portico.ClientLimit {
		t.Errorf("a new question = %v, want refused by the client limit", err)
	}
}
