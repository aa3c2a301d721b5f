package adaptive_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/ratelimit"
)

var _ ratelimit.Concurrency = (*adaptive.Limit)(nil)

const ms = time.Millisecond

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  adaptive.Config
		name string
	}{
		{adaptive.Config{Min: -1}, "Min"},
		{adaptive.Config{Min: 10, Max: 5}, "Min"},
		{adaptive.Config{Window: 1001}, "Window"},
		{adaptive.Config{Algorithm: adaptive.AIMD{Backoff: 0.3}}, "AIMD.Backoff"},
		{adaptive.Config{Algorithm: adaptive.AIMD{Backoff: 1}}, "AIMD.Backoff"},
		{adaptive.Config{Algorithm: adaptive.AIMD{Timeout: -ms}}, "AIMD.Timeout"},
		{adaptive.Config{Algorithm: adaptive.Vegas{ProbeMultiplier: -1}}, "Vegas.ProbeMultiplier"},
		{adaptive.Config{Algorithm: adaptive.Gradient2{Tolerance: 0.9}}, "Gradient2.Tolerance"},
		{adaptive.Config{Algorithm: adaptive.Gradient2{Smoothing: 1.5}}, "Gradient2.Smoothing"},
		{adaptive.Config{Algorithm: adaptive.Gradient2{QueueSize: -1}}, "Gradient2.QueueSize"},
		{adaptive.Config{Algorithm: adaptive.Gradient2{LongWindow: -1}}, "Gradient2.LongWindow"},
	} {
		_, err := adaptive.New(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "adaptive: ") || !strings.Contains(err.Error(), c.name) {
			t.Errorf("New(%+v) = %v, want an error starting with \"adaptive: \" naming %s", c.cfg, err, c.name)
		}
	}
	for _, c := range []struct {
		cfg  adaptive.Config
		want int
	}{{adaptive.Config{}, 20}, {adaptive.Config{Initial: 500}, 200}, {adaptive.Config{Initial: 3, Min: 5}, 5}} {
		if got := adaptive.MustNew(c.cfg).Limit(); got != c.want {
			t.Errorf("New(%+v).Limit() = %d, want %d", c.cfg, got, c.want)
		}
	}
}

// The limit moves once per Window samples, on their mean latency, the most
// in flight and whether one dropped; ignored classes are not samples.
func TestWindows(t *testing.T) {
	l := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{Timeout: 199 * ms}, Window: 2})
	steps := []struct {
		latency  time.Duration
		inflight int
		class    portico.Class
		want     int
	}{
		{100 * ms, 10, portico.OK, 20},
		{290 * ms, 9, portico.OK, 21}, // mean 195 ms, 10 of 20 in flight: +1
		{50 * ms, 20, portico.Canceled, 21},
		{50 * ms, 20, portico.Permanent, 21},
		{50 * ms, 20, portico.Rejected, 21}, // three ignored: no window yet
		{100 * ms, 5, portico.OK, 21},
		{300 * ms, 5, portico.OK, 18}, // mean 200 ms > 199: a drop, floor(21*0.9)
		{10 * ms, 8, portico.InvalidResponse, 18},
		{10 * ms, 8, portico.OK, 18}, // 9 of 18 in flight: held
		{10 * ms, 9, portico.OK, 18},
		{10 * ms, 9, portico.Deadline, 18},  // ignored: the caller's deadline
		{10 * ms, 9, portico.Transient, 16}, // a drop
		{10 * ms, 9, portico.Ambiguous, 16},
		{10 * ms, 9, portico.RateLimited, 14},
	}
	for i, s := range steps {
		l.Done(s.latency, s.inflight, s.class)
		if got := l.Limit(); got != s.want {
			t.Fatalf("after sample %d (%v, %d, %v): Limit() = %d, want %d", i, s.latency, s.inflight, s.class, got, s.want)
		}
	}
}

// Min and Max bound the limit.
func TestBounds(t *testing.T) {
	l := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{}, Initial: 2, Min: 2, Max: 3, Window: 1})
	for range 5 {
		l.Done(ms, 1, portico.Transient)
	}
	if got := l.Limit(); got != 2 {
		t.Errorf("after drops: Limit() = %d, want Min 2", got)
	}
	for range 5 {
		l.Done(ms, 3, portico.OK)
	}
	if got := l.Limit(); got != 3 {
		t.Errorf("after growth: Limit() = %d, want Max 3", got)
	}
}

// Concurrent samples: no window is lost or counted twice, so with a window
// of 10 and each update adding one, 8 goroutines making 1,000 samples each
// make between 1 and 800 updates, and the limit stays in bounds.
func TestConcurrentSamples(t *testing.T) {
	l := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{}, Initial: 20, Max: 10000})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				l.Done(ms, 10000, portico.OK)
			}
		})
	}
	wg.Wait()
	if got := l.Limit(); got <= 20 || got > 820 {
		t.Errorf("Limit() after 8000 samples = %d, want in (20, 820]", got)
	}
	seq := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{}, Initial: 20, Max: 10000})
	for range 8000 {
		seq.Done(ms, 10000, portico.OK)
	}
	if got := seq.Limit(); got != 820 {
		t.Errorf("Limit() after 8000 samples from one goroutine = %d, want 820 (one update per 10)", got)
	}
}

// Done allocates nothing, a window's update included.
func TestDoneAllocs(t *testing.T) {
	l := adaptive.MustNew(adaptive.Config{})
	if n := testing.AllocsPerRun(1000, func() { l.Done(100*ms, 20, portico.OK) }); n != 0 {
		t.Errorf("Done: %v allocations, want 0", n)
	}
}
