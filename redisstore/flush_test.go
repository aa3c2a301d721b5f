package redisstore

import (
	"testing"
)

// TestMergeSettles: a batch's refunds on one key fold into one settle, and
// so do its surcharges; a refund and a surcharge, a provider view, other
// limits or another key stay apart, in order.
func TestMergeSettles(t *testing.T) {
	op := func(key string, tokens float64, view bool, rate float64) pendingSettle {
		p := pendingSettle{key: key}
		p.nums[0], p.nums[1], p.nums[4], p.nums[5] = rate, 100, tokens, 6000
		if view {
			p.nums[7] = 1
		}
		return p
	}
	ops := []pendingSettle{op("a", 5, false, 10), op("b", 3, false, 10), op("a", 7, false, 10), op("a", -2, false, 10),
		op("a", 4, true, 10), op("a", 1, false, 20), op("a", -3, false, 10), op("b", 1, false, 10)}
	got := merge(ops)
	want := []struct {
		key    string
		tokens float64
	}{{"a", 12}, {"b", 4}, {"a", -2}, {"a", 4}, {"a", 1}, {"a", -3}}
	if len(got) != len(want) {
		t.Fatalf("merge left %d settles, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].key != w.key || got[i].nums[4] != w.tokens {
			t.Errorf("settle %d = %s %v, want %s %v", i, got[i].key, got[i].nums[4], w.key, w.tokens)
		}
	}
}

// TestMergeNeverFoldsPastASettle: a surcharge, a refund and a surcharge on
// one full bucket leave it 3 tokens down one by one; folding the second
// surcharge into the first, ahead of the refund capped at the burst, would
// leave it 1 token down, forgiving 2. Each stays its own settle.
func TestMergeNeverFoldsPastASettle(t *testing.T) {
	ops := make([]pendingSettle, 3)
	for i, tokens := range []float64{-3, 5, -3} {
		ops[i].key = "a"
		ops[i].nums[0], ops[i].nums[1], ops[i].nums[4], ops[i].nums[5] = 10, 100, tokens, 6000
	}
	got := merge(ops)
	if len(got) != 3 || got[0].nums[4] != -3 || got[1].nums[4] != 5 || got[2].nums[4] != -3 {
		t.Errorf("merge(-3, +5, -3) = %+v, want the three settles unchanged", got)
	}
}
