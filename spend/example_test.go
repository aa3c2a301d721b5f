package spend_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/spend"
)

// A tenant with 1 a day, on a route at 0.001 per output token: requests of
// N_max 600 reserve 0.6 and cost 0.5; the third finds the day spent.
func ExampleBudgets() {
	route := portico.Capabilities{OutputPrice: 0.001}
	b, err := spend.New(spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 1}}, Routes: []portico.Capabilities{route}})
	if err != nil {
		panic(err)
	}
	model := b.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", Cost: 0.5}, nil
	}))
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, MaxOutputTokens: 600,
		Identity: portico.Identity{ClientKey: "tenant-1"}}
	for range 3 {
		_, err := model.Generate(context.Background(), req)
		var spent *spend.SpentError
		switch {
		case errors.As(err, &spent):
			fmt.Println("refused:", spent.Limit.Window, "budget, by", portico.RefuserOf(err))
		case err != nil:
			fmt.Println(err)
		default:
			bs, _ := b.Balances(context.Background(), req)
			fmt.Printf("answered, spent %.1f of %v\n", bs[0].Spent, bs[0].Limit.Amount)
		}
	}
	// Output:
	// answered, spent 0.5 of 1
	// answered, spent 1.0 of 1
	// refused: day budget, by spend_budget
}
