package portico_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// counter is a CountFunc answering 1000 per request, or failing, or
// waiting for ctx, counting its calls.
type counter struct {
	calls int
	fail  error
	hang  bool
}

func (c *counter) count(ctx context.Context, req *portico.Request) (int, error) {
	c.calls++
	if c.hang {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	if c.fail != nil {
		return 0, c.fail
	}
	return 1000 + len(req.Messages[0].Content[0].Text), nil
}

func counted(t *testing.T, c *counter, cfg portico.Counting) *portico.Counted {
	t.Helper()
	e, err := portico.NewCounted(c.count, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCountedCaches: a request counted before is answered from the
// cache; with Cache 2, a third request evicts the oldest.
func TestCountedCaches(t *testing.T) {
	c := &counter{}
	e := counted(t, c, portico.Counting{Cache: 2})
	a, b, d := prompt("m"), prompt("m"), prompt("m")
	b.Messages[0].Content[0].Text += "b"
	d.Messages[0].Content[0].Text += "dd"
	for _, s := range []struct {
		req   *portico.Request
		want  int
		calls int
	}{
		{a, 1400, 1},
		{prompt("m"), 1400, 1}, // the same request: cached
		{b, 1401, 2},
		{a, 1400, 2},
		{d, 1402, 3}, // evicts a
		{b, 1401, 3},
		{a, 1400, 4}, // counted again
	} {
		if got := e.EstimateInputTokens(s.req); got != s.want || c.calls != s.calls {
			t.Errorf("estimate = %d after %d counts, want %d after %d", got, c.calls, s.want, s.calls)
		}
	}
	if got := e.EstimateInputTokens(prompt("other model")); got != 1400 || c.calls != 5 {
		t.Errorf("another model: %d after %d counts, want 1400 after 5 (its own key)", got, c.calls)
	}
}

// TestCountedFallsBack: a count that fails or outlasts Timeout gives the
// Fallback's estimate (104) after at most the Timeout, and no count is
// asked for during the Backoff that follows.
func TestCountedFallsBack(t *testing.T) {
	for _, c := range []*counter{{fail: errors.New("503")}, {hang: true}} {
		synctest.Test(t, func(t *testing.T) {
			e := counted(t, c, portico.Counting{Timeout: 200 * time.Millisecond, Backoff: time.Second})
			start := time.Now()
			if got := e.EstimateInputTokens(prompt("m")); got != 104 {
				t.Errorf("failed count: estimate = %d, want the fallback's 104", got)
			}
			want := time.Duration(0)
			if c.hang {
				want = 200 * time.Millisecond
			}
			if waited := time.Since(start); waited != want {
				t.Errorf("waited %v, want %v", waited, want)
			}
			time.Sleep(999 * time.Millisecond)
			if got := e.EstimateInputTokens(prompt("m")); got != 104 || c.calls != 1 {
				t.Errorf("during the backoff: %d after %d counts, want 104 after 1", got, c.calls)
			}
			time.Sleep(time.Second)
			c.fail, c.hang = nil, false
			if got := e.EstimateInputTokens(prompt("m")); got != 1400 || c.calls != 2 {
				t.Errorf("after the backoff: %d after %d counts, want 1400 after 2", got, c.calls)
			}
		})
	}
}

// TestCountingMistakes: each field that can only be a mistake is named.
func TestCountingMistakes(t *testing.T) {
	count := (&counter{}).count
	for _, c := range []struct {
		count portico.CountFunc
		cfg   portico.Counting
		want  string
	}{
		{nil, portico.Counting{}, "nil CountFunc"},
		{count, portico.Counting{Timeout: -1}, "Timeout"},
		{count, portico.Counting{Backoff: -1}, "Backoff"},
		{count, portico.Counting{Cache: -1}, "Cache"},
	} {
		if _, err := portico.NewCounted(c.count, c.cfg); err == nil || !strings.HasPrefix(err.Error(), "portico: Counting") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewCounted(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}

// TestCountedConcurrent: 8 goroutines estimating 4 requests over a cache
// of 2 each get their request's count; run with -race.
func TestCountedConcurrent(t *testing.T) {
	e, err := portico.NewCounted(func(_ context.Context, req *portico.Request) (int, error) {
		return len(req.Messages[0].Content[0].Text), nil
	}, portico.Counting{Cache: 2})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				req := prompt("m")
				req.Messages[0].Content[0].Text += strings.Repeat("y", (g+i)%4)
				if got, want := e.EstimateInputTokens(req), 400+(g+i)%4; got != want {
					t.Errorf("estimate = %d, want %d", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
