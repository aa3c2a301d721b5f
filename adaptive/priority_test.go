package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/ratelimit"
)

// When a Limit falls, the Limiter it drives holds the calls at its edge
// by priority: four Default calls in flight (1 to 4 s) at a limit of 4,
// two Sheddable and one Default call queued; the destination's 429s
// halve the limit to 2. A Critical call then finds the queue full and
// sheds the last Sheddable one; as the four end, the freed slots go to
// the Critical call (when 1 is in flight, at 3 s), then the Default one,
// then the Sheddable one.
func TestPriorityAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{Backoff: 0.5}, Initial: 4, Window: 10})
		var mu sync.Mutex
		var order []string
		t0 := time.Now()
		dest := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			mu.Lock()
			order = append(order, fmt.Sprintf("%s@%v", r.Extra["name"], time.Since(t0)))
			mu.Unlock()
			time.Sleep(r.Extra["took"].(time.Duration))
			return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
		})
		m := limiter(t, ratelimit.Config{Concurrency: lim, Queue: ratelimit.Queue{Size: 3}}).Wrap(dest)
		var wg sync.WaitGroup
		send := func(name string, p portico.Priority, took time.Duration, want error) {
			r := req.Clone()
			r.Priority, r.Extra = p, map[string]any{"name": name, "took": took}
			wg.Go(func() {
				if _, err := m.Generate(context.Background(), r); !errors.Is(err, want) {
					t.Errorf("%s: %v, want %v", name, err, want)
				}
			})
			synctest.Wait()
		}
		for i := range 4 {
			send(fmt.Sprint("d", i+1), portico.Default, time.Duration(i+1)*time.Second, nil)
		}
		send("s1", portico.Sheddable, 1500*time.Millisecond, nil)
		send("s2", portico.Sheddable, 1500*time.Millisecond, ratelimit.ErrOverloaded)
		send("d5", portico.Default, 1500*time.Millisecond, nil)
		for range 10 { // a window of 429s
			lim.Done(0, 4, portico.RateLimited)
		}
		if got := lim.Limit(); got != 2 {
			t.Fatalf("Limit() after a window of 429s = %d, want 2", got)
		}
		send("c", portico.Critical, 1500*time.Millisecond, nil)
		wg.Wait()
		want := "d1@0s d2@0s d3@0s d4@0s c@3s d5@4s s1@4.5s"
		if got := strings.Join(order, " "); got != want {
			t.Errorf("served %q, want %q", got, want)
		}
	})
}
