package stack

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/spend"
)

// answersTokens answers with 40 output tokens.
func answersTokens() *modeltest.Fake {
	return modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop,
		Usage: portico.Usage{OutputTokens: 40}}})
}

// TestPresetSpend: through the preset, a tenant's day budget of 1 is
// charged the Cost the group stamps (40 tokens: 0.4 on the dear route,
// 0.04 on the cheap one); with 0.2 left, below the dear route's estimate
// (50 tokens of N_max: 0.5), Steer sends the request to the cheap route;
// without Steer, a budget of 0.3 refuses the second request until
// midnight; a request no route fits reserves nothing.
func TestPresetSpend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dear, cheap := route("dear", answersTokens()), route("cheap", answersTokens())
		dear.Capabilities = portico.Capabilities{OutputPrice: 0.01, ContextWindow: 1000}
		cheap.Capabilities = portico.Capabilities{OutputPrice: 0.001, ContextWindow: 1000}
		build := func(amount float64, steer bool) *Stack {
			s, err := New(Config{Routes: []Route{dear, cheap},
				Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: amount}}, Steer: steer}})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		req := func(n int) *portico.Request {
			return &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}, MaxOutputTokens: n,
				Identity: portico.Identity{ClientKey: "t"}}
		}
		s := build(1, true)
		var routes []string
		for range 4 {
			resp, err := s.Generate(t.Context(), req(50))
			if err != nil {
				t.Fatal(err)
			}
			routes = append(routes, resp.Route)
		}
		bs, _ := s.Spend().Balances(t.Context(), req(50))
		if fmt.Sprint(routes) != "[dear dear cheap cheap]" || fmt.Sprintf("%.2f", bs[0].Spent) != "0.88" {
			t.Errorf("routes %v, spent %v; want [dear dear cheap cheap], 0.88", routes, bs[0].Spent)
		}
		if _, err := s.Generate(t.Context(), req(5000)); portico.ClassOf(err) != portico.Incompatible {
			t.Errorf("a request no route fits = %v, want Incompatible", err)
		}
		if bs, _ := s.Spend().Balances(t.Context(), req(50)); fmt.Sprintf("%.2f", bs[0].Spent) != "0.88" {
			t.Errorf("spent after a request no route fits = %v, want 0.88 (refunded)", bs[0].Spent)
		}

		small := build(0.3, false)
		time.Sleep(time.Hour)
		if _, err := small.Generate(t.Context(), req(50)); err != nil {
			t.Fatal(err)
		}
		_, err := small.Generate(t.Context(), req(50))
		if portico.RefuserOf(err) != portico.SpendBudget || portico.RetryAfterOf(err) != 23*time.Hour {
			t.Errorf("second request over a budget of 0.3 = %v, want refused by the spend budget for 23h", err)
		}
	})
}
