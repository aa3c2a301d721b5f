package redisstore

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// holdInstance is an instance with the loss tests' Timeout (lossTimeout),
// the default Probe (1 s) and Poll (100 ms), the given Hold, dialing
// addr, and the records of its logs. Its quarantine lasts
// 1 s + 3 x (100 + 250) ms = 2.05 s. With the default Timeout (50 ms)
// the operations of B and C, on fresh connections after a restart under
// -race on a loaded machine, timed out, each followed by a Probe of
// 1 s without operations, so that neither published A as a member
// within the quarantine, and a step ran twice.
func holdInstance(t *testing.T, addr string, hold time.Duration) (*effect.Runner, *logs) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	s, err := New(Config{Client: c, Timeout: lossTimeout})
	if err != nil {
		t.Fatal(err)
	}
	h := &logs{}
	r, err := effect.New(effect.Config{Store: s.Effects(), Hold: hold, Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, h
}

// TestEffectSlowOwnerThroughLoss: instance A completes 20 steps; the
// server loses them (FLUSHALL, or SIGKILL and restart); then A's replies
// come 50 ms past its Timeout (every operation fails, and its Store waits
// a Probe of 1 s after each failure) for longer than the 2.05 s
// quarantine. Instances B and C, which saw A a member, ask for the
// 20 steps at once and as each refusal's RetryAfter says. A is a member
// of the store until its Hold runs out, so the claims wait for its
// write-back: every step ran once, and B and C get A's results. Before the
// rule the quarantine was fixed: 20 of 20 ran twice. With a Hold (1 s)
// shorter than A's slow spell (3 s), the steps asked for once it has run out,
// and before A's write-back, run again (the residual: an owner cut off
// beyond its Hold), and A, writing back,
// reports each double run: a warning and an event to the observer of the
// call that ran it.
func TestEffectSlowOwnerThroughLoss(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fault      string
		hold, slow time.Duration
		runs       int32 // of each step
	}{
		{"flush, slow 3s", "flush", 0, 3 * time.Second, 1},
		{"kill, slow 3s", "kill", 0, 3 * time.Second, 1},
		{"flush, slow 3s, hold 1s", "flush", time.Second, 3 * time.Second, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			p := redistest.NewProxy(t, srv.Addr)
			a, alog := holdInstance(t, p.Addr, tc.hold)
			b, _ := holdInstance(t, srv.Addr, tc.hold)
			c, _ := holdInstance(t, srv.Addr, tc.hold)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const steps = 20
			runs := make([]atomic.Int32, steps)
			keys := make([]effect.Key, steps)
			step := func(i int) func(context.Context) ([]byte, error) {
				return func(context.Context) ([]byte, error) { runs[i].Add(1); return []byte("done " + strconv.Itoa(i)), nil }
			}
			obs := &events{} // A's calls' observer
			for i := range keys {
				keys[i], _ = effect.StepKey("op-"+strconv.Itoa(i), "charge")
				// decide: a first operation slower than the Timeout (-race on a
				// loaded machine) is a store outage, not the test's fault.
				if _, err := decide(portico.ContextWithObserver(ctx, obs), a, keys[i], step(i)); err != nil {
					t.Fatal(err)
				}
			}
			for i, r := range []*effect.Runner{b, c} { // each keeps an outcome: a member too
				k, _ := effect.StepKey("warm-"+strconv.Itoa(i), "1")
				if _, err := decide(ctx, r, k, func(context.Context) ([]byte, error) { return nil, nil }); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(300 * time.Millisecond) // every member seen by every instance
			switch tc.fault {
			case "flush":
				raw := redistest.NewClient(srv.Addr)
				if err := raw.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				raw.Close()
			case "kill":
				kill9(t, srv)
			}
			p.Delay(lossTimeout + 50*time.Millisecond)
			time.AfterFunc(tc.slow, func() { p.Delay(0) })
			for i, k := range keys {
				r := []*effect.Runner{b, c}[i%2]
				res, err := decide(ctx, r, k, step(i))
				if err != nil || string(res) != "done "+strconv.Itoa(i) {
					t.Errorf("step %d: %q, %v; want its result", i, res, err)
				}
			}
			// With a Hold, a step asked for once the Hold ran out and before
			// A's write-back runs again; one asked for after the write-back
			// (a loaded machine's slow loop) gets A's result: once or twice,
			// and the first, asked for within the quarantine, twice.
			twice := 0
			for i := range runs {
				if n := runs[i].Load(); n < 1 || n > tc.runs || (i == 0 && n != tc.runs) {
					t.Errorf("step %d ran %d times, want %d (1 or 2 after the first, with a Hold)", i, n, tc.runs)
				}
				if runs[i].Load() > 1 {
					twice++
				}
			}
			// A's write-back, after its slow spell, finds the steps run
			// again: it reports them all, however slowly a loaded machine
			// lets it write back (10 s guard); with none run twice, none
			// is reported over the slow spell and half a second.
			var reported, observed int
			counted := func() bool {
				reported = alog.count("WARN effect: a kept outcome's key was run again after a store loss")
				observed = obs.count(portico.EventSharedStore, "effect:ran_twice")
				return twice > 0 && reported >= twice && observed >= twice
			}
			for deadline := time.Now().Add(tc.slow + 500*time.Millisecond); !counted() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			}
			if twice > 0 {
				for deadline := time.Now().Add(10 * time.Second); !counted() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				}
			}
			if reported != twice || observed != twice {
				t.Errorf("A reported %d double runs in its log, %d to its calls' observer; want %d", reported, observed, twice)
			}
			t.Logf("%s: %d of %d completed steps ran twice, %d reported", tc.name, twice, steps, reported)
		})
	}
}
