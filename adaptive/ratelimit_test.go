package adaptive_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// A Limit is a ratelimit.Concurrency.
var _ ratelimit.Concurrency = (*adaptive.Limit)(nil)

var req = &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}

func limiter(t testing.TB, cfg ratelimit.Config) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A ratelimit.Limiter with a Limit as its Concurrency sheds the calls beyond
// the limit with ErrOverloaded, and the limit learns from the calls it lets
// through: a destination answering 429 brings an AIMD limit from 4 down to
// its minimum of 1, in windows of one call.
func TestDrivesRatelimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{Backoff: 0.5}, Initial: 4, Window: 1})
		slow := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("ok").Response, Latency: time.Second})
		m := limiter(t, ratelimit.Config{Concurrency: lim}).Wrap(slow)
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Go(func() { _, errs[i] = m.Generate(context.Background(), req) })
		}
		wg.Wait()
		shed := 0
		for _, err := range errs {
			if errors.Is(err, ratelimit.ErrOverloaded) {
				shed++
			}
		}
		if shed != 2 || slow.Count() != 4 {
			t.Errorf("6 calls at a limit of 4: %d shed, %d reached the model, want 2 and 4", shed, slow.Count())
		}
		failing := limiter(t, ratelimit.Config{Concurrency: lim}).Wrap(modeltest.NewFake(modeltest.Fail(modeltest.RateLimitError(0))))
		for range 3 {
			failing.Generate(context.Background(), req)
		}
		if got := lim.Limit(); got != 1 {
			t.Errorf("Limit() after three 429s = %d, want 1", got)
		}
	})
}

// A ratelimit.Limiter driven by a Limit keeps the Model contract.
func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
		return limiter(t, ratelimit.Config{Concurrency: adaptive.MustNew(adaptive.Config{Max: 1000, Initial: 1000})}).Wrap(base)
	})
}

// The happy path of a Limiter driven by a Limit allocates nothing.
func TestAllocs(t *testing.T) {
	resp := &portico.Response{Text: "ok"}
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil })
	m := limiter(t, ratelimit.Config{Concurrency: adaptive.MustNew(adaptive.Config{})}).Wrap(ok)
	if n := testing.AllocsPerRun(1000, func() { m.Generate(context.Background(), req) }); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}
