package spend

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestRefusalSaysWhichAndWhen: a minute budget of 1 at 0.6 per request
// (600 tokens at 0.001) answered at 0.5: two calls are admitted (0 and
// 0.5 spent before them), the third, at 1.0 spent, is refused until the
// minute ends, and the next minute admits again.
func TestRefusalSaysWhichAndWhen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Limits: []Limit{{Window: Minute, Amount: 1}, {Window: Month, Amount: 100}}, Routes: []portico.Capabilities{perToken}})
		m := b.Wrap(priced(0.5, nil))
		time.Sleep(15 * time.Second)
		for i := range 2 {
			if _, err := m.Generate(t.Context(), req("t1", 600)); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if got := spent(t, b, "t1"); !near(got, 1) {
			t.Fatalf("spent = %v, want 1", got)
		}
		_, err := m.Generate(t.Context(), req("t1", 600))
		var se *SpentError
		if !errors.As(err, &se) || !errors.Is(err, ErrSpent) {
			t.Fatalf("third call = %v, want a SpentError", err)
		}
		if portico.ClassOf(err) != portico.RateLimited || portico.RefuserOf(err) != portico.SpendBudget || !portico.NothingSent(err) {
			t.Errorf("class %v refused by %v nothing sent %v, want rate_limited, spend_budget, true", portico.ClassOf(err), portico.RefuserOf(err), portico.NothingSent(err))
		}
		if got := portico.RetryAfterOf(err); got != 45*time.Second {
			t.Errorf("RetryAfter = %v, want 45s (the minute renews)", got)
		}
		if se.Limit != (Limit{Window: Minute, Amount: 1}) || !se.Renews.Equal(time.Date(2000, 1, 1, 0, 1, 0, 0, time.UTC)) {
			t.Errorf("SpentError = %+v, want the minute budget renewing at 00:01", se)
		}
		want := "portico: rate_limited by spend_budget retry-after 45s: spend: minute budget of 1 spent, renews at 2000-01-01T00:01:00Z"
		if err.Error() != want {
			t.Errorf("Error() = %q, want %q", err.Error(), want)
		}
		if _, err := m.Generate(t.Context(), req("t2", 600)); err != nil {
			t.Errorf("another tenant: %v, want an answer", err)
		}
		time.Sleep(45 * time.Second)
		if _, err := m.Generate(t.Context(), req("t1", 600)); err != nil {
			t.Errorf("next minute: %v, want an answer", err)
		}
		bs, _ := b.Balances(t.Context(), req("t1", 1))
		if !near(bs[0].Spent, 0.5) || !near(bs[1].Spent, 1.5) {
			t.Errorf("balances = %+v, want 0.5 this minute and 1.5 this month", bs)
		}
	})
}

// TestSettle: an answer is charged its Cost, a call that sent nothing
// nothing, a call that may have been sent its reservation (0.6).
func TestSettle(t *testing.T) {
	for _, c := range []struct {
		name string
		m    portico.Model
		want float64
	}{
		{"answer", priced(0.25, nil), 0.25},
		{"not sent", priced(0, &portico.Error{Class: portico.Transient, NotSent: true}), 0},
		{"rejected", priced(0, &portico.Error{Class: portico.Rejected}), 0},
		{"sent 503", priced(0, modeltest.StatusError(503)), 0.6},
		{"ambiguous", priced(0, &portico.Error{Class: portico.Ambiguous}), 0.6},
		{"unclassified", priced(0, errors.New("boom")), 0.6},
	} {
		b := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 10}}, Routes: []portico.Capabilities{perToken}})
		b.Wrap(c.m).Generate(context.Background(), req("t", 600))
		if got := spent(t, b, "t"); !near(got, c.want) {
			t.Errorf("%s: spent %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPanicRefunds: a panic below passes through with the reservation
// given back.
func TestPanicRefunds(t *testing.T) {
	b := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 10}}, Routes: []portico.Capabilities{perToken}})
	m := b.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { panic("below") }))
	func() {
		defer func() {
			if recover() != "below" {
				t.Error("panic did not pass through")
			}
		}()
		m.Generate(context.Background(), req("t", 600))
	}()
	if got := spent(t, b, "t"); got != 0 {
		t.Errorf("spent after a panic = %v, want 0", got)
	}
}

