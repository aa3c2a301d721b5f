package ratelimit

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
)

// sampler is an InputObserver estimating every request at n tokens and
// keeping each sample it is given as {estimate, inputTokens}.
type sampler struct {
	n       int
	mu      sync.Mutex
	samples [][2]int
}

func (s *sampler) EstimateInputTokens(*portico.Request) int { return s.n }

func (s *sampler) ObserveInputTokens(_ *portico.Request, estimate, inputTokens int) {
	s.mu.Lock()
	s.samples = append(s.samples, [2]int{estimate, inputTokens})
	s.mu.Unlock()
}

func (s *sampler) got() [][2]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// TestObservesOncePerAnswer: a Limiter gives its InputObserver one sample
// per answered call, the estimate it reserved (10) and the answer's input
// tokens (20), on every path: its own buckets, a shared store's (strict,
// leased), the local share when the store fails open; with an in-flight
// cap too, whose slots are a Limiter of their own. A call refused gives
// none.
func TestObservesOncePerAnswer(t *testing.T) {
	small := Limits{Tokens: 6000, TokenBurst: 1000, Requests: 40}
	large := Limits{Tokens: 2_048_000, Requests: 5000} // Auto leases these
	for _, tc := range []struct {
		name   string
		lim    Limits
		shared func() (Shared, func() bool) // the Shared, and whether the path was the one meant
	}{
		{"local", small, func() (Shared, func() bool) { return Shared{}, func() bool { return true } }},
		{"strict", small, func() (Shared, func() bool) {
			f := newFakeStore()
			return Shared{Store: f}, func() bool { return len(f.lims) == 3 }
		}},
		{"leased", large, func() (Shared, func() bool) {
			f := newLeaseFake()
			return Shared{Store: f}, func() bool { return len(f.calls()) > 0 && f.takes == 0 }
		}},
		{"fail open", small, func() (Shared, func() bool) {
			f := newFakeStore()
			f.setDown(true)
			return Shared{Store: f, FailOpen: true, Instances: 4}, func() bool { return len(f.lims) == 0 }
		}},
	} {
		for _, inflight := range []int{0, 4} {
			t.Run(fmt.Sprintf("%s/inflight=%d", tc.name, inflight), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := &sampler{n: 10}
					lim := tc.lim
					lim.MaxInFlight = inflight
					sh, onPath := tc.shared()
					m := mustNew(t, Config{Limits: lim, Estimator: s, Shared: sh}).Wrap(okModel(20, 5))
					for i := range 3 {
						if _, err := m.Generate(t.Context(), req("c", 10)); err != nil {
							t.Fatalf("call %d: %v", i, err)
						}
					}
					if want := [][2]int{{10, 20}, {10, 20}, {10, 20}}; !slices.Equal(s.got(), want) {
						t.Errorf("samples %v, want %v", s.got(), want)
					}
					if !onPath() {
						t.Error("the calls did not take the path meant")
					}
					// Refused (over TokenBurst): no answer, no sample.
					n := len(s.got())
					if _, err := m.Generate(t.Context(), req("c", 10_000_000)); err == nil {
						t.Fatal("call over capacity admitted")
					}
					if got := len(s.got()); got != n {
						t.Errorf("%d samples after a refusal, want %d", got, n)
					}
				})
			})
		}
	}
}

// TestSharedTeachesCalibrated: a shared Limiter over a Calibrated teaches
// it as a local one does: 16 answers of 208 input tokens for an estimate
// of 104 make the ratio 2.
func TestSharedTeachesCalibrated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := portico.NewCalibrated(fixedEstimator(104), portico.Calibration{})
		if err != nil {
			t.Fatal(err)
		}
		m := mustNew(t, Config{Limits: Limits{Tokens: 1_000_000, TokenBurst: 10_000}, Estimator: e, Shared: Shared{Store: newFakeStore()}}).Wrap(okModel(208, 1))
		r := req("c", 10)
		for i := range 16 {
			if got := e.Ratio(r); got != 1 {
				t.Fatalf("ratio after %d answers = %v, want 1", i, got)
			}
			if _, err := m.Generate(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.Ratio(r); got != 2 {
			t.Errorf("ratio after 16 answers = %v, want 2", got)
		}
	})
}
