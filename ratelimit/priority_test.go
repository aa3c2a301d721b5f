package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// served records, in order, the Extra["name"] of each call a model starts
// and when (time since the bubble's start), and answers after d.
type served struct {
	mu    sync.Mutex
	t0    time.Time
	order []string
}

func (s *served) model(d time.Duration) portico.Model {
	inner := slowModel(d, 1)
	return portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
		s.mu.Lock()
		s.order = append(s.order, fmt.Sprintf("%s@%v", r.Extra["name"], time.Since(s.t0)))
		s.mu.Unlock()
		return inner.Generate(ctx, r)
	})
}

func (s *served) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.order, " ")
}

// named is a request of key "a" with priority p, named name.
func named(name string, p portico.Priority) *portico.Request {
	r := req("a", 1)
	r.Priority, r.Extra = p, map[string]any{"name": name}
	return r
}

// call is one request of a priority test's script: at At (since the
// bubble's start) it is sent, and Err is what it must end with.
type call struct {
	name string
	p    portico.Priority
	at   time.Duration
	err  error
}

// runCalls sends calls through cfg's Limiter to a model that takes 1s
// each, and returns the order of service ("name@start").
func runCalls(t *testing.T, cfg Config, calls []call) string {
	t.Helper()
	var got string
	synctest.Test(t, func(t *testing.T) {
		s := &served{t0: time.Now()}
		m := mustNew(t, cfg).Wrap(s.model(time.Second))
		var wg sync.WaitGroup
		for _, c := range calls {
			time.Sleep(c.at - time.Since(s.t0))
			wg.Go(func() {
				if _, err := m.Generate(t.Context(), named(c.name, c.p)); !errors.Is(err, c.err) {
					t.Errorf("%s: err = %v, want %v", c.name, err, c.err)
				}
			})
			synctest.Wait() // queued in this order
		}
		wg.Wait()
		got = s.String()
	})
	return got
}

// TestPriorityQueueOrder: the queue serves the highest priority first, in
// arrival order within a priority.
func TestPriorityQueueOrder(t *testing.T) {
	got := runCalls(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 4}}, []call{
		{"first", portico.Default, 0, nil},
		{"s", portico.Sheddable, 0, nil},
		{"d1", portico.Default, 0, nil},
		{"c", portico.Critical, 0, nil},
		{"d2", portico.Default, 0, nil},
	})
	if want := "first@0s c@1s d1@2s d2@3s s@4s"; got != want {
		t.Errorf("served %q, want %q", got, want)
	}
}

// TestPriorityAging: a Sheddable call queued 1.5s (Aging) ranks as Default,
// and goes before the Default calls that arrived after it; without aging
// (Aging an hour) every later Default goes first.
func TestPriorityAging(t *testing.T) {
	calls := []call{
		{"first", portico.Default, 0, nil},
		{"s", portico.Sheddable, 0, nil},
		{"d1", portico.Default, 500 * time.Millisecond, nil},
		{"d2", portico.Default, 1500 * time.Millisecond, nil},
	}
	for _, tc := range []struct {
		aging time.Duration
		want  string
	}{
		{1500 * time.Millisecond, "first@0s d1@1s s@2s d2@3s"},
		{time.Hour, "first@0s d1@1s d2@2s s@3s"},
	} {
		got := runCalls(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 4, Aging: tc.aging}}, calls)
		if got != tc.want {
			t.Errorf("Aging %v: served %q, want %q", tc.aging, got, tc.want)
		}
	}
}

// TestPriorityEvict: a full queue sheds its lowest-ranked call for a call
// of higher priority, never for one of the same or lower priority.
func TestPriorityEvict(t *testing.T) {
	got := runCalls(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 2}}, []call{
		{"first", portico.Default, 0, nil},
		{"s", portico.Sheddable, 0, ErrOverloaded}, // shed from the queue by c
		{"d", portico.Default, 0, nil},
		{"c", portico.Critical, 0, nil},
		{"s2", portico.Sheddable, 0, ErrOverloaded}, // below everything queued
		{"d2", portico.Default, 0, ErrOverloaded},   // the same as the lowest queued
	})
	if want := "first@0s c@1s d@2s"; got != want {
		t.Errorf("served %q, want %q", got, want)
	}
}

// TestPriorityReserve: with MaxInFlight 4 and Reserve 1, Sheddable calls
// fill 2 slots, Default 3, Critical 4; without a queue the rest are shed.
func TestPriorityReserve(t *testing.T) {
	got := runCalls(t, Config{Limits: Limits{MaxInFlight: 4}, Reserve: 1}, []call{
		{"s1", portico.Sheddable, 0, nil},
		{"s2", portico.Sheddable, 0, nil},
		{"s3", portico.Sheddable, 0, ErrOverloaded},
		{"d1", portico.Default, 0, nil},
		{"d2", portico.Default, 0, ErrOverloaded},
		{"c1", portico.Critical, 0, nil},
		{"c2", portico.Critical, 0, ErrOverloaded},
	})
	if want := "s1@0s s2@0s d1@0s c1@0s"; got != want {
		t.Errorf("served %q, want %q", got, want)
	}
}

// TestPriorityReserveQueued: a queued Default call waits for a slot below
// the reserve while a Critical call behind it takes the reserved slot.
func TestPriorityReserveQueued(t *testing.T) {
	got := runCalls(t, Config{Limits: Limits{MaxInFlight: 2}, Reserve: 1, Queue: Queue{Size: 2}}, []call{
		{"d1", portico.Default, 0, nil},
		{"d2", portico.Default, 0, nil},
		{"c", portico.Critical, 0, nil},
	})
	if want := "d1@0s c@0s d2@1s"; got != want {
		t.Errorf("served %q, want %q", got, want)
	}
}

func TestPriorityConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 1, Aging: -1}}, "ratelimit: negative Config.Queue.Aging"},
		{Config{Limits: Limits{MaxInFlight: 1}, Reserve: -1}, "ratelimit: negative Config.Reserve"},
		{Config{Limits: Limits{Requests: 1}, Reserve: 1}, "ratelimit: Config.Reserve without Limits.MaxInFlight or Config.Concurrency"},
	} {
		if _, err := New(tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestPriorityEvictByOwnPriority: aging orders the queue but does not
// protect a call from being shed for a higher priority. Two Sheddable
// calls queued 500 ms with Aging 200 ms rank as Critical; a Critical
// arrival finding the queue full sheds the Sheddable call served last,
// not itself: a priority is refused only while every lower one is. The
// aged call still goes first among equal ranks.
func TestPriorityEvictByOwnPriority(t *testing.T) {
	got := runCalls(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 2, Aging: 200 * time.Millisecond}}, []call{
		{"first", portico.Default, 0, nil},
		{"s1", portico.Sheddable, 0, nil},
		{"s2", portico.Sheddable, 0, ErrOverloaded}, // shed by c
		{"c", portico.Critical, 500 * time.Millisecond, nil},
	})
	if want := "first@0s s1@1s c@2s"; got != want {
		t.Errorf("served %q, want %q", got, want)
	}
}
