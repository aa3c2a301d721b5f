package breaker

import (
	"context"
	"math"
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

// New refuses each value that can only be a mistake with a message naming
// the field.
func TestNewRejectsBadConfig(t *testing.T) {
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Window: Window{Calls: -1}}, "breaker: Config.Window.Calls -1 is outside [0, 2^32)"},
		{Config{Window: Window{Calls: 1 << 32}}, "breaker: Config.Window.Calls 4294967296 is outside [0, 2^32)"},
		{Config{Window: Window{Duration: -time.Second}}, "breaker: Config.Window.Duration -1s is negative"},
		{Config{Window: Window{Duration: 9}}, "breaker: Config.Window.Duration 9ns is below 10ns, one per bucket"},
		{Config{SlowCall: -1}, "breaker: Config.SlowCall -1ns is negative"},
		{Config{OpenFor: -time.Millisecond}, "breaker: Config.OpenFor -1ms is negative"},
		{Config{Probes: -1}, "breaker: Config.Probes -1 is negative"},
		{Config{Shared: nopStore{}}, "breaker: Config.Shared without a Config.Name to share the state under"},
		// A rule that cannot trip, even when every call fails, is a mistake:
		// more calls than the window holds, or slow calls never detected.
		{Config{Window: Window{Calls: 100}, Trip: FailureRate(0.5, 101)}, "breaker: Config.Trip does not trip even on a full window of failed calls"},
		{Config{Trip: SlowCallRate(0.5, 10)}, "breaker: Config.Trip does not trip even on a full window of failed calls"},
		{Config{Trip: func(Counts) string { return "" }}, "breaker: Config.Trip does not trip even on a full window of failed calls"},
	}
	for _, tt := range bad {
		if b, err := New(tt.cfg); b != nil || err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, %v; want nil, %q", tt.cfg, b, err, tt.want)
		}
	}
	// The largest window is accepted (normalize only: New would allocate it).
	if _, err := (Config{Window: Window{Calls: 1<<32 - 1}}).normalize(); err != nil {
		t.Errorf("normalize(Window.Calls 2^32-1) = %v, want nil", err)
	}
	for _, c := range []Config{{}, {Window: Window{Duration: 10}},
		{Window: Window{Calls: 100}, Trip: FailureRate(0.5, 100)}, {SlowCall: time.Second, Trip: SlowCallRate(0.5, 10)},
		{Window: Window{Duration: time.Minute}, Trip: FailureRate(1, 1000)}} {
		if _, err := New(c); err != nil {
			t.Errorf("New(%+v) = %v, want nil", c, err)
		}
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half_open", 7: "State(7)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
	}
}

// The ready-made rules trip exactly at their thresholds, with their reasons.
func TestTripRules(t *testing.T) {
	rate := FailureRate(0.5, 4)
	slow := SlowCallRate(0.75, 4)
	run := ConsecutiveFailures(3)
	both := AnyOf(nil, rate, slow)
	cases := []struct {
		c                 Counts
		rate, slow, run   string
		both, defaultTrip string
	}{
		{Counts{}, "", "", "", "", ""},
		{Counts{Calls: 3, Failures: 3, ConsecutiveFailures: 3}, "", "", "consecutive failures", "", ""},
		{Counts{Calls: 4, Failures: 1}, "", "", "", "", ""},
		{Counts{Calls: 4, Failures: 2}, "failure rate", "", "", "failure rate", ""},
		{Counts{Calls: 4, Slow: 2}, "", "", "", "", ""},
		{Counts{Calls: 4, Failures: 2, Slow: 3}, "failure rate", "slow call rate", "", "failure rate", ""},
		{Counts{Calls: 4, Slow: 3}, "", "slow call rate", "", "slow call rate", ""},
		{Counts{Calls: 19, Failures: 19, ConsecutiveFailures: 4}, "failure rate", "", "consecutive failures", "failure rate", ""},
		{Counts{Calls: 20, Failures: 10, ConsecutiveFailures: 4}, "failure rate", "", "consecutive failures", "failure rate", "failure rate"},
		{Counts{Calls: 20, Failures: 9, ConsecutiveFailures: 5}, "", "", "consecutive failures", "", "consecutive failures"},
		{Counts{Calls: 20, Slow: 20}, "", "slow call rate", "", "slow call rate", "slow call rate"},
		{Counts{Calls: 20, Slow: 19}, "", "slow call rate", "", "slow call rate", ""},
	}
	for _, tc := range cases {
		got := [5]string{rate(tc.c), slow(tc.c), run(tc.c), both(tc.c), DefaultTrip(tc.c)}
		want := [5]string{tc.rate, tc.slow, tc.run, tc.both, tc.defaultTrip}
		if got != want {
			t.Errorf("%+v: rate, slow, run, both, default = %q, want %q", tc.c, got, want)
		}
	}
}

// The rule constructors panic, naming the rule and the argument, on values
// that can only be a mistake.
func TestTripRuleArguments(t *testing.T) {
	for _, tt := range []struct {
		f    func()
		want string
	}{
		{func() { FailureRate(0, 1) }, "breaker: FailureRate(0, 1): rate must be in (0, 1]"},
		{func() { FailureRate(1.5, 1) }, "breaker: FailureRate(1.5, 1): rate must be in (0, 1]"},
		{func() { SlowCallRate(math.NaN(), 1) }, "breaker: SlowCallRate(NaN, 1): rate must be in (0, 1]"},
		{func() { FailureRate(0.5, -1) }, "breaker: FailureRate(0.5, -1): minCalls must not be negative"},
		{func() { ConsecutiveFailures(0) }, "breaker: ConsecutiveFailures(0): n must be at least 1"},
	} {
		func() {
			defer func() {
				if got := recover(); got != tt.want {
					t.Errorf("panic = %v, want %q", got, tt.want)
				}
			}()
			tt.f()
		}()
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
			t.Errorf("MustNew(Probes -1) panicked with %v, want New's error", err)
		}
	}()
	MustNew(Config{Probes: -1})
}
