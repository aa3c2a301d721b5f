package hedge_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

// TestCoarseClock: outside a bubble a race starts from the scheduler's
// last reading of the clock, so its hedge goes up to one tick late, never
// early. On the bubble's clock (a test hook): the scheduler starts with
// the first request at 0 (its tick, for 50 ms, is 3.125 ms); a request at
// 2 ms starts from the reading at 0 and is due a tick after 50 ms, plus
// its slot's holder count in ns (see scheduler.due; 1 or 2, as the second
// request takes the first's slot or another): its hedge goes at 53.125001
// or 53.125002 ms, 1.125 ms and that after its own start plus the delay.
func TestCoarseClock(t *testing.T) {
	for _, c := range []struct{ d, want time.Duration }{
		{50 * ms, 3125 * time.Microsecond}, {time.Millisecond, 100 * time.Microsecond}, {time.Second, 5 * ms},
	} {
		if got := hedge.Tick(c.d); got != c.want {
			t.Errorf("Tick(%v) = %v, want %v", c.d, got, c.want)
		}
	}
	hedge.CoarseInBubble(true)
	defer hedge.CoarseInBubble(false)
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		fake := modeltest.NewFake(modeltest.Answer("first"), slow("late", 10*time.Second), modeltest.Answer("hedge"))
		obs := &events{}
		m := hedge.MustNew(hedge.Config{Delay: 50 * ms}).Wrap(fake)
		ctx := portico.ContextWithObserver(context.Background(), obs)
		if _, err := m.Generate(ctx, req); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * ms)
		resp, err := m.Generate(ctx, req)
		took := time.Since(t0) - 2*ms
		holder := took - 51125*time.Microsecond
		if err != nil || resp.Text != "hedge" || holder != 1 && holder != 2 {
			t.Errorf("Generate = %v, %v after %v, want the hedge's answer after 51.125ms and 1 or 2 ns", resp, err, took)
		}
		if len(obs.ev) != 1 || obs.ev[0].Delay != 53125*time.Microsecond+holder {
			t.Errorf("events %+v, want one hedge 53.125ms and %v after the scheduler's reading", obs.ev, holder)
		}
		time.Sleep(time.Second) // the scheduler stops after idle ticks
	})
}

// TestManyRaces: more races at once than the scheduler has slots take a
// timer each; every one is hedged after its delay.
func TestManyRaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		m := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			if !r.Hedge { // the first attempt waits to be canceled
				<-ctx.Done()
				return nil, portico.FromContext(ctx)
			}
			time.Sleep(10 * ms)
			return &portico.Response{Text: "hedge"}, nil
		})
		h := hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(m)
		t0 := time.Now()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				resp, err := h.Generate(context.Background(), req)
				if took := time.Since(t0); err != nil || resp.Text != "hedge" || took != 110*ms {
					t.Errorf("Generate = %v, %v after %v, want the hedge's answer after 110ms", resp, err, took)
				}
			})
		}
		wg.Wait()
	})
}
