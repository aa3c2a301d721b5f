package throttle

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
)

// TestCriticalAtLargestK: with K = math.MaxFloat64 a Critical call's
// multiplier 2K would be +Inf and its probability NaN (Inf*0 accepts),
// which rejected every Critical call. It is capped at MaxFloat64: after
// 100 failures a Critical call is rejected with MaxRejection (0.5), so a
// draw of 0.6 lets it through and one of 0.4 rejects it at 0.5.
func TestCriticalAtLargestK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := 0.99 // above the cap: nothing rejected while the window fills
		sent := 0
		dest := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			sent++
			return nil, &portico.Error{Class: portico.Transient}
		})
		th := MustNew(Config{K: math.MaxFloat64, MaxRejection: 0.5, Rand: func() float64 { return u }})
		m := th.Wrap(dest)
		for range 100 {
			m.Generate(t.Context(), &portico.Request{Model: "m"})
		}
		crit := &portico.Request{Model: "m", Priority: portico.Critical}
		u = 0.6
		if m.Generate(t.Context(), crit); sent != 101 {
			t.Errorf("Critical call with draw 0.6: %d calls sent, want 101", sent)
		}
		u = 0.4
		_, err := m.Generate(t.Context(), crit)
		var te *Error
		if !errors.As(err, &te) || te.Probability != 0.5 || sent != 101 {
			t.Errorf("Critical call with draw 0.4: err %v, %d sent, want rejected with probability 0.5 and 101 sent", err, sent)
		}
	})
}

// FuzzProbability: for every valid K and MaxRejection and any counts, each
// priority's rejection probability is in [0, MaxRejection] (never NaN),
// and a higher priority's is at most a lower one's.
func FuzzProbability(f *testing.F) {
	f.Add(uint64(100), uint64(0), math.MaxFloat64, 0.5)
	f.Add(uint64(100), uint64(20), 2.0, 0.9)
	f.Add(uint64(math.MaxUint64), uint64(1), 1.0, 1.0)
	f.Fuzz(func(t *testing.T, requests, accepts uint64, k, maxRej float64) {
		th, err := New(Config{K: k, MaxRejection: maxRej, MinRequests: -1})
		if err != nil {
			return
		}
		prev := 0.0
		for _, prio := range []portico.Priority{portico.Critical, portico.Default, portico.Sheddable} {
			p := th.probability(requests, accepts, prio)
			if !(p >= prev && p <= th.max) {
				t.Fatalf("K %v, MaxRejection %v: %v probability(%d, %d) = %v, want in [%v, %v]", k, th.max, prio, requests, accepts, p, prev, th.max)
			}
			prev = p
		}
	})
}
