package fallback

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

// a's first chunk reaches the caller at 105 ms, while the hedge to b due
// at 100 ms waits 10 ms for its budget token: the hedge is not sent, its
// token is given back, and b, never called, is no hop of the answer (as
// a hedge the budget or Contract.MaxCost refused is none).
func TestLateHedgeNoHop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("one two three").Response, TTFT: 105 * ms, ChunkGap: time.Second})
		b := after("b", ms)
		bud := &modeltest.Budget{Tokens: -1, RTT: 10 * ms}
		g := MustNew(Config{Routes: []portico.Route{named("a", a), named("b", b)},
			Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: bud})})
		obs := &events{}
		var got []string
		r := idem.Clone()
		r.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
		resp, err := g.Generate(portico.ContextWithObserver(context.Background(), obs), r)
		if err != nil || resp.Route != "a" || strings.Join(got, "") != "one two three" {
			t.Fatalf("Generate = %v, %v, chunks %q, want a's answer", resp, err, got)
		}
		if b.Count() != 0 || len(obs.ev) != 0 || len(bud.Taken()) != 1 || bud.Refunded() != 1 {
			t.Errorf("b called %d times, events %+v, tokens %d taken %d refunded; want b not called, no event, 1 token taken and refunded",
				b.Count(), obs.ev, len(bud.Taken()), bud.Refunded())
		}
		if len(resp.Hops) != 0 {
			t.Errorf("Hops = %q, want none: b was never called", hops(resp.Hops))
		}
	})
}

// The same without streaming: a answers at 105 ms, before the hedge to b
// whose token took 10 ms could be sent: b is not called and no hop.
func TestLateHedgeNoHopUnstreamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := after("a", 105*ms), after("b", ms)
		bud := &modeltest.Budget{Tokens: -1, RTT: 10 * ms}
		g := MustNew(Config{Routes: []portico.Route{named("a", a), named("b", b)},
			Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: bud})})
		obs := &events{}
		resp, err := g.Generate(portico.ContextWithObserver(context.Background(), obs), idem)
		if err != nil || resp.Route != "a" || resp.Text != "a" {
			t.Fatalf("Generate = %v, %v, want a's answer", resp, err)
		}
		if b.Count() != 0 || len(obs.ev) != 0 || len(bud.Taken()) != 1 || bud.Refunded() != 1 || len(resp.Hops) != 0 {
			t.Errorf("b called %d times, events %+v, tokens %d taken %d refunded, hops %q; want b not called, no event, 1 token taken and refunded, no hop",
				b.Count(), obs.ev, len(bud.Taken()), bud.Refunded(), hops(resp.Hops))
		}
	})
}
