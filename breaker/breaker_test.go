package breaker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var okResp = &portico.Response{Text: "ok", FinishReason: portico.FinishStop}

func fail(c portico.Class) error { return &portico.Error{Class: c, Reason: "test"} }

// scripted is a fake Model that returns the errors queued in next, in order
// (nil for success), and counts its calls.
type scripted struct {
	mu    sync.Mutex
	calls int
	err   error // returned when set and queue is empty
	queue []error
	// delay is waited with time.Sleep before answering; only tests inside a
	// synctest bubble set it, where the sleep is virtual.
	delay time.Duration
}

func (s *scripted) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	s.mu.Lock()
	s.calls++
	err := s.err
	if len(s.queue) > 0 {
		err, s.queue = s.queue[0], s.queue[1:]
	}
	d := s.delay
	s.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
	if err != nil {
		return nil, err
	}
	return okResp, nil
}

func (s *scripted) set(err error) { s.mu.Lock(); s.err = err; s.mu.Unlock() }

func (s *scripted) n() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

// recorder collects transitions from the hook.
type recorder struct {
	mu  sync.Mutex
	trs []Transition
}

func (r *recorder) hook(tr Transition) { r.mu.Lock(); r.trs = append(r.trs, tr); r.mu.Unlock() }

func (r *recorder) path() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var p []string
	for _, tr := range r.trs {
		p = append(p, tr.From.String()+">"+tr.To.String()+":"+tr.Reason)
	}
	return p
}

func call(t *testing.T, m portico.Model) error {
	t.Helper()
	_, err := m.Generate(context.Background(), &portico.Request{})
	return err
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNewRejectsBadConfig(t *testing.T) {
	bad := []Config{
		{FailureRate: 1.5},
		{FailureRate: -0.1},
		{SlowCallRate: 2},
		{MinCalls: -1},
		{WindowCalls: -1},
		{WindowDuration: -time.Second},
		{WindowDuration: 5, WindowBuckets: 10},
		{SlowCall: -1},
		{OpenFor: -1},
		{OpenFor: time.Minute, MaxOpenFor: time.Second},
		{OpenBackoff: 0.5},
		{Probes: -1},
	}
	for _, c := range bad {
		if b, err := New(c); err == nil || b != nil {
			t.Errorf("New(%+v) = %v, %v, want nil and an error", c, b, err)
		}
	}
	if _, err := New(Config{}); err != nil {
		t.Fatalf("New(Config{}) = %v, want nil", err)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half_open", 7: "State(7)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
	}
}

func TestOpenInterval(t *testing.T) {
	c, _ := Config{OpenFor: time.Second, OpenBackoff: 2, MaxOpenFor: 5 * time.Second}.normalize()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := openInterval(&c, i+1); got != w {
			t.Errorf("openInterval(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := openInterval(&c, 5000); got != 5*time.Second {
		t.Errorf("openInterval(5000) = %v, want cap 5s", got)
	}
}

func TestTripReason(t *testing.T) {
	c, _ := Config{MinCalls: 4, FailureRate: 0.5, SlowCall: time.Second, SlowCallRate: 0.75}.normalize()
	cases := []struct {
		t    tally
		want string
	}{
		{tally{calls: 3, failed: 3}, ""},
		{tally{calls: 4, failed: 1}, ""},
		{tally{calls: 4, failed: 2}, "failure rate"},
		{tally{calls: 4, slow: 2}, ""},
		{tally{calls: 4, slow: 3}, "slow call rate"},
		{tally{}, ""},
	}
	for _, tc := range cases {
		if got := tripReason(&c, tc.t); got != tc.want {
			t.Errorf("tripReason(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

// TestMustNew: MustNew, named like retry.MustNew and validate.MustNew, panics
// with New's error on a bad Config and returns a working Breaker otherwise.
func TestMustNew(t *testing.T) {
	if b := MustNew(Config{}); b == nil || b.State() != Closed {
		t.Fatalf("MustNew(Config{}) = %v, want a closed Breaker", b)
	}
	defer func() {
		err, ok := recover().(error)
		if !ok || !strings.HasPrefix(err.Error(), "breaker: ") {
			t.Errorf("MustNew(FailureRate 2) panicked with %v, want New's error", err)
		}
	}()
	MustNew(Config{FailureRate: 2})
}
