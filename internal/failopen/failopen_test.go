package failopen

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		n    int
		want int64
	}{{0, 3, 0}, {60, 3, 20}, {20, 3, 6}, {2, 3, 1}, {1, 10, 1}, {7, 1, 7}} {
		if got := Share(tc.v, tc.n); got != tc.want {
			t.Errorf("Share(%d, %d) = %d, want %d", tc.v, tc.n, got, tc.want)
		}
	}
}

func TestCharge(t *testing.T) {
	for _, tc := range []struct{ level, cost, want float64 }{
		{5, 2, 3}, {2, 5, 0}, {0, 1, 0}, {-3, 1, -3}, {4, 0, 4},
	} {
		if got := Charge(tc.level, tc.cost); got != tc.want {
			t.Errorf("Charge(%v, %v) = %v, want %v", tc.level, tc.cost, got, tc.want)
		}
	}
	if got := Charge[int64](1_000, 1_500); got != 0 {
		t.Errorf("Charge[int64](1000, 1500) = %d, want 0", got)
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		level, left float64
		n           int
		want        float64
	}{
		{20, 30, 3, 10}, {5, 30, 3, 5}, {20, -4, 3, 0}, {20, 0, 3, 0}, {-2, 30, 3, -2},
	} {
		if got := Refused(tc.level, tc.left, tc.n); got != tc.want {
			t.Errorf("Refused(%v, %v, %d) = %v, want %v", tc.level, tc.left, tc.n, got, tc.want)
		}
	}
}
