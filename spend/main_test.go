package spend

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// priced answers every call with Cost cost, or fails with err.
func priced(cost float64, err error) portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		if err != nil {
			return nil, err
		}
		return &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Cost: cost}, nil
	})
}

// perToken is a route priced at 0.001 per output token, free input.
var perToken = portico.Capabilities{OutputPrice: 0.001}

// req is a request of tenant with N_max n.
func req(tenant string, n int) *portico.Request {
	return &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, MaxOutputTokens: n,
		Identity: portico.Identity{ClientKey: tenant}}
}

func mustNew(t testing.TB, cfg Config) *Budgets {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spent returns what tenant's first budget has spent now.
func spent(t testing.TB, b *Budgets, tenant string) float64 {
	t.Helper()
	bs, err := b.Balances(context.Background(), req(tenant, 1))
	if err != nil {
		t.Fatal(err)
	}
	return bs[0].Spent
}
