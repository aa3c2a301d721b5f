package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// TestEffectOutcomeWrittenBack: an instance runs an effect and the server
// is stopped (SIGSTOP) as it completes, or at +100 ms of a 300 ms effect,
// so the outcome cannot be recorded; the owner gets its result (told ok,
// or Unknown when a beat failed too). The server is resumed at +1.5 s, and
// 300 ms later another instance asks for the key: it gets the owner's
// result at once, the effect run once, because the owner wrote its
// outcome back when the server answered again. Without that, the other
// instance waited out the lease (5 minutes by default) and then got
// Unknown; with a 1 s lease it got Unknown at once. The owner told Unknown
// then resolves the key as the error says: Resolve accepts Happened on
// the key found Completed (it refused it as "not unknown"). Run with -v
// for the figures.
func TestEffectOutcomeWrittenBack(t *testing.T) {
	for _, tc := range []struct {
		name         string
		lease        time.Duration
		atCompletion bool
	}{
		{"stopped at completion", 0, true},
		{"stopped at +100ms", 0, false},
		{"stopped at +100ms, lease 1s", time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lease := tc.lease
			srv := redistest.Start(t)
			instance := func(f **failures) (*effect.Runner, *logs) {
				s := newStore(t, srv, Config{Timeout: 50 * time.Millisecond, Probe: 50 * time.Millisecond})
				var store effect.Store = s.Effects()
				if f != nil {
					*f = newFailures(store)
					store = *f
				}
				h := &logs{}
				r, err := effect.New(effect.Config{Store: store, Lease: lease, Logger: slog.New(h)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r, h
			}
			var fails *failures // a's
			a, ah := instance(&fails)
			b, _ := instance(nil)
			ctx := context.Background()
			// The scripts are loaded first: a NOSCRIPT error is no outage.
			warm, _ := effect.StepKey("op-0", "warm")
			for _, r := range []*effect.Runner{a, b} {
				if _, err := decide(ctx, r, warm, func(context.Context) ([]byte, error) { return []byte(`1`), nil }); err != nil {
					t.Fatal(err)
				}
			}
			key, _ := effect.StepKey("op-stop", "1")
			pid := serverPID(t, srv)
			var runs atomic.Int32
			var stopped time.Time
			fn := func(context.Context) ([]byte, error) {
				if runs.Add(1) == 1 && tc.atCompletion {
					time.Sleep(250 * time.Millisecond) // after the beats at 100 and 200 ms
					stopped = time.Now()
					signal(t, pid, syscall.SIGSTOP)
					return []byte(`"T"`), nil
				}
				time.Sleep(300 * time.Millisecond)
				return []byte(`"T"`), nil
			}
			type result struct {
				res []byte
				err error
				at  time.Time
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				res, err := a.Do(ctx, key, fn)
				done <- result{res, err, time.Now()}
			}()
			if !tc.atCompletion {
				time.Sleep(100 * time.Millisecond)
				stopped = time.Now()
				signal(t, pid, syscall.SIGSTOP)
			}
			owner := <-done
			time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
			signal(t, pid, syscall.SIGCONT)
			resumed := time.Now()
			// An owner whose beat failed too is told Unknown with its result
			// (see Store loss in package effect): stopped at +100 ms, a beat
			// fails; stopped at completion, only one that timed out on a
			// loaded machine.
			unknown := errors.Is(owner.err, effect.ErrUnknown) && portico.ClassOf(owner.err) == portico.Ambiguous
			if string(owner.res) != `"T"` || owner.err != nil && !unknown || !tc.atCompletion && !unknown ||
				tc.atCompletion && owner.err != nil && !fails.unconfirmed(key) {
				t.Fatalf("the owner's Do = %s, %v (a beat and the outcome's write failed: %v); want its result, with an ambiguous ErrUnknown if a beat failed",
					owner.res, owner.err, fails.unconfirmed(key))
			}
			// When the outcome lands, as another instance sees it.
			var written time.Duration
			for written == 0 && time.Since(resumed) < 300*time.Millisecond {
				if rec, ok, _ := b.Status(ctx, key); ok && rec.State == effect.Completed {
					written = time.Since(resumed)
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(time.Until(resumed.Add(300 * time.Millisecond)))
			c, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			asked := time.Now()
			res, err := decide(c, b, key, fn) // through an operation timed out on a loaded machine
			took := time.Since(asked)
			if err != nil || string(res) != `"T"` || runs.Load() != 1 {
				t.Fatalf("the other instance's Do 300 ms after the resume = %s, %v after %v, runs %d; want the owner's result, run once",
					res, err, took.Round(time.Millisecond), runs.Load())
			}
			// The owner told Unknown follows the error's advice: Resolve, as
			// happened, is accepted on the key now Completed, and keeps it.
			// A store operation that times out (a loaded machine) is asked
			// again, as the ErrStore error says.
			if owner.err != nil {
				err := a.Resolve(ctx, key, effect.Outcome{Happened: true, Result: []byte(`"T"`)})
				for deadline := time.Now().Add(10 * time.Second); errors.Is(err, effect.ErrStore) && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
					err = a.Resolve(ctx, key, effect.Outcome{Happened: true, Result: []byte(`"T"`)})
				}
				if err != nil {
					t.Errorf("the owner's Resolve(Happened) after ErrUnknown = %v, want nil", err)
				}
				rec, ok, err := b.Status(ctx, key)
				for deadline := time.Now().Add(10 * time.Second); err != nil && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
					rec, ok, err = b.Status(ctx, key)
				}
				if !ok || rec.State != effect.Completed || string(rec.Result) != `"T"` {
					t.Errorf("after the owner's Resolve the key is %v %s (%v), want completed \"T\"", rec.State, rec.Result, err)
				}
			}
			if !ah.has("WARN effect: outcome not recorded, writing it back") || !ah.has("INFO effect: outcome written back") {
				t.Errorf("the owner's logs = %q; want the outcome kept, then written back", ah.out)
			}
			t.Logf("owner %s (%v) %v after the stop; outcome seen written back %v after the resume; other instance %s in %v, asked %v after the resume; runs %d",
				owner.res, portico.ClassOf(owner.err), owner.at.Sub(stopped).Round(time.Millisecond), written.Round(time.Millisecond),
				res, took.Round(time.Millisecond), asked.Sub(resumed).Round(time.Millisecond), runs.Load())
		})
	}
}
