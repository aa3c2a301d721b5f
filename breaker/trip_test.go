package breaker

import (
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// A custom rule sees, after each failed or slow call and never after a fast
// success, the exact counts of the window, and its reason is the
// transition's. New asks it once first, about the worst window.
func TestCustomTripRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []Counts
		rec := &recorder{}
		b := MustNew(Config{Window: Window{Calls: 4}, SlowCall: time.Second, OnStateChange: rec.hook,
			Trip: func(c Counts) string {
				seen = append(seen, c)
				if c.Failures+c.Slow >= 3 {
					return "three bad"
				}
				return ""
			}})
		T := fail(portico.Transient)
		f := &scripted{queue: []error{T, nil, T, fail(portico.Permanent), nil, nil, nil}}
		m := b.Wrap(f)
		for range 5 { // F S F (ignored) S
			call(t, m)
		}
		f.delay = time.Second
		call(t, m) // a slow success: window S F S S(slow) = the first F left it
		call(t, m) // another slow one: F S S(slow) S(slow)
		want := []Counts{
			{Calls: 4, Failures: 4, Slow: 4, ConsecutiveFailures: math.MaxInt32, Class: portico.Transient}, // New's check: a full window of failures trips
			{Calls: 1, Failures: 1, ConsecutiveFailures: 1, Class: portico.Transient},
			{Calls: 3, Failures: 2, ConsecutiveFailures: 1, Class: portico.Transient},
			{Calls: 4, Failures: 1, Slow: 1},
			{Calls: 4, Failures: 1, Slow: 2},
		}
		if !slices.Equal(seen, want) {
			t.Errorf("Trip saw %+v, want %+v", seen, want)
		}
		if got := rec.path(); !slices.Equal(got, []string{"closed>open:three bad"}) {
			t.Errorf("transitions = %v, want closed>open:three bad", got)
		}
	})
}
