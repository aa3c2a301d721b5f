package adaptive_test

import (
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
)

// A drop's latency is not the destination's latency: an outage whose calls
// fail fast (503s in 5 ms from a route that answers in 100 ms) must not
// teach Vegas a no-load latency of 5 ms, nor pull Gradient2's baseline down,
// or the healthy route is judged queued once it is back and the limit falls
// below what it served before the outage (Vegas to 6 of 26 for 25 s in the
// preset, shedding healthy calls). As Netflix's WindowedLimit
// (addDroppedSample), a drop marks its window without adding its latency.
func TestDropLatencyIsNotASample(t *testing.T) {
	for _, alg := range []adaptive.Algorithm{adaptive.Vegas{ProbeMultiplier: 1000}, adaptive.Gradient2{}} {
		l := adaptive.MustNew(adaptive.Config{Algorithm: alg})
		feed := func(windows int, latency time.Duration, class portico.Class) {
			for range windows * adaptive.DefaultWindow {
				l.Done(latency, l.Limit(), class)
			}
		}
		feed(30, 100*time.Millisecond, portico.OK)
		before := l.Limit()
		feed(20, 5*time.Millisecond, portico.Transient) // the outage: fast 503s
		feed(20, 100*time.Millisecond, portico.OK)      // back, as fast as before
		if got := l.Limit(); got < before {
			t.Errorf("%T: limit %d before a fast-failing outage, %d after 20 healthy windows; want at least %d", alg, before, got, before)
		}
	}
}
