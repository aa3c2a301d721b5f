package rank

import (
	"math"
	"testing"
)

// TestSplit: Split's score is -ln(Draw)/Weight, and Fill draws a Draw in
// (0, 1] for every candidate, anew each time.
func TestSplit(t *testing.T) {
	if got := Split(Candidate{Draw: math.Exp(-2), Weight: 4}); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("Split(Draw e^-2, Weight 4) = %v, want 0.5", got)
	}
	if got := Split(Candidate{Draw: 1, Weight: 1}); got != 0 {
		t.Errorf("Split(Draw 1) = %v, want 0", got)
	}
	tab, _ := NewTable(1, 0)
	seen := map[float64]bool{}
	for range 100 {
		c := Candidate{}
		tab.Fill(&c)
		if !(c.Draw > 0 && c.Draw <= 1) {
			t.Fatalf("Fill drew %v, want in (0, 1]", c.Draw)
		}
		seen[c.Draw] = true
	}
	if len(seen) < 99 {
		t.Errorf("100 Fills drew %d distinct values, want a new draw each time", len(seen))
	}
}

// TestSplitHeadroom: Split weighs a candidate by Weight·(1-Spent), so one
// at 10% headroom scores as a tenth of its weight, and one with none left
// scores +Inf (last), whatever its draw.
func TestSplitHeadroom(t *testing.T) {
	if got := Split(Candidate{Draw: math.Exp(-2), Weight: 4, Spent: 0.9}); math.Abs(got-5) > 1e-9 {
		t.Errorf("Split(Draw e^-2, Weight 4, Spent 0.9) = %v, want 5", got)
	}
	for _, d := range []float64{1, 0.5} {
		if got := Policy(Split).Score(Candidate{Draw: d, Weight: 1, Spent: 1}); !math.IsInf(got, 1) {
			t.Errorf("Split(Draw %v, Spent 1) = %v, want +Inf", d, got)
		}
	}
}
