package modeltest_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/modeltest"
)

// A Budget grants its Tokens, each after RTT, records them and the
// refunds; the zero one grants nothing, a negative Tokens without end.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &modeltest.Budget{Tokens: 2, RTT: 10 * time.Millisecond}
		start := time.Now()
		got := []bool{b.Take("a", "alice"), b.Take("b", "bob"), b.Take("a", "carol")}
		b.Refund("a", "alice")
		if !slices.Equal(got, []bool{true, true, false}) || time.Since(start) != 30*time.Millisecond ||
			!slices.Equal(b.Taken(), []string{"a/alice", "b/bob"}) || b.Refunded() != 1 {
			t.Errorf("Take = %v after %v, Taken %v, Refunded %d; want true true false after 30ms, a/alice b/bob, 1",
				got, time.Since(start), b.Taken(), b.Refunded())
		}
	})
	var none modeltest.Budget
	endless := &modeltest.Budget{Tokens: -1}
	for range 3 {
		endless.Take("d", "")
	}
	if none.Take("d", "") || len(endless.Taken()) != 3 || endless.Tokens != -1 {
		t.Errorf("zero Budget took %v; endless took %d, Tokens %d; want false, 3, -1", none.Taken(), len(endless.Taken()), endless.Tokens)
	}
}
