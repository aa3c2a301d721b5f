package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// lateDone is a context whose deadline is d while its Done closes a
// little later: the state in which a network timeout set to d has fired
// and ctx.Err() is not yet set, stretched from a hair to a millisecond so
// that a test sees it every time.
type lateDone struct {
	context.Context
	d time.Time
}

func (c lateDone) Deadline() (time.Time, bool) { return c.d, true }

// readTimeout is the error of a read past its connection's deadline, as
// go-redis returns it.
var readTimeout = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

// TestCallerDeadlineStartsNoOutage: the per-operation timeout is the
// earlier of the Store's Timeout and the caller's deadline, and which one
// bounded the operation decides whose its timing out is. The caller's
// (even when the network gives up a hair before ctx.Err() is set) returns
// the context's error and leaves the Store available for every other
// caller; the Store's own timeout, and a failure that is no timeout of the
// caller's, start the outage. Before this rule a caller's own 10 ms
// deadline failed every operation of the Store, every tenant's, for Probe.
func TestCallerDeadlineStartsNoOutage(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	const timeout = 50 * time.Millisecond
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name     string
		deadline time.Duration // the caller's, from the call; 0: none
		fails    time.Duration // when the operation fails, from the call
		err      error         // with what
		want     error         // do's error wraps it
		up       bool          // Available() after
	}{
		{"caller's deadline, timeout before ctx.Err", 10 * time.Millisecond, 10 * time.Millisecond, readTimeout, context.DeadlineExceeded, true},
		{"caller's deadline, context's timeout", 10 * time.Millisecond, 10 * time.Millisecond, context.DeadlineExceeded, context.DeadlineExceeded, true},
		{"caller's deadline equal to the Timeout", timeout, timeout, readTimeout, context.DeadlineExceeded, true},
		{"store's Timeout, caller's deadline later", timeout + time.Millisecond, timeout, readTimeout, ErrUnavailable, false},
		{"store's Timeout, no caller deadline", 0, timeout, readTimeout, ErrUnavailable, false},
		{"caller's deadline, connection refused", 10 * time.Millisecond, time.Millisecond, refused, ErrUnavailable, false},
		{"caller's deadline, a timeout before it", 10 * time.Millisecond, 5 * time.Millisecond, readTimeout, ErrUnavailable, false},
		// go-redis waits between dials and returns the last dial's error
		// once the context ends: the server refused, whoever's deadline.
		{"caller's deadline passed, connection refused", 10 * time.Millisecond, 12 * time.Millisecond, refused, ErrUnavailable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := New(Config{Client: c, Timeout: timeout, Probe: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if tc.deadline > 0 {
					d := time.Now().Add(tc.deadline)
					inner, cancel := context.WithDeadline(ctx, d.Add(time.Millisecond))
					defer cancel()
					ctx = lateDone{inner, d}
				}
				start, want := time.Now(), timeout
				if tc.deadline > 0 {
					want = min(timeout, tc.deadline)
				}
				err = s.do(ctx, func(ctx context.Context) error {
					if d, ok := ctx.Deadline(); !ok || d.Sub(start) != want {
						t.Errorf("operation's deadline = %v after the call, want the earlier of %v and the caller's %v", d.Sub(start), timeout, tc.deadline)
					}
					time.Sleep(tc.fails)
					return tc.err
				})
				if !errors.Is(err, tc.want) || tc.up && errors.Is(err, ErrUnavailable) {
					t.Errorf("do = %v, want %v", err, tc.want)
				}
				if s.Available() != tc.up {
					t.Errorf("Available() = %v, want %v", s.Available(), tc.up)
				}
			})
		})
	}
}

// TestShortCallerDeadlinesKeepStoreAvailable: callers whose deadlines
// (0.2 to 3 ms) end before a healthy server's answers (each held 2 ms by
// a proxy) get their context's error, and the Store stays available for
// the others: no warning, no fail-fast. A server that is really down
// (stopped) or slower than the Store's own Timeout still starts an outage
// at the first call whose deadline outlasts the Timeout.
func TestShortCallerDeadlinesKeepStoreAvailable(t *testing.T) {
	srv := redistest.Start(t)
	p := srv.Proxy(t)
	h := &logs{}
	client := redistest.NewClient(p.Addr)
	defer client.Close()
	// A Timeout far above a loaded machine's round trip: only the callers'
	// deadlines cut the calls until the server is made slower than it.
	const timeout = 500 * time.Millisecond
	s, err := New(Config{Client: client, Timeout: timeout, Probe: time.Hour, Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	b := s.Buckets()
	lim := &ratelimit.Limits{Requests: 1e9, RequestBurst: 1e9}
	take := func(ctx context.Context) error {
		_, _, err := b.Take(ctx, "k", lim, 1)
		return err
	}
	if err := take(context.Background()); err != nil { // dial before the delay
		t.Fatal(err)
	}
	p.Delay(2 * time.Millisecond)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var reported atomic.Bool // one error of the 400 says it
	late := 0
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				d := time.Duration(200+(g*50+i)%15*200) * time.Microsecond
				ctx, cancel := context.WithTimeout(context.Background(), d)
				err := take(ctx)
				cancel()
				if err != nil && (!errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable)) && !reported.Swap(true) {
					t.Errorf("Take with a %v deadline = %v, want nil or context.DeadlineExceeded", d, err)
				}
				if err != nil {
					mu.Lock()
					late++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if late < 100 {
		t.Errorf("%d of 400 calls timed out, want most: the test must exercise deadlines shorter than the server's answers", late)
	}
	if !s.Available() || h.has("WARN") {
		t.Fatalf("after %d calls that timed out by their callers' deadlines: Available() = %v, warning logged = %v; want true, false",
			late, s.Available(), h.has("WARN"))
	}
	if err := take(context.Background()); err != nil {
		t.Fatalf("Take without a deadline after the short ones = %v, want nil", err)
	}

	// Slower than the Store's Timeout: its own timeout, an outage.
	p.Delay(2 * timeout)
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	err = take(ctx)
	cancel()
	if !errors.Is(err, ErrUnavailable) || s.Available() || !h.has("WARN redisstore: redis unavailable") {
		t.Errorf("Take through a server slower than the Timeout = %v, Available() = %v; want ErrUnavailable, false, a warning", err, s.Available())
	}

	// Stopped: an outage for the first caller whose deadline outlasts the
	// Timeout. (go-redis dials in the background, retrying for about
	// 400 ms, so a caller with a shorter deadline sees its own deadline
	// pass, and fails alone until the pool reports the refused dials.)
	s2, err := New(Config{Client: srv.Client(t), Timeout: DefaultTimeout, Probe: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	_, _, err = s2.Buckets().Take(ctx, "k", lim, 1)
	cancel()
	if !errors.Is(err, ErrUnavailable) || s2.Available() {
		t.Errorf("Take with a 1 s deadline of a stopped server = %v, Available() = %v; want ErrUnavailable, false", err, s2.Available())
	}
}
