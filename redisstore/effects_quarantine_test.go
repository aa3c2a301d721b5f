package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// TestEffectNewStepAfterLoss: while one instance runs an effect, the server
// loses its records (FLUSHALL, or SIGKILL and restart). Brand-new steps
// asked for at once, by instances that knew the epoch and by a process
// started after the loss, are refused without anything stored (Transient,
// NotSent, ErrQuarantined, a RetryAfter within the quarantine), then run
// once each after the quarantine and are never recorded Unknown; the
// owner's run stays exclusive: a caller of its key after the quarantine
// finds its claim and gets its result. Before this rule each new step was
// recorded Unknown, for 24 hours, during a quarantine of a whole Lease.
func TestEffectNewStepAfterLoss(t *testing.T) {
	for _, fault := range []string{"flush", "kill"} {
		t.Run(fault, func(t *testing.T) {
			srv := redistest.Start(t)
			var m movable
			m.set(srv.Addr)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var fails *failures // the owner's
			owning := lossInstance(t, func() string { return *m.addr.Load() }, func(s effect.Store) effect.Store { fails = newFailures(s); return fails })
			fleet := []*effect.Runner{owning, m.instance(t, nil), m.instance(t, nil)}
			for i, r := range fleet { // each instance knows the epoch
				k, _ := effect.StepKey("old-"+strconv.Itoa(i), "1")
				if _, err := decide(ctx, r, k, func(context.Context) ([]byte, error) { return []byte("ok"), nil }); err != nil {
					t.Fatal(err)
				}
			}
			owned, _ := effect.StepKey("op-owned", "charge")
			var ownedRuns atomic.Int32
			started, release := make(chan struct{}), make(chan struct{})
			charge := func(context.Context) ([]byte, error) {
				if ownedRuns.Add(1) == 1 {
					close(started)
					<-release
				}
				return []byte("charged"), nil
			}
			owner := make(chan error)
			go func() {
				res, err := decide(ctx, fleet[0], owned, charge)
				owner <- ownerTold(fails, owned, res, err, "charged")
			}()
			<-started

			lost := time.Now()
			switch fault {
			case "flush":
				c := redistest.NewClient(srv.Addr)
				if err := c.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				c.Close()
			case "kill":
				kill9(t, srv)
			}
			// The owner's beat detects the loss and writes its claim back.
			raw := redistest.NewClient(srv.Addr)
			defer raw.Close()
			for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(time.Millisecond) {
				if n, _ := raw.Exists(ctx, "portico:fx:"+tag(string(owned))).Result(); n == 1 {
					break
				}
			}

			// New steps, asked for at once, then again after RetryAfter.
			const steps = 30
			callers := append(fleet[1:], m.instance(t, nil)) // the last one started after the loss
			runs := make([]atomic.Int32, steps)
			refusedFor := make([]time.Duration, steps)
			refused := make([]int, steps)
			errs := make([]error, steps)
			var wg sync.WaitGroup
			for i := range steps {
				wg.Go(func() {
					k, _ := effect.StepKey("new-op-"+strconv.Itoa(i), "1")
					r := callers[i%len(callers)]
					for ctx.Err() == nil {
						res, err := r.Do(ctx, k, func(context.Context) ([]byte, error) { runs[i].Add(1); return []byte("done"), nil })
						if errors.Is(err, effect.ErrStore) {
							time.Sleep(10 * time.Millisecond)
							continue
						}
						if !errors.Is(err, effect.ErrQuarantined) {
							if err == nil && string(res) != "done" {
								err = errors.New("result " + string(res))
							}
							errs[i] = err
							if refused[i] > 0 {
								refusedFor[i] = time.Since(lost)
							}
							break
						}
						var pe *portico.Error
						if !errors.As(err, &pe) || pe.Class != portico.Transient || !pe.NotSent || pe.RetryAfter <= 0 || pe.RetryAfter > lossQuarantine {
							errs[i] = errors.New("refusal " + err.Error() + ": want Transient, NotSent, 0 < RetryAfter <= the quarantine")
							break
						}
						if n, _ := raw.Exists(ctx, "portico:fx:"+tag(string(k))).Result(); n != 0 {
							errs[i] = errors.New("a refused step left a record")
							break
						}
						refused[i]++
						time.Sleep(pe.RetryAfter)
					}
					// The outcome reaches the store, at once or, when the
					// store failed to take it (a timeout on a loaded
					// machine), by the Runner's write-back.
					var rec effect.Record
					var ok bool
					var err error
					for deadline := time.Now().Add(10 * time.Second); errs[i] == nil; time.Sleep(5 * time.Millisecond) {
						if rec, ok, err = r.Status(ctx, k); err == nil && ok && rec.State == effect.Completed {
							break
						}
						if time.Now().After(deadline) {
							errs[i] = fmt.Errorf("the step's record is %v (found %v, %v) 10 s after it ran, want completed", rec.State, ok, err)
						}
					}
				})
			}
			wg.Wait()
			var longest time.Duration
			nrefused, once := 0, 0
			for i := range steps {
				if errs[i] != nil {
					t.Errorf("new step %d: %v", i, errs[i])
				}
				if n := runs[i].Load(); n != 1 {
					t.Errorf("new step %d ran %d times, want 1", i, n)
				} else {
					once++
				}
				if refused[i] > 0 {
					nrefused++
				}
				longest = max(longest, refusedFor[i])
			}
			// Asked for at once, every new step is refused first: within the
			// quarantine of the loss's detection.
			if nrefused != steps || longest > lossQuarantine+time.Second {
				t.Errorf("new steps refused %d of %d, the last run %v after the loss; want all, within %v (+1 s of slack)", nrefused, steps, longest, lossQuarantine)
			}

			// The owner still runs: its claim holds past the quarantine.
			other := m.instance(t, nil)
			answer := make(chan error)
			go func() {
				res, err := decide(ctx, other, owned, charge)
				if err == nil && string(res) != "charged" {
					err = errors.New("result " + string(res))
				}
				answer <- err
			}()
			time.Sleep(20 * time.Millisecond)
			close(release)
			// The owner is told its result, with ErrUnknown only when the
			// store confirmed neither its claim (a beat failed: timed out on
			// a loaded machine) nor its outcome (see Store loss in package
			// effect); its outcome is written back all the same (below).
			if err := <-owner; err != nil {
				t.Error(err)
			}
			if err := <-answer; err != nil {
				t.Errorf("a caller of the owner's key after the quarantine: %v; want the owner's result", err)
			}
			if n := ownedRuns.Load(); n != 1 {
				t.Errorf("the owner's key ran %d times, want 1", n)
			}
			t.Logf("%s: new steps run once %d of %d, refused %d of %d until they ran, the last %v after the loss (quarantine %v); the owner's key ran %d time(s)",
				fault, once, steps, nrefused, steps, longest.Round(time.Millisecond), lossQuarantine, ownedRuns.Load())
		})
	}
}
