package adaptive_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// phase is what a client saw during one phase of the capacity step.
type phase struct {
	goodput float64       // answers per second
	queue   time.Duration // mean queueing latency of the answers (latency - service time)
	limit   float64       // mean cap on calls in flight (0: none)
}

func (p phase) String() string {
	return fmt.Sprintf("%5.1f/s %6.0fms %5.1f", p.goodput, float64(p.queue)/float64(time.Millisecond), p.limit)
}

// simulateStep runs 150 requests per second, each with 2 s of patience,
// against a FIFO server of 20 slots of 100 ms (200 calls per second) that
// drops to 5 slots (50 per second) from 60 s to 120 s and returns to 20 until
// 180 s, through a ratelimit.Limiter in reject mode whose in-flight cap is
// fixed (MaxInFlight) or lim's, or through nothing (fixed 0, lim nil). Each
// phase is measured after its first 10 s.
func simulateStep(t *testing.T, fixed int, lim func() *adaptive.Limit) (got [3]phase, track []int) {
	synctest.Test(t, func(t *testing.T) {
		// One arrival every 6,666,667 ns (150 per second): coprime with the
		// service time and the patience in nanoseconds, so that no arrival,
		// completion or deadline falls at the same instant as another and
		// the run is the same every time.
		const service, arrival = 100 * time.Millisecond, 6666667 * time.Nanosecond
		srv, err := modeltest.NewCapacityServer(modeltest.CapacityConfig{Slots: 20, ServiceTime: service})
		if err != nil {
			t.Fatal(err)
		}
		var m portico.Model = srv
		var l *adaptive.Limit
		if lim != nil || fixed > 0 {
			cfg := ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: fixed}, Key: ratelimit.ByModel}
			if lim != nil {
				l = lim()
				cfg.Concurrency = l
			}
			rl, err := ratelimit.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			m = rl.Wrap(srv)
		}
		start := time.Now()
		var mu sync.Mutex
		var answers [3]int
		var queued [3]time.Duration
		var limits [3]float64
		measured := func(at time.Duration) int { // the phase at, or -1 in a transient
			p := int(at / time.Minute)
			if p > 2 || at%time.Minute < 10*time.Second {
				return -1
			}
			return p
		}
		req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}
		var wg sync.WaitGroup
		samples := [3]int{}
		for k := range 27000 {
			switch k {
			case 9000:
				srv.SetSlots(5)
			case 18000:
				srv.SetSlots(20)
			}
			if l != nil && k%150 == 0 {
				track = append(track, l.Limit()) // once a second
			}
			if p := measured(time.Since(start)); p >= 0 && k%15 == 0 {
				samples[p]++
				switch {
				case l != nil:
					limits[p] += float64(l.Limit())
				case fixed > 0:
					limits[p] += float64(fixed)
				}
			}
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				sent := time.Now()
				if _, err := m.Generate(ctx, req); err != nil {
					return
				}
				if p := measured(sent.Sub(start)); p >= 0 {
					mu.Lock()
					answers[p]++
					queued[p] += time.Since(sent) - service
					mu.Unlock()
				}
			})
			time.Sleep(arrival)
		}
		wg.Wait()
		for p := range got {
			got[p].goodput = float64(answers[p]) / 50
			if answers[p] > 0 {
				got[p].queue = queued[p] / time.Duration(answers[p])
			}
			got[p].limit = limits[p] / float64(samples[p])
		}
	})
	return got, track
}

