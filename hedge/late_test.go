package hedge_test

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

// The primary's first chunk reaches the caller at 105 ms, while the
// hedge due at 100 ms waits 10 ms for its budget token: nothing is hedged
// once a chunk reached the caller, so the hedge is not sent, and its
// token is given back.
func TestNoHedgeSentAfterChunkDuringTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first := modeltest.Outcome{Response: modeltest.Answer("one two three").Response, TTFT: 105 * ms, ChunkGap: time.Second}
		fake := modeltest.NewFake(first, modeltest.Outcome{Response: modeltest.Answer("uno").Response, TTFT: 50 * ms})
		obs := &events{}
		b := &modeltest.Budget{Tokens: -1, RTT: 10 * ms}
		var got []string
		r := req.Clone()
		r.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
		m := hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: b}).Wrap(fake)
		resp, err := m.Generate(portico.ContextWithObserver(context.Background(), obs), r)
		if err != nil || resp.Text != "one two three" || strings.Join(got, "") != "one two three" {
			t.Fatalf("Generate = %v, %v, chunks %q, want the first attempt's answer", resp, err, got)
		}
		if fake.Count() != 1 || len(obs.ev) != 0 {
			t.Errorf("%d calls, events %+v; want 1 call and no hedge sent", fake.Count(), obs.ev)
		}
		if tk, rf := len(b.Taken()), b.Refunded(); tk != 1 || rf != 1 {
			t.Errorf("budget: %d taken, %d refunded; want 1 and 1", tk, rf)
		}
	})
}

// The same without streaming: the first attempt answers at 105 ms, while
// the hedge due at 100 ms waits 10 ms for its token. The race is won
// before the hedge is sent: it is not, and its token is given back.
func TestNoHedgeSentAfterAnswerDuringTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := modeltest.NewFake(slow("first", 105*ms), slow("hedge", ms))
		obs := &events{}
		b := &modeltest.Budget{Tokens: -1, RTT: 10 * ms}
		m := hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: b}).Wrap(fake)
		start := time.Now()
		resp, err := m.Generate(portico.ContextWithObserver(context.Background(), obs), req)
		if err != nil || resp.Text != "first" || time.Since(start) != 110*ms {
			t.Fatalf("Generate = %v, %v after %v, want the first attempt's answer after 110ms (the token's wait)", resp, err, time.Since(start))
		}
		if fake.Count() != 1 || len(obs.ev) != 0 {
			t.Errorf("%d calls, events %+v; want 1 call and no hedge sent", fake.Count(), obs.ev)
		}
		if tk, rf := len(b.Taken()), b.Refunded(); tk != 1 || rf != 1 {
			t.Errorf("budget: %d taken, %d refunded; want 1 and 1", tk, rf)
		}
	})
}
