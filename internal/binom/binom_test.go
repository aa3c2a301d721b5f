package binom

import (
	"math"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBound pins the bound of 1,000 draws at 0.7 (a 7:3 split):
// 4.5*sqrt(210) = 65.21, so 700 ± 65.
func TestBound(t *testing.T) {
	if got := Bound(1000, 0.7); math.Abs(got-65.2111) > 1e-4 {
		t.Errorf("Bound(1000, 0.7) = %v, want 65.2111", got)
	}
	for _, c := range []struct {
		count int
		want  bool
	}{{700, true}, {635, true}, {765, true}, {634, false}, {766, false}, {1000, false}} {
		if got := Within(c.count, 1000, 0.7); got != c.want {
			t.Errorf("Within(%d, 1000, 0.7) = %v, want %v", c.count, got, c.want)
		}
	}
}