// TestFigureCapacityStep: the limit tracking a capacity step down (200 to 50
// calls per second at 60 s) and back up (at 120 s), and the goodput and
// queueing latency it gives, against a fixed cap and none. Per phase, after
// its first 10 s: answers per second, mean queueing latency of the answers,
// mean cap.
//
//	           0-60 s: 200/s            60-120 s: 50/s           120-180 s: 200/s
//	no cap     150.0/s    0ms   0.0 |   0.0/s    0ms   0.0 |   0.0/s    0ms   0.0
//	fixed 40   150.0/s    0ms  40.0 |  50.0/s  695ms  40.0 | 150.0/s    0ms  40.0
//	fixed 6     60.0/s    0ms   6.0 |  50.0/s   20ms   6.0 |  60.0/s    0ms   6.0
//	AIMD       150.0/s    0ms  31.0 |  50.0/s   98ms   9.9 | 150.0/s    0ms  31.0
//	Vegas      150.0/s    0ms  32.0 |  50.1/s  129ms  11.5 | 150.0/s    0ms  33.0
//	Gradient2  150.0/s    0ms  30.0 |  50.2/s  271ms  18.6 | 150.0/s    0ms  30.0
//
// Without a cap the server's queue grows by 100 calls a second once the
// capacity falls, every call outlives its caller's patience and the server
// works for nobody until the end (seed 000's metastable failure). A fixed cap
// is right for one capacity only: 40 keeps the goodput but queues 695 ms in
// front of 5 slots; 6 keeps the queue short but caps the goodput at 60/s when
// the capacity is back. The adaptive limits follow both steps within about
// 5 s (AIMD, given a Timeout of twice the service time, from 31 to 9 and
// back; Vegas from 32 to 10; Gradient2 from 30 to 13, its tolerance of 1.5
// and a baseline that drifts up under load leaving the longest queue).
func TestFigureCapacityStep(t *testing.T) {
	for _, c := range []struct {
		name  string
		fixed int
		lim   func() *adaptive.Limit
		want  string
		down  []int // limit at 59, 61, 63, 65, 70 s
		up    []int // limit at 119, 121, 123, 125, 130 s
	}{
		{"no cap", 0, nil, "[150.0/s      0ms   0.0   0.0/s      0ms   0.0   0.0/s      0ms   0.0]", nil, nil},
		{"fixed 40", 40, nil, "[150.0/s      0ms  40.0  50.0/s    695ms  40.0 150.0/s      0ms  40.0]", nil, nil},
		{"fixed 6", 6, nil, "[ 60.0/s      0ms   6.0  50.0/s     20ms   6.0  60.0/s      0ms   6.0]", nil, nil},
		{"AIMD", 0, func() *adaptive.Limit {
			return adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{Timeout: 200 * time.Millisecond}})
		}, "[150.0/s      0ms  31.0  50.0/s     98ms   9.9 150.0/s      0ms  31.0]",
			[]int{31, 21, 11, 9, 11}, []int{11, 21, 31, 31, 31}},
		{"Vegas", 0, func() *adaptive.Limit { return adaptive.MustNew(adaptive.Config{Algorithm: adaptive.Vegas{}}) },
			"[150.0/s      0ms  32.0  50.1/s    129ms  11.5 150.0/s      0ms  33.0]",
			[]int{32, 29, 19, 10, 10}, []int{15, 33, 33, 33, 33}},
		{"Gradient2", 0, func() *adaptive.Limit { return adaptive.MustNew(adaptive.Config{}) },
			"[150.0/s      0ms  30.0  50.2/s    271ms  18.6 150.0/s      0ms  30.0]",
			[]int{30, 24, 14, 13, 14}, []int{24, 30, 30, 30, 30}},
	} {
		got, track := simulateStep(t, c.fixed, c.lim)
		t.Logf("%-10s %v | %v | %v", c.name, got[0], got[1], got[2])
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%s: phases %s, want %s", c.name, s, c.want)
		}
		if track == nil {
			continue
		}
		at := func(s ...int) (out []int) {
			for _, i := range s {
				out = append(out, track[i])
			}
			return out
		}
		down, up := at(59, 61, 63, 65, 70), at(119, 121, 123, 125, 130)
		t.Logf("%-10s limit at 59, 61, 63, 65, 70 s: %v; at 119, 121, 123, 125, 130 s: %v", c.name, down, up)
		if !slices.Equal(down, c.down) || !slices.Equal(up, c.up) {
			t.Errorf("%s: limit %v after the step down and %v after the step up, want %v and %v", c.name, down, up, c.down, c.up)
		}
	}
}
