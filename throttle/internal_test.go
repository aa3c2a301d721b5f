package throttle

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/window"
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

// Pending accepts count as current until stamped, then age with their
// bucket: they leave the window 32 laps after the stamp. (The window's
// laps: window.TestTimeLaps.)
func TestPendingAccepts(t *testing.T) {
	const width = 10
	w := counts{win: window.NewTime(0, width, numBuckets)}
	w.win.Add(0, 0, window.Counts{3, 1})
	w.pending.Store(4) // unstamped accepts count as current
	if r, a := w.totals(10_000); r != 4 || a != 4 {
		t.Errorf("totals at 10000 = %d, %d, want 4, 4 (the pending accepts)", r, a)
	}
	w.stamp(10_000)
	if p := w.pending.Load(); p != 0 {
		t.Errorf("pending after stamp = %d, want 0", p)
	}
	if r, a := w.totals(10_000 + 31*width); r != 4 || a != 4 {
		t.Errorf("totals 31 laps after the stamp = %d, %d, want 4, 4", r, a)
	}
	if r, a := w.totals(10_000 + 32*width); r != 0 || a != 0 {
		t.Errorf("totals 32 laps after the stamp = %d, %d, want 0, 0", r, a)
	}
}

// A failure counted after the clean check read fails keeps the window dirty.
func TestCleanRace(t *testing.T) {
	var w counts
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
