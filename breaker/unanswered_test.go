package breaker

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// unansweredCut is what a route reports when a fallback group cut its share
// while another route stood ready: a layer timeout, Ambiguous once sent,
// marked portico.ErrUnanswered (and so portico.ErrDeadlineCut).
func unansweredCut() error {
	return &portico.Error{Class: portico.Ambiguous, Reason: "cut", Err: portico.Unanswered(portico.NewLayerTimeout("share"))}
}

// shortCut is the caller's own short deadline, cut by a layer: ignored.
func shortCut() error {
	return &portico.Error{Class: portico.Ambiguous, Reason: "cut", Err: portico.DeadlineCut(portico.NewLayerTimeout("share"))}
}

// TestUnansweredCutsRunOnly: unanswered cuts count in the run of
// consecutive failures and nowhere else. Four of them, an answer, four
// more, and the other cuts of a caller's deadline (ignored) leave the
// breaker closed with no failure in its window; a fifth in a row trips the
// default rule ("consecutive failures"); once open, a probe that is cut
// unanswered reopens it. Before the rule these cuts were ignored like any
// cut of a caller's deadline, and a route that answered no one stayed
// closed for ever.
func TestUnansweredCutsRunOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		var seen []Counts
		b := MustNew(Config{OnStateChange: rec.hook, Trip: func(c Counts) string { seen = append(seen, c); return DefaultTrip(c) }})
		var queue []error
		for range 4 {
			queue = append(queue, unansweredCut(), shortCut())
		}
		queue = append(queue, nil)
		for range 4 {
			queue = append(queue, unansweredCut())
		}
		f := &scripted{queue: queue}
		m := b.Wrap(f)
		for range len(queue) {
			call(t, m)
		}
		if b.State() != Closed {
			t.Fatalf("after 4 unanswered cuts, an answer and 4 more: %v, want closed", b.State())
		}
		last := seen[len(seen)-1]
		if last.ConsecutiveFailures != 4 || last.Failures != 0 || last.Calls != 1 || last.Class != portico.Ambiguous {
			t.Errorf("counts after the last cut = %+v; want a run of 4, no failure and 1 call (the answer) in the window", last)
		}
		f.queue = []error{unansweredCut()}
		call(t, m)
		if !slices.Equal(rec.path(), []string{"closed>open:consecutive failures"}) {
			t.Fatalf("transitions after a fifth cut in a row = %v, want closed>open:consecutive failures", rec.path())
		}
		time.Sleep(30 * time.Second)
		f.queue = []error{unansweredCut()}
		call(t, m)
		if want := []string{"closed>open:consecutive failures", "open>half_open:open interval elapsed", "half_open>open:probe failed"}; !slices.Equal(rec.path(), want) {
			t.Errorf("transitions after an unanswered probe = %v, want %v", rec.path(), want)
		}
	})
}
