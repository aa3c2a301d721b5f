package spend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
)

// TestBoundConcurrent: 50 tenants with a day budget of 1, 8 callers each
// racing requests of estimate 0.05 to 0.5 (N_max 50 to 500 at 0.001)
// that cost a random part of it: every tenant ends within one request's
// estimate of its budget (the package doc's bound), and no tenant is
// left far under it.
func TestBoundConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 1}}, Routes: []portico.Capabilities{perToken}})
		m := b.Wrap(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			est := float64(r.MaxOutputTokens) * perToken.OutputPrice
			return &portico.Response{Text: "ok", Cost: est * rand.Float64()}, nil
		}))
		const tenants = 50
		var wg sync.WaitGroup
		maxEst := make([]float64, tenants)
		var mu sync.Mutex
		for i := range tenants {
			for range 8 {
				wg.Go(func() {
					for range 40 {
						n := 50 + rand.IntN(451)
						if _, err := m.Generate(t.Context(), req(string(rune('A'+i)), n)); err == nil {
							mu.Lock()
							maxEst[i] = max(maxEst[i], float64(n)*perToken.OutputPrice)
							mu.Unlock()
						}
					}
				})
			}
		}
		wg.Wait()
		worst := 0.0
		for i := range tenants {
			s := spent(t, b, string(rune('A'+i)))
			if s >= 1+maxEst[i] {
				t.Errorf("tenant %d spent %v, above 1 + its largest estimate %v", i, s, maxEst[i])
			}
			if s < 0.5 {
				t.Errorf("tenant %d spent %v of 1 after 320 requests, want the budget used", i, s)
			}
			worst = max(worst, s-1)
		}
		t.Logf("worst overspend over %d tenants: %.4f (bound: one estimate, at most 0.5)", tenants, worst)
	})
}

// TestSteerToCheaperRoute: over a group of a dear route (0.01 a token)
// and a cheap one (0.001), a tenant with a day budget of 1 and requests of
// N_max 50 (estimates 0.5 and 0.05) spends 0.4 twice on the dear route;
// with 0.2 left, below the estimate, Steer sends the third to the cheap
// route, and without Steer it goes to the dear one.
func TestSteerToCheaperRoute(t *testing.T) {
	for _, steer := range []bool{true, false} {
		dearCaps := portico.Capabilities{OutputPrice: 0.01}
		cheapCaps := portico.Capabilities{OutputPrice: 0.001}
		g, err := fallback.New(fallback.Config{Routes: []portico.Route{
			{Name: "dear", Model: priced(0.4, nil), Capabilities: dearCaps},
			{Name: "cheap", Model: priced(0.04, nil), Capabilities: cheapCaps},
		}})
		if err != nil {
			t.Fatal(err)
		}
		b := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 1}}, Routes: []portico.Capabilities{dearCaps, cheapCaps}, Steer: steer})
		m := b.Wrap(g)
		var got []string
		for range 3 {
			resp, err := m.Generate(context.Background(), req("t", 50))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, resp.Route)
		}
		want := map[bool]string{true: "[dear dear cheap]", false: "[dear dear dear]"}[steer]
		if s := fmt.Sprint(got); s != want {
			t.Errorf("Steer %v: routes %s, want %s", steer, s, want)
		}
	}
}

// TestSteerWithoutMaxOutputTokens: the same group, requests without
// MaxOutputTokens, so N_max is portico.DefaultMaxTokens (estimates 10.24
// on the dear route, 1.024 on the cheap one) and a day budget of 16. Two
// answers of 5 on the dear route leave 6, below its estimate: Steer lowers
// Contract.MaxCost to 6, and the group below, pricing the same N_max
// (Capabilities.EstimateCost), skips the dear route for the cheap one.
func TestSteerWithoutMaxOutputTokens(t *testing.T) {
	dearCaps := portico.Capabilities{OutputPrice: 0.01}
	cheapCaps := portico.Capabilities{OutputPrice: 0.001}
	g, err := fallback.New(fallback.Config{Routes: []portico.Route{
		{Name: "dear", Model: priced(5, nil), Capabilities: dearCaps},
		{Name: "cheap", Model: priced(0.5, nil), Capabilities: cheapCaps},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 16}}, Routes: []portico.Capabilities{dearCaps, cheapCaps}, Steer: true})
	if got := b.Estimate(req("t", 0)); !near(got, 10.24) {
		t.Fatalf("Estimate = %v, want 10.24 (1024 tokens at 0.01)", got)
	}
	m := b.Wrap(g)
	var got []string
	for range 3 {
		resp, err := m.Generate(context.Background(), req("t", 0))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Route)
	}
	if s := fmt.Sprint(got); s != "[dear dear cheap]" {
		t.Errorf("routes %s, want [dear dear cheap]", s)
	}
}
