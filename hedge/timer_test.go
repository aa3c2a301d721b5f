package hedge_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

// hedgeable answers at once, except while slow is set: then its first call
// of each request waits for its context to end and the next one (the hedge)
// answers "hedge".
type hedgeable struct {
	slow  atomic.Bool
	calls atomic.Int32
}

func (h *hedgeable) Generate(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
	if !h.slow.Load() {
		return okResp, nil
	}
	if h.calls.Add(1) == 1 {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return &portico.Response{Text: "hedge"}, nil
}

// TestPooledTimer: the hedge timer a pooled race keeps, made outside any
// bubble, still sends the hedge when reused, and inside a bubble the race
// uses a timer of the bubble's (with the pooled one, the bubble would
// deadlock: nothing of its own could wake it): outside, inside, outside.
func TestPooledTimer(t *testing.T) {
	phase := func(t *testing.T, where string) {
		t.Helper()
		fake := &hedgeable{}
		m := hedge.MustNew(hedge.Config{Delay: time.Millisecond}).Wrap(fake)
		fast := func() { // races that end before their hedge: pooled, timers kept
			for range 100 {
				if _, err := m.Generate(context.Background(), req); err != nil {
					t.Fatalf("%s: fast call: %v", where, err)
				}
			}
		}
		fast()
		fake.slow.Store(true)
		resp, err := m.Generate(context.Background(), req) // takes the pooled race, keeps it
		if err != nil || resp.Text != "hedge" {
			t.Errorf("%s: slow call = %v, %v, want the hedge's answer", where, resp, err)
		}
		fake.slow.Store(false)
		fast() // leaves a pooled race to the next phase
	}
	// One P, so that the bubble's goroutine gets the races pooled outside
	// it (a sync.Pool keeps a race per P).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	phase(t, "outside")
	synctest.Test(t, func(t *testing.T) { phase(t, "in a bubble") })
	phase(t, "outside again")
}
