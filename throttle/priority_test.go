package throttle_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/throttle"
)

// TestPriorityMultiplier: with K = 2, a Sheddable call's multiplier is 1
// and a Critical one's 4, so a destination that accepted 60 of 100
// requests has Sheddable calls rejected (with probability 40/101) and no
// other, and one that accepted 20 of 100 rejects Sheddable calls with
// probability 80/101, Default 60/101 and Critical 20/101.
func TestPriorityMultiplier(t *testing.T) {
	for _, tc := range []struct {
		accepts int
		want    map[portico.Priority]float64 // 0: let through
	}{
		{60, map[portico.Priority]float64{portico.Sheddable: 40.0 / 101, portico.Default: 0, portico.Critical: 0}},
		{20, map[portico.Priority]float64{portico.Sheddable: 80.0 / 101, portico.Default: 60.0 / 101, portico.Critical: 20.0 / 101}},
	} {
		synctest.Test(t, func(t *testing.T) {
			u := 0.99 // above the cap (0.9): nothing rejected while the window fills
			n := 0
			dest := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
				if n++; n > tc.accepts {
					return nil, &portico.Error{Class: portico.Transient}
				}
				return &portico.Response{}, nil
			})
			m := throttle.MustNew(throttle.Config{K: 2, Rand: func() float64 { return u }}).Wrap(dest)
			for range 100 {
				m.Generate(t.Context(), req)
			}
			u = 0 // every call with a probability above 0 is rejected, and not counted (the cap)
			for _, p := range []portico.Priority{portico.Sheddable, portico.Critical, portico.Default} {
				r := req.Clone()
				r.Priority = p
				_, err := m.Generate(t.Context(), r)
				var te *throttle.Error
				got := 0.0
				if errors.As(err, &te) {
					got = te.Probability
				}
				if got != tc.want[p] {
					t.Errorf("%d of 100 accepted: %v call rejected with probability %v (err %v), want %v", tc.accepts, p, got, err, tc.want[p])
				}
			}
		})
	}
}
