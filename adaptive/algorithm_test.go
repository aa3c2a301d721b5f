package adaptive

import (
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestAIMD(t *testing.T) {
	for _, c := range []struct {
		name  string
		a     AIMD
		limit float64
		w     window
		want  float64
	}{
		{"grows when used", AIMD{}, 20, window{rtt: 100 * ms, inflight: 10}, 21},
		{"app-limited holds", AIMD{}, 20, window{rtt: 100 * ms, inflight: 9}, 20},
		{"drop backs off", AIMD{}, 20, window{rtt: 100 * ms, inflight: 20, dropped: true}, 18},
		{"backoff floors", AIMD{}, 5, window{dropped: true}, 4},
		{"own backoff", AIMD{Backoff: 0.5}, 21, window{dropped: true}, 10},
		{"slow is a drop", AIMD{Timeout: 200 * ms}, 20, window{rtt: 201 * ms, inflight: 20}, 18},
		{"at the timeout is not", AIMD{Timeout: 200 * ms}, 20, window{rtt: 200 * ms, inflight: 20}, 21},
	} {
		if got := c.a.update(&state{}, c.limit, c.w); got != c.want {
			t.Errorf("%s: AIMD.update(%v, %+v) = %v, want %v", c.name, c.limit, c.w, got, c.want)
		}
	}
}

func TestGradient2(t *testing.T) {
	g := Gradient2{}
	var st state
	// Steady latency: the baseline is the latency, the gradient 1, and each
	// window adds Smoothing*QueueSize = 0.8.
	limit := 20.0
	for range 5 {
		limit = g.update(&st, limit, window{rtt: 100 * ms, inflight: 20})
	}
	if !near(limit, 24) || st.long != float64(100*ms) {
		t.Fatalf("after 5 steady windows: limit %v, baseline %v, want 24 and 100ms", limit, time.Duration(st.long))
	}
	// Latency doubles: the mean baseline becomes 600/6 = 116.7 ms, the
	// gradient 1.5*116.7/200 = 0.875, the estimate 24*0.875 + 4 = 25, and the
	// smoothed limit 0.8*24 + 0.2*25 = 24.2.
	limit = g.update(&st, limit, window{rtt: 200 * ms, inflight: 24})
	if want := 24.2; !near(limit, want) {
		t.Errorf("after a window at twice the latency: limit %v, want %v", limit, want)
	}
	// Four times a settled baseline: the gradient floors at 0.5, so
	// 0.8*24.2 + 0.2*(12.1+4).
	st = state{long: float64(100 * ms), longCount: 10}
	limit = g.update(&st, 24.2, window{rtt: 400 * ms, inflight: 24})
	if want := 0.8*24.2 + 0.2*(24.2*0.5+4); !near(limit, want) {
		t.Errorf("at four times the baseline: limit %v, want %v", limit, want)
	}
	// A baseline more than twice the latency (after a long overload) decays
	// by 5% per window on top of the average.
	st = state{long: float64(300 * ms), longCount: 10}
	g.update(&st, 20, window{rtt: 100 * ms, inflight: 20})
	if want := (300*(1-2.0/601) + 100*2.0/601) * 0.95 * float64(ms); !near(st.long, want) {
		t.Errorf("baseline after a fast window = %v, want %v", time.Duration(st.long), time.Duration(want))
	}
	// App-limited: the limit holds whatever the latency.
	if got := g.update(&st, 30, window{rtt: 100 * ms, inflight: 14}); got != 30 {
		t.Errorf("with 14 of 30 in flight: limit %v, want 30 (held)", got)
	}
	// No latency: nothing learnt.
	if got := g.update(&st, 30, window{inflight: 30}); got != 30 {
		t.Errorf("with no latency: limit %v, want 30", got)
	}
}

func TestVegas(t *testing.T) {
	v := Vegas{}
	st := state{probeJitter: 1} // next probe after 30*limit windows
	// The first window sets the no-load latency.
	if got := v.update(&st, 20, window{rtt: 100 * ms, inflight: 20}); got != 20 || st.noLoad != 100*ms {
		t.Fatalf("first window: limit %v, noLoad %v, want 20 and 100ms", got, st.noLoad)
	}
	for _, c := range []struct {
		name  string
		limit float64
		w     window
		want  float64
	}{
		// queue = ceil(20*(1-100/105)) = 1 <= t = 1: add 6t.
		{"no queue", 20, window{rtt: 105 * ms, inflight: 20}, 26},
		// queue = ceil(20*(1-100/110)) = 2 < 3t: add t.
		{"short queue", 20, window{rtt: 110 * ms, inflight: 20}, 21},
		// queue = ceil(20*(1-100/120)) = 4, within [3t, 6t]: hold.
		{"sweet spot", 20, window{rtt: 120 * ms, inflight: 20}, 20},
		// queue = ceil(20*(1-100/200)) = 10 > 6t: remove t.
		{"long queue", 20, window{rtt: 200 * ms, inflight: 20}, 19},
		// At 150, t = 2: queue = ceil(150*(1-100/101)) = 2 <= t: add 12.
		{"larger limit", 150, window{rtt: 101 * ms, inflight: 150}, 162},
		{"drop", 20, window{rtt: 105 * ms, inflight: 20, dropped: true}, 19},
		{"app-limited", 20, window{rtt: 105 * ms, inflight: 9}, 20},
	} {
		s := st
		if got := v.update(&s, c.limit, c.w); got != c.want {
			t.Errorf("%s: Vegas.update(%v, %+v) = %v, want %v", c.name, c.limit, c.w, got, c.want)
		}
	}
	// A faster window lowers the no-load latency and holds the limit.
	s := st
	if got := v.update(&s, 20, window{rtt: 80 * ms, inflight: 20}); got != 20 || s.noLoad != 80*ms {
		t.Errorf("faster window: limit %v, noLoad %v, want 20 and 80ms", got, s.noLoad)
	}
	// The probe: after 30*limit*jitter windows the no-load latency is reset to
	// the window's, so a baseline that rose for good is relearnt.
	s = state{noLoad: 100 * ms, probeJitter: 0.5, probeCount: 299}
	if got := v.update(&s, 20, window{rtt: 300 * ms, inflight: 20}); got != 20 || s.noLoad != 300*ms || s.probeCount != 0 {
		t.Errorf("probe: limit %v, noLoad %v, count %d, want 20, 300ms, 0", got, s.noLoad, s.probeCount)
	}
	if s.probeJitter < 0.5 || s.probeJitter >= 1 {
		t.Errorf("next probe jitter %v, want in [0.5, 1)", s.probeJitter)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
