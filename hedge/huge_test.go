package hedge_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

// A Delay means what it says however long: math.MaxInt64 (about 292 years)
// sends no hedge for a slow call, with or without a deadline, rather than
// one at once because start + Delay wrapped around. Outside a synctest
// bubble, whose clock reads before the package's origin and so hides the
// overflow; the call takes 20 ms of real time.
func TestHugeDelay(t *testing.T) {
	for _, deadline := range []time.Duration{0, time.Hour} {
		func() {
			fake := modeltest.NewFake(slow("late", 20*time.Millisecond))
			ctx := context.Background()
			if deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			m := hedge.MustNew(hedge.Config{Delay: math.MaxInt64}).Wrap(fake)
			if resp, err := m.Generate(ctx, req); err != nil || resp.Text != "late" || fake.Count() != 1 {
				t.Errorf("deadline %v: Generate = %v, %v after %d calls, want the answer after 1 call", deadline, resp, err, fake.Count())
			}
		}()
	}
}
