package hedge_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

// slowBudget is a budget whose Take costs a round trip, as a shared
// store's does (retry's Budget.Shared over redisstore), and which counts
// the tokens taken and given back.
type slowBudget struct {
	rtt             time.Duration
	taken, refunded atomic.Int32
}

func (b *slowBudget) Take(string, string) bool {
	time.Sleep(b.rtt)
	b.taken.Add(1)
	return true
}

func (b *slowBudget) Refund(string, string) { b.refunded.Add(1) }

// The primary's first chunk reaches the caller at 105 ms, while the
// hedge due at 100 ms waits 10 ms for its budget token: nothing is hedged
// once a chunk reached the caller, so the hedge is not sent, and its
// token is given back.
func TestNoHedgeSentAfterChunkDuringTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first := modeltest.Outcome{Response: modeltest.Answer("one two three").Response, TTFT: 105 * ms, ChunkGap: time.Second}
		fake := modeltest.NewFake(first, modeltest.Outcome{Response: modeltest.Answer("uno").Response, TTFT: 50 * ms})
		obs := &events{}
		b := &slowBudget{rtt: 10 * ms}
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
		if tk, rf := b.taken.Load(), b.refunded.Load(); tk != 1 || rf != 1 {
			t.Errorf("budget: %d taken, %d refunded; want 1 and 1", tk, rf)
		}
	})
}
