package stack

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/throttle"
)

// The priority figure's load: a route that serves 10 calls at once, each
// taking a time drawn uniformly from 0.5 to 1.5 s, so 10 a second; 1,200
// requests arriving as a Poisson process of 20 a second (2x overload,
// about a minute), each Critical, Default or Sheddable with probability
// 1/4, 1/2 and 1/4, under a deadline of 5 s. The draws come from a seeded
// generator, in the order of arrival, and times at random nanoseconds
// share no instant, so the run is the same every time.
const (
	figDeadline = 5 * time.Second
	figEvery    = 50 * time.Millisecond // mean time between arrivals
	figRequests = 1200
)

// figModel answers after the time the request carries in Extra["service"].
var figModel = portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
	tm := time.NewTimer(r.Extra["service"].(time.Duration))
	defer tm.Stop()
	select {
	case <-tm.C:
		return &portico.Response{Text: "fine", FinishReason: portico.FinishStop}, nil
	case <-ctx.Done():
		return nil, portico.FromContext(ctx)
	}
})

// figRow is what the Critical requests of one run got.
type figRow struct {
	sent, answered int
	p50, p99       time.Duration // latency of the answered, nearest rank
	all            int           // answers of every priority
}

func (r figRow) String() string {
	return fmt.Sprintf("critical %d/%d answered (%.1f%%), p50 %v, p99 %v; all priorities %d/%d answered",
		r.answered, r.sent, 100*float64(r.answered)/float64(r.sent), r.p50, r.p99, r.all, figRequests)
}

// figRun sends the figure's load through a stack of default layers whose
// one route, answering with figModel, setup completes, with the requests'
// priorities when prio is set, else all Default (the same requests are
// Critical either way).
func figRun(t *testing.T, setup func(*Route), prio bool) figRow {
	var row figRow
	synctest.Test(t, func(t *testing.T) {
		a := route("a", figModel)
		setup(&a)
		s, err := New(Config{Routes: []Route{a}, Deadline: figDeadline})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		rnd := rand.New(rand.NewPCG(28, 4))
		for range figRequests {
			time.Sleep(time.Duration(rnd.ExpFloat64() * float64(figEvery)))
			r := hello.Clone()
			r.Extra = map[string]any{"service": time.Second/2 + time.Duration(rnd.Int64N(int64(time.Second)))}
			p := []portico.Priority{portico.Critical, portico.Default, portico.Sheddable, portico.Default}[rnd.IntN(4)]
			critical := p == portico.Critical
			if prio {
				r.Priority = p
			}
			wg.Go(func() {
				t0 := time.Now()
				_, err := s.Generate(context.Background(), r)
				d := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					row.all++
				}
				if critical {
					row.sent++
					if err == nil {
						lat = append(lat, d)
					}
				}
			})
		}
		wg.Wait()
		slices.Sort(lat)
		row.answered = len(lat)
		rank := func(q float64) time.Duration { return lat[int(math.Ceil(q*float64(len(lat))))-1] }
		row.p50, row.p99 = rank(0.5), rank(0.99)
	})
	return row
}

// TestPriorityFigure is issue 28's priority figure: at 2x overload, the
// Critical requests' goodput and latency without priorities (every
// request Default, as before priorities existed) and with them, behind
// an in-flight cap of 10 with a queue of 10 (priority order, aging,
// eviction); behind the cap alone (shed at once), with a reserve of 2
// slots per level when the priorities are used; and with no cap, a
// client-side throttle before a destination that refuses (429) what it
// has no slot for. The throttle moves little (46.5% to 51.0%): the
// destination does not know the priorities, so shedding Sheddable calls
// locally only thins the crowd the Critical ones meet there; a cap or a
// queue in front is what protects them.
func TestPriorityFigure(t *testing.T) {
	limit := func(cfg ratelimit.Config) func(*Route) {
		return func(a *Route) { a.Limiter = &cfg }
	}
	capped := ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: 10}}
	queued := capped
	queued.Queue.Size = 10
	reserved := capped
	reserved.Reserve = 2
	for _, tc := range []struct {
		name    string
		off, on func(*Route)
		want    [2]figRow // without, with
	}{
		{"queue", limit(queued), limit(queued), [2]figRow{
			{sent: 288, answered: 163, p50: 1857668090, p99: 2472833895, all: 647},
			{sent: 288, answered: 288, p50: 1138624775, p99: 1817013922, all: 649},
		}},
		{"no queue", limit(capped), limit(reserved), [2]figRow{
			{sent: 288, answered: 136, p50: 938192842, p99: 1487499617, all: 587},
			{sent: 288, answered: 257, p50: 989966581, p99: 1487499617, all: 501},
		}},
		{"throttle", throttled, throttled, [2]figRow{
			{sent: 288, answered: 134, p50: 938192842, p99: 1482194542, all: 584},
			{sent: 288, answered: 147, p50: 969950280, p99: 1487499617, all: 571},
		}},
	} {
		off, on := figRun(t, tc.off, false), figRun(t, tc.on, true)
		t.Logf("%s, without priorities: %v", tc.name, off)
		t.Logf("%s, with priorities:    %v", tc.name, on)
		if got := [2]figRow{off, on}; got != tc.want {
			t.Errorf("%s: without, with = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// throttled makes the route a destination that refuses with a 429 what
// finds its 10 slots taken, behind a client-side throttle (its draws
// seeded) and neither retry nor breaker, which would answer the 429s in
// their own ways.
func throttled(a *Route) {
	var busy atomic.Int32
	a.Model = portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
		if busy.Add(1) > 10 {
			busy.Add(-1)
			return nil, &portico.Error{Class: portico.RateLimited, Reason: "429"}
		}
		defer busy.Add(-1)
		return figModel.Generate(ctx, r)
	})
	var mu sync.Mutex
	rnd := rand.New(rand.NewPCG(28, 5))
	a.Throttle = &throttle.Config{Rand: func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return rnd.Float64()
	}}
	a.Skip = SkipRetry | SkipBreaker
}