// TestEstimate: the most expensive route that fits, portico.DefaultMaxTokens
// (1024) for a request without N_max, every route when none fits.
func TestEstimate(t *testing.T) {
	small := portico.Capabilities{InputPrice: 0.001, OutputPrice: 0.002, ContextWindow: 1000}
	big := portico.Capabilities{InputPrice: 0.01, OutputPrice: 0.02, ContextWindow: 100}
	b := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 10}}, Routes: []portico.Capabilities{small, big},
		Estimator: portico.EstimatorFunc(func(*portico.Request) int { return 10 })})
	for _, c := range []struct {
		n    int
		want float64
	}{
		{80, 10*0.01 + 80*0.02},     // both fit: the dearer
		{500, 10*0.001 + 500*0.002}, // only small fits
		{2000, 10*0.01 + 2000*0.02}, // none fits: the dearest
		{0, 10*0.01 + 1024*0.02},    // portico.DefaultMaxTokens priced, both fit: the dearer
	} {
		if got := b.Estimate(req("t", c.n)); !near(got, c.want) {
			t.Errorf("Estimate(N_max %d) = %v, want %v", c.n, got, c.want)
		}
	}
}

// TestTiers: a tier's limits replace Limits; a key of no tier without
// Limits has no budget.
func TestTiers(t *testing.T) {
	tier := func(r *portico.Request) string {
		if strings.HasPrefix(r.Identity.ClientKey, "free-") {
			return "free"
		}
		return ""
	}
	b := mustNew(t, Config{Routes: []portico.Capabilities{perToken}, Tier: tier, Tiers: map[string][]Limit{"free": {{Window: Day, Amount: 1}}}})
	m := b.Wrap(priced(1, nil))
	if _, err := m.Generate(context.Background(), req("free-a", 100)); err != nil {
		t.Fatal(err)
	}
	_, err := m.Generate(context.Background(), req("free-a", 100))
	var se *SpentError
	if !errors.As(err, &se) || se.Tier != "free" {
		t.Errorf("second free call = %v, want a SpentError of tier free", err)
	}
	for range 3 {
		if _, err := m.Generate(context.Background(), req("paid", 100)); err != nil {
			t.Errorf("a key without limits: %v, want an answer", err)
		}
	}
}

// TestConfigMistakes: each field that can only be a mistake is named.
func TestConfigMistakes(t *testing.T) {
	routes := []portico.Capabilities{perToken}
	day := []Limit{{Window: Day, Amount: 1}}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Limits: day}, "Config.Routes"},
		{Config{Routes: routes}, "Config.Limits"},
		{Config{Routes: routes, Limits: []Limit{{Window: 9, Amount: 1}}}, "Window"},
		{Config{Routes: routes, Limits: []Limit{{Window: Day, Amount: 1}, {Window: Day, Amount: 2}}}, "two day budgets"},
		{Config{Routes: routes, Limits: []Limit{{Window: Day, Amount: math.NaN()}}}, "Amount"},
		{Config{Routes: routes, Limits: day, Tiers: map[string][]Limit{"a": day}}, "Tiers without"},
		{Config{Routes: routes, Limits: day, Shared: portico.Shared[Store]{FailOpen: true}}, "Instances"},
		{Config{Routes: []portico.Capabilities{{InputPrice: -1}}, Limits: day}, "Routes[0]"},
	} {
		_, err := New(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "spend: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}

// TestMemoryForgetsEndedWindows: the table holds the keys of live windows.
func TestMemoryForgetsEndedWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Limits: []Limit{{Window: Minute, Amount: 1}}, Routes: []portico.Capabilities{perToken}})
		m := b.Wrap(priced(0.1, nil))
		for round := range 3 {
			for i := range 1000 {
				m.Generate(t.Context(), req(string(rune('a'+round))+strings.Repeat("x", i%7)+string(rune(i)), 10))
			}
			time.Sleep(time.Minute)
		}
		if n := b.store.(*Memory).Len(); n > 2000 {
			t.Errorf("keys held after 3 minutes of 1000 keys each = %d, want at most 2000", n)
		}
	})
}

func TestConformance(t *testing.T) {
	wrap := func(t *testing.T, base portico.Model) portico.Model {
		b := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 1e9}}, Routes: []portico.Capabilities{perToken}})
		return b.Wrap(base)
	}
	modeltest.Run(t, wrap)
	modeltest.RunGone(t, wrap)
}
