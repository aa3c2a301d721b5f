package slots

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestClaim: from one goroutine, claims probe the same places: four
// distinct slots, held, then none; the one released is claimed again, with
// the state left in it.
func TestClaim(t *testing.T) {
	var tb Table[int]
	var got []*Slot[int]
	for range probes {
		sl := tb.Claim()
		if sl == nil || sl.Word.Load() != Held {
			t.Fatalf("claim %d = %v, want a held slot", len(got), sl)
		}
		for _, o := range got {
			if o == sl {
				t.Fatalf("claim %d returned a slot held already", len(got))
			}
		}
		got = append(got, sl)
	}
	if sl := tb.Claim(); sl != nil {
		t.Fatalf("claim with %d probed slots held = %p, want nil", probes, sl)
	}
	v := 7
	got[2].V.Store(&v)
	got[2].Release()
	if sl := tb.Claim(); sl != got[2] || *sl.V.Load() != 7 {
		t.Errorf("claim after a release = %p, want the released %p with its state", sl, got[2])
	}
}
