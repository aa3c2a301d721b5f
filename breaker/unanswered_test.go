package breaker

import (
	"errors"
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

// noRetryRefusal is what an adapter reports for a 503 the provider advised
// not to retry (x-should-retry: false): Incompatible, its cause marked
// portico.ErrUnanswered (not portico.ErrDeadlineCut).
func noRetryRefusal() error {
	return &portico.Error{Class: portico.Incompatible, Status: 503, Reason: "overloaded (x-should-retry: false)",
		Err: portico.UnansweredRefusal(errors.New("provider: 503"))}
}

// refused4xx is a provider's 400 for this request: Incompatible, ignored.
func refused4xx() error {
	return &portico.Error{Class: portico.Incompatible, Status: 400, Reason: "request refused"}
}

// TestUnansweredCutsRunOnly: unanswered failures (portico.IsUnanswered) count
// in the run of consecutive failures and nowhere else, both kinds alike:
// a cut of a short share while another route stood ready, and a 503 the
// provider advised not to retry. Four of them, an answer, four more, and
// the failures the breaker ignores between them (the caller's own short
// deadline; a 400 for the request) leave the breaker closed with no failure
// in its window; a fifth in a row trips the default rule ("consecutive
// failures"); once open, an unanswered probe reopens it. Before the rule
// such cuts were ignored like any cut of a caller's deadline, and such
// refusals like any Incompatible failure, and a route that answered no one
// stayed closed for ever.
func TestUnansweredCutsRunOnly(t *testing.T) {
	for _, tc := range []struct {
		name                string
		unanswered, ignored func() error
		class               portico.Class
	}{
		{"cut", unansweredCut, shortCut, portico.Ambiguous},
		{"x-should-retry: false", noRetryRefusal, refused4xx, portico.Incompatible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				var seen []Counts
				b := MustNew(Config{OnStateChange: rec.hook, Trip: func(c Counts) string { seen = append(seen, c); return DefaultTrip(c) }})
				var queue []error
				for range 4 {
					queue = append(queue, tc.unanswered(), tc.ignored())
				}
				queue = append(queue, nil)
				for range 4 {
					queue = append(queue, tc.unanswered())
				}
				f := &scripted{queue: queue}
				m := b.Wrap(f)
				for range len(queue) {
					call(t, m)
				}
				if b.State() != Closed {
					t.Fatalf("after 4 unanswered failures, an answer and 4 more: %v, want closed", b.State())
				}
				last := seen[len(seen)-1]
				if last.ConsecutiveFailures != 4 || last.Failures != 0 || last.Calls != 1 || last.Class != tc.class {
					t.Errorf("counts after the last failure = %+v; want a run of 4, no failure and 1 call (the answer) in the window, class %v", last, tc.class)
				}
				f.queue = []error{tc.unanswered()}
				call(t, m)
				if !slices.Equal(rec.path(), []string{"closed>open:consecutive failures"}) {
					t.Fatalf("transitions after a fifth in a row = %v, want closed>open:consecutive failures", rec.path())
				}
				time.Sleep(30 * time.Second)
				f.queue = []error{tc.unanswered()}
				call(t, m)
				if want := []string{"closed>open:consecutive failures", "open>half_open:open interval elapsed", "half_open>open:probe failed"}; !slices.Equal(rec.path(), want) {
					t.Errorf("transitions after an unanswered probe = %v, want %v", rec.path(), want)
				}
			})
		})
	}
}
