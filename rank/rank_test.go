package rank

import (
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func names(cs []Candidate) []string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Route.Name)
	}
	return s
}

func cands(cs ...Candidate) []Candidate {
	for i := range cs {
		cs[i].Index = i
		cs[i].Route = &portico.Route{Name: string(rune('a' + i))}
		if cs[i].Weight == 0 {
			cs[i].Weight = 1
		}
	}
	return cs
}

func TestOrder(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name   string
		policy Policy
		cands  []Candidate
		want   []string
	}{
		{"ByCost, ties in order", ByCost, cands(Candidate{EstimatedCost: 3}, Candidate{EstimatedCost: 1}, Candidate{EstimatedCost: 3}, Candidate{EstimatedCost: 2}), []string{"b", "d", "a", "c"}},
		{"ByCost, weight divides", ByCost, cands(Candidate{EstimatedCost: 2}, Candidate{EstimatedCost: 3, Weight: 2}), []string{"b", "a"}},
		{"ByLatency, unmeasured first", ByLatency, cands(Candidate{Latency: 300 * ms}, Candidate{}, Candidate{Latency: 100 * ms}, Candidate{Latency: 100 * ms}), []string{"b", "c", "d", "a"}},
		{"ByHealth", ByHealth, cands(
			Candidate{SinceFailure: time.Second},      // failed 1 s ago
			Candidate{SinceFailure: -1},               // never
			Candidate{SinceFailure: 30 * time.Second}, // 30 s ago
			Candidate{SinceFailure: HealthMemory},     // forgotten
			Candidate{SinceFailure: 0},                // just now
			Candidate{SinceFailure: 2 * HealthMemory}, // forgotten
		), []string{"b", "d", "f", "c", "a", "e"}},
		{"ByHealth, in flight breaks ties", ByHealth, cands(Candidate{SinceFailure: -1, InFlight: 2}, Candidate{SinceFailure: -1, InFlight: 1}), []string{"b", "a"}},
		{"NaN last", func(c Candidate) float64 {
			if c.Index == 0 {
				return math.NaN()
			}
			return 1
		}, cands(Candidate{}, Candidate{}), []string{"b", "a"}},
		{"Weighted", Weighted{Cost: 1, ErrorRate: 10}.Score, cands(Candidate{EstimatedCost: 1, ErrorRate: 0.5}, Candidate{EstimatedCost: 3}), []string{"b", "a"}},
		{"zero Weighted keeps order", Weighted{}.Score, cands(Candidate{EstimatedCost: 9}, Candidate{EstimatedCost: 1}), []string{"a", "b"}},
	}
	for _, tc := range tests {
		if got := names(Order(tc.cands, tc.policy)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Order = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScores(t *testing.T) {
	c := Candidate{EstimatedCost: 2, Latency: 500 * time.Millisecond, TTFT: 250 * time.Millisecond, ErrorRate: 0.25, SinceFailure: 15 * time.Second, InFlight: 3, Weight: 2}
	tests := []struct {
		name string
		p    Policy
		want float64
	}{
		{"ByCost", ByCost, 1},
		{"ByLatency", ByLatency, 0.25},
		{"ByHealth", ByHealth, (0.75 + 0.3) / 2},
		{"Weighted", Weighted{Cost: 1, Latency: 2, TTFT: 4, ErrorRate: 4, InFlight: 1}.Score, (2 + 1 + 1 + 1 + 3) / 2.0},
	}
	for _, tc := range tests {
		if got := tc.p.Score(c); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s(%+v) = %v, want %v", tc.name, c, got, tc.want)
		}
	}
}

func TestPoliciesDoNotAllocate(t *testing.T) {
	cs := cands(Candidate{EstimatedCost: 3, Latency: 2, SinceFailure: 5}, Candidate{EstimatedCost: 1, Latency: 1, SinceFailure: -1}, Candidate{EstimatedCost: 2, Latency: 3, SinceFailure: 1})
	for name, p := range map[string]Policy{"ByCost": ByCost, "ByLatency": ByLatency, "ByHealth": ByHealth} {
		if n := testing.AllocsPerRun(100, func() { Order(cs, p) }); n != 0 {
			t.Errorf("Order by %s allocs = %v, want 0", name, n)
		}
	}
}

// TestTable: the moving averages with gain 1/2, which outcomes move them,
// and SinceFailure on the table's clock.
func TestTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ms = time.Millisecond
		tb, err := NewTable(2, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		fill := func(i int) Candidate {
			c := Candidate{Index: i}
			tb.Fill(&c)
			return c
		}
		if c := fill(0); c.Latency != 0 || c.SinceFailure != -1 || c.Weight != 1 || c.Observed != 0 {
			t.Fatalf("fresh Fill = %+v, want zero figures, SinceFailure -1, Weight 1", c)
		}
		tb.Start(0)
		tb.Start(0)
		if c := fill(0); c.InFlight != 2 {
			t.Errorf("InFlight = %d, want 2", c.InFlight)
		}
		tb.Done(0, nil, 100*ms, 40*ms)
		tb.Done(0, nil, 300*ms, 80*ms)
		if c := fill(0); c.Latency != 200*ms || c.TTFT != 60*ms || c.ErrorRate != 0 || c.Observed != 2 || c.InFlight != 0 {
			t.Errorf("after two successes: %+v; want latency 200ms, TTFT 60ms, rate 0, observed 2, none in flight", c)
		}
		// Before portico.FaultOf, a Permanent or Rejected error lowered the
		// error rate as a success, and a refused answer or a cut of the
		// caller's deadline raised it as a fault.
		for _, err := range []error{&portico.Error{Class: portico.Canceled}, &portico.Error{Class: portico.Deadline},
			&portico.Error{Class: portico.Incompatible}, &portico.Error{Class: portico.Permanent},
			&portico.Error{Class: portico.Rejected, RefusedBy: portico.CircuitBreaker},
			&portico.Error{Class: portico.InvalidResponse, Err: portico.ErrAnswerRefused},
			&portico.Error{Class: portico.Ambiguous, Err: portico.DeadlineCut(portico.ErrLayerTimeout)}} {
			tb.Start(0)
			tb.Done(0, err, time.Second, 0)
		}
		if c := fill(0); c.Latency != 200*ms || c.Observed != 2 || c.SinceFailure != -1 {
			t.Errorf("after outcomes that say nothing: %+v; want it unchanged", c)
		}
		tb.Start(0)
		tb.Done(0, &portico.Error{Class: portico.Transient}, 5*ms, 0)
		time.Sleep(10 * time.Second)
		if c := fill(0); c.Latency != 200*ms || c.ErrorRate != 0.5 || c.Observed != 3 || c.SinceFailure != 10*time.Second {
			t.Errorf("10 s after a fault: %+v; want latency 200ms (failures are not samples), rate 0.5, observed 3, SinceFailure 10s", c)
		}
		if c := fill(1); c.Observed != 0 || c.SinceFailure != -1 {
			t.Errorf("route 1 = %+v, want untouched", c)
		}
	})
	for _, a := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := NewTable(1, a); err == nil || err.Error() != "rank: alpha outside [0, 1]" {
			t.Errorf("NewTable(1, %v) = %v, want the alpha error", a, err)
		}
	}
	if tb, _ := NewTable(1, 0); tb.alpha != DefaultAlpha {
		t.Errorf("NewTable(1, 0).alpha = %v, want %v", tb.alpha, DefaultAlpha)
	}
}
