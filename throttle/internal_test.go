package throttle

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
)

func TestProbability(t *testing.T) {
	for _, c := range []struct {
		requests, accepts uint64
		k                 float64
		want              float64
	}{
		{0, 0, 2, 0},
		{10, 10, 2, 0},
		{10, 5, 2, 0},        // exactly K times the accepts: not yet
		{10, 4, 2, 2.0 / 11}, // (10 - 8) / 11
		{1, 0, 2, 0.5},       // one failure in an empty window
		{100, 0, 2, 100.0 / 101},
		{100, 50, 1.5, 25.0 / 101}, // (100 - 75) / 101
	} {
		if got := probability(c.requests, c.accepts, c.k); got != c.want {
			t.Errorf("probability(%d, %d, %v) = %v, want %v", c.requests, c.accepts, c.k, got, c.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		name              string
		err               error
		counted, accepted bool
	}{
		{"answer", nil, true, true},
		{"permanent", &portico.Error{Class: portico.Permanent, Status: 400}, true, true},
		{"incompatible", &portico.Error{Class: portico.Incompatible}, true, true},
		{"transient", &portico.Error{Class: portico.Transient, Status: 503}, true, false},
		{"rate limited", &portico.Error{Class: portico.RateLimited, Status: 429}, true, false},
		{"ambiguous", &portico.Error{Class: portico.Ambiguous}, true, false},
		{"invalid", &portico.Error{Class: portico.InvalidResponse}, true, false},
		{"unusable", &portico.Error{Class: portico.Unusable, Status: 401}, true, false},
		{"nil response", portico.ErrNilResponse, true, false},
		{"canceled", context.Canceled, false, false},
		{"deadline", context.DeadlineExceeded, false, false},
		{"rejected", &portico.Error{Class: portico.Rejected}, false, false},
		{"unclassified", errors.New("boom"), true, true}, // Permanent, as ClassOf says
	} {
		counted, accepted := verdict(c.err)
		if counted != c.counted || accepted != c.accepted {
			t.Errorf("verdict(%s) = %v, %v, want %v, %v", c.name, counted, accepted, c.counted, c.accepted)
		}
	}
}

// The window keeps 32 buckets of width: a count leaves it when its bucket's
// lap is 32 laps old, and a bucket reused by a later lap starts empty.
func TestWindowBuckets(t *testing.T) {
	const width = 10
	var w window
	w.add(width, 0, 3, 1)   // lap 1
	w.add(width, 95, 2, 2)  // lap 10
	w.add(width, 319, 1, 0) // lap 32
	if r, a := w.totals(width, 319); r != 6 || a != 3 {
		t.Errorf("totals at 319 = %d, %d, want 6, 3", r, a)
	}
	if r, a := w.totals(width, 320); r != 3 || a != 2 { // lap 33: lap 1 has left
		t.Errorf("totals at 320 = %d, %d, want 3, 2", r, a)
	}
	w.add(width, 325, 5, 5) // lap 33 reuses lap 1's bucket
	if r, a := w.totals(width, 325); r != 8 || a != 7 {
		t.Errorf("totals at 325 = %d, %d, want 8, 7", r, a)
	}
	w.pending.Store(4) // unstamped accepts count as current
	if r, a := w.totals(width, 10_000); r != 4 || a != 4 {
		t.Errorf("totals at 10000 = %d, %d, want 4, 4 (the pending accepts)", r, a)
	}
	w.stamp(width, 10_000)
	if p := w.pending.Load(); p != 0 {
		t.Errorf("pending after stamp = %d, want 0", p)
	}
	if r, a := w.totals(width, 10_000+31*width); r != 4 || a != 4 {
		t.Errorf("totals 31 laps after the stamp = %d, %d, want 4, 4", r, a)
	}
	if r, a := w.totals(width, 10_000+32*width); r != 0 || a != 0 {
		t.Errorf("totals 32 laps after the stamp = %d, %d, want 0, 0", r, a)
	}
}

// A failure counted after the clean check read fails keeps the window dirty.
func TestCleanRace(t *testing.T) {
	var w window
	w.fails.Add(1)
	seq := w.fails.Load()
	w.fails.Add(1) // a failure counted while the totals were read
	w.clean(seq)
	if !w.isDirty() {
		t.Error("window clean after a failure counted during the check, want dirty")
	}
	w.clean(w.fails.Load())
	if w.isDirty() {
		t.Error("window dirty after a clean check with no failure since, want clean")
	}
}
