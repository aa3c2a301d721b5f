package fallback

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/validate"
)

// TestCostCountsRejectedAnswers: the primary's answer is billed (1000 input,
// 100 output tokens) but refused by validate; the secondary answers. The
// Response's Cost is the secondary's price for its usage plus the primary's
// for what it billed, as the root doc of Response.Cost says: summed over every
// call the group made. It was the secondary's alone.
func TestCostCountsRejectedAnswers(t *testing.T) {
	schema := &portico.Schema{Name: "obj", JSON: []byte(`{"type":"object"}`)}
	req := &portico.Request{Messages: simple.Messages, Schema: schema}
	bad := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{
		Text: "not json", FinishReason: portico.FinishStop,
		Usage: portico.Usage{InputTokens: 1000, OutputTokens: 100},
	}})
	good := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{
		Text: `{"a":1}`, FinishReason: portico.FinishStop,
		Usage: portico.Usage{InputTokens: 1000, OutputTokens: 20},
	}})
	v := validate.MustNew(validate.Config{})
	// Prices per token that are exact in binary, so the sum is exact.
	primaryCaps := portico.Capabilities{Schema: portico.SchemaJSON, InputPrice: 0.25, OutputPrice: 2}
	secondaryCaps := portico.Capabilities{Schema: portico.SchemaJSON, InputPrice: 0.125, OutputPrice: 0.5}
	g := MustNew(Config{Routes: []portico.Route{
		{Name: "primary", Model: v.Wrap(bad), Capabilities: primaryCaps},
		{Name: "secondary", Model: v.Wrap(good), Capabilities: secondaryCaps},
	}})
	resp, err := g.Generate(context.Background(), req)
	if err != nil || resp.Route != "secondary" || len(resp.Hops) != 1 {
		t.Fatalf("Generate = %+v, %v; want the secondary's answer after one hop", resp, err)
	}
	// primary: 1000*0.25 + 100*2 = 450; secondary: 1000*0.125 + 20*0.5 = 135.
	if want := 585.0; resp.Cost != want {
		t.Errorf("Cost = %v, want %v (135 answered + 450 billed and rejected)", resp.Cost, want)
	}

	// An inner layer's own Cost is kept, and the billed hop still added.
	priced := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
		resp, err := good.Generate(ctx, r)
		if err == nil {
			resp.Cost = 1000
		}
		return resp, err
	})
	g = MustNew(Config{Routes: []portico.Route{
		{Name: "primary", Model: v.Wrap(bad), Capabilities: primaryCaps},
		{Name: "secondary", Model: priced, Capabilities: secondaryCaps},
	}})
	if resp, err = g.Generate(context.Background(), req); err != nil || resp.Cost != 1450 {
		t.Errorf("Generate with an inner Cost = %+v, %v; want Cost 1450", resp, err)
	}
}
