package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// movable is the address every instance's client dials, moved by a
// failover from the old primary to the promoted replica.
type movable struct{ addr atomic.Pointer[string] }

func (m *movable) set(addr string) { m.addr.Store(&addr) }

// waiting is an effect.Store that counts, once, that its instance found
// a key pending in another run.
type waiting struct {
	effect.Store
	n    *atomic.Int32
	once sync.Once
}

func (w *waiting) PutIfAbsent(ctx context.Context, key effect.Key, rec effect.Record) (effect.Record, bool, error) {
	cur, ok, err := w.Store.PutIfAbsent(ctx, key, rec)
	if err == nil && !ok && cur.State == effect.Pending {
		w.once.Do(func() { w.n.Add(1) })
	}
	return cur, ok, err
}

func (w *waiting) Losses(ctx context.Context, m effect.Member) (uint64, error) {
	return w.Store.(effect.LossWatcher).Losses(ctx, m)
}

// failures is an effect.Store that records, by key, the two failures
// after which the owner of a run is told ErrUnknown with its result (see
// Store loss in package effect): a beat (a Renew claim) and a write of
// the Completed outcome. A store operation that times out on a loaded
// machine is such a failure.
type failures struct {
	effect.Store
	mu            sync.Mutex
	beat, outcome map[effect.Key]bool
}

func newFailures(s effect.Store) *failures {
	return &failures{Store: s, beat: map[effect.Key]bool{}, outcome: map[effect.Key]bool{}}
}

func (f *failures) PutIfAbsent(ctx context.Context, key effect.Key, rec effect.Record) (effect.Record, bool, error) {
	cur, ok, err := f.Store.PutIfAbsent(ctx, key, rec)
	if err != nil {
		f.mu.Lock()
		f.beat[key] = f.beat[key] || rec.Renew
		f.outcome[key] = f.outcome[key] || rec.State == effect.Completed
		f.mu.Unlock()
	}
	return cur, ok, err
}

func (f *failures) Update(ctx context.Context, key effect.Key, prev, next effect.Record) (bool, error) {
	ok, err := f.Store.Update(ctx, key, prev, next)
	if err != nil && next.State == effect.Completed {
		f.mu.Lock()
		f.outcome[key] = true
		f.mu.Unlock()
	}
	return ok, err
}

func (f *failures) Losses(ctx context.Context, m effect.Member) (uint64, error) {
	return f.Store.(effect.LossWatcher).Losses(ctx, m)
}

// unconfirmed reports whether a beat of key failed and so did a write of
// its outcome: the owner may then be told ErrUnknown.
func (f *failures) unconfirmed(key effect.Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.beat[key] && f.outcome[key]
}

// ownerTold returns nil when the owner of key's run, told res and err,
// got want as the contract says: nil, or an ambiguous ErrUnknown when
// fails saw a beat and the outcome's write fail (a timeout on a loaded
// machine); the outcome is written back either way.
func ownerTold(fails *failures, key effect.Key, res []byte, err error, want string) error {
	unknown := errors.Is(err, effect.ErrUnknown) && portico.ClassOf(err) == portico.Ambiguous
	if string(res) != want || err != nil && (!unknown || !fails.unconfirmed(key)) {
		return fmt.Errorf("the owner's Do = %q, %v (a beat and the outcome's write failed: %v); want %q, with an ambiguous ErrUnknown only if both failed",
			res, err, fails.unconfirmed(key), want)
	}
	return nil
}

// instance returns a Runner on a Store and client of its own, dialing m:
// one process of a service. A non-nil waiters counts the instance once it
// finds a key pending in another.
func (m *movable) instance(t *testing.T, waiters *atomic.Int32) *effect.Runner {
	t.Helper()
	var wrap func(effect.Store) effect.Store
	if waiters != nil {
		wrap = func(s effect.Store) effect.Store { return &waiting{Store: s, n: waiters} }
	}
	return lossInstance(t, func() string { return *m.addr.Load() }, wrap)
}

// lossInstance is movable.instance dialing addr(), its Store wrapped by
// wrap unless nil, closed when t ends.
func lossInstance(t *testing.T, addr func() string, wrap func(effect.Store) effect.Store) *effect.Runner {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr())
		}})
	t.Cleanup(func() { c.Close() })
	s, err := New(Config{Client: c, Timeout: lossTimeout, Probe: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var store effect.Store = s.Effects()
	if wrap != nil {
		store = wrap(store)
	}
	r, err := effect.New(effect.Config{Store: store, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// kill9 kills srv with SIGKILL and starts it again on the same port:
// empty, unless srv persists its data (see redistest.StartWith).
func kill9(t *testing.T, srv *redistest.Server) {
	t.Helper()
	c := redistest.NewClient(srv.Addr)
	info, err := c.Info(context.Background(), "server").Result()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(info, "process_id:")
	if i < 0 {
		t.Fatal("no process_id in INFO server")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(info[i+len("process_id:"):], "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Stop() // reaps the killed process
	srv.Restart()
}

// lossTimeout is the Store Timeout of the loss tests' instances: with
// their Probe (20 ms) and Poll (10 ms), a quarantine lasts
// 20 + 3*(10 + 250) = 800 ms.
const (
	lossTimeout    = 250 * time.Millisecond
	lossQuarantine = 800 * time.Millisecond
)

// decide calls Do until the answer is not "nothing ran" (the store failed,
// or refused the claim during a quarantine), as a caller retrying a
// Transient error after its RetryAfter does; refused counts the refusals.
func decide(ctx context.Context, r *effect.Runner, key effect.Key, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	res, _, err := decideCounting(ctx, r, key, fn)
	return res, err
}

func decideCounting(ctx context.Context, r *effect.Runner, key effect.Key, fn func(context.Context) ([]byte, error)) (res []byte, refused int, err error) {
	for {
		res, err := r.Do(ctx, key, fn)
		wait := 10 * time.Millisecond
		if errors.Is(err, effect.ErrQuarantined) {
			refused++
			wait = portico.RetryAfterOf(err)
		}
		if !errors.Is(err, effect.ErrStore) && !errors.Is(err, effect.ErrQuarantined) || ctx.Err() != nil {
			return res, refused, err
		}
		time.Sleep(wait)
	}
}

// TestEffectOnceThroughStoreLoss: 50 instances call one key while one of
// them runs the effect, and the server loses its records: SIGKILL and
// restart (no persistence), FLUSHALL, or a failover to a replica that had
// the epoch and older records but not the pending claim. The effect runs
// once and every caller is told its result or Unknown, never a second run
// told ok; the owner's outcome is written back, so a later caller gets
// it. Without the store's epoch and the runner's rules, the pollers found
// the key absent, ran the effect again, and all 50 were told ok.
//
// Three steps completed before the loss, each on an instance of its own
// (the completers). A caller in a process started after the loss is
// refused while the quarantine lasts, then gets the completer's outcome,
// which the completer wrote back when it saw the store's epoch change:
// each step ran once. The first completer reaches the server through a
// proxy; in the "lost replies" cases the first three replies it is sent
// after the loss are dropped (its checks of the epoch, its write-back),
// and it still writes back within the quarantine. The third completer
// dies before the loss (its Runner is closed): its step runs again after
// the quarantine unless the server is durable (the residual case of the
// package documentation). Before the completers kept their outcomes, every
// step completed before a kill or a flush ran twice.
//
// "kill, aof" is the durable store of the package documentation:
// appendonly yes with appendfsync always, SIGKILL and restart. Nothing
// acknowledged is lost: the key completed before the restart returns its
// record without running again, the key under way runs once and every
// caller is told its result, none refused as quarantined (the restart is
// still seen as a change of server, which only new claims pay for).
// (A SIGKILL loses nothing the server wrote to its file: appendfsync
// always is for a crash of the machine, which no test here injects.)
func TestEffectOnceThroughStoreLoss(t *testing.T) {
	for _, fault := range []string{"kill", "kill, aof", "flush", "failover", "kill, lost replies", "flush, lost replies"} {
		t.Run(fault, func(t *testing.T) {
			durable := fault == "kill, aof"
			drops := strings.HasSuffix(fault, "lost replies")
			var primary *redistest.Server
			if durable {
				primary = redistest.StartWith(t, "--appendonly", "yes", "--appendfsync", "always")
			} else {
				primary = redistest.Start(t)
			}
			var m movable
			m.set(primary.Addr)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			// Three keys completed before the loss, each on its completer;
			// the first one's through a proxy where replies are lost.
			p := primary.Proxy(t)
			first := m.instance(t, nil)
			if drops {
				first = lossInstance(t, func() string { return p.Addr }, nil)
			}
			var before [3]effect.Key
			var runsBefore [3]atomic.Int32
			chargeBefore := func(i int) func(context.Context) ([]byte, error) {
				return func(context.Context) ([]byte, error) {
					runsBefore[i].Add(1)
					return []byte("charged-" + strconv.Itoa(i)), nil
				}
			}
			completers := [3]*effect.Runner{first, m.instance(t, nil), m.instance(t, nil)}
			for i := range before {
				before[i], _ = effect.StepKey("op-0", "charge-"+strconv.Itoa(i))
				if _, err := decide(ctx, completers[i], before[i], chargeBefore(i)); err != nil {
					t.Fatal(err)
				}
			}
			completers[2].Close() // its process dies before the loss
			var replica *redistest.Server
			if fault == "failover" {
				// The replica has everything but the last writes.
				replica = redistest.Start(t)
				src, dst := redistest.NewClient(primary.Addr), redistest.NewClient(replica.Addr)
				defer src.Close()
				defer dst.Close()
				keys, err := src.Keys(ctx, "*").Result()
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					d, err := src.Dump(ctx, k).Result()
					if err != nil {
						t.Fatal(err)
					}
					ttl, _ := src.PTTL(ctx, k).Result()
					if err := dst.RestoreReplace(ctx, k, max(ttl, 0), d).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}

			key, _ := effect.StepKey("op-1", "charge")
			const callers = 50
			runners := make([]*effect.Runner, callers)
			var waiters atomic.Int32
			for i := range runners {
				runners[i] = m.instance(t, &waiters)
			}
			var runs, decided atomic.Int32
			var owner atomic.Int32 // the caller whose run went first
			owner.Store(-1)
			charge, started, release := held(&runs)
			results := make([]string, callers)
			errs := make([]error, callers)
			var refusals atomic.Int32 // callers' claims refused as quarantined
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					res, refused, err := decideCounting(ctx, runners[i], key, func(ctx context.Context) ([]byte, error) {
						owner.CompareAndSwap(-1, int32(i))
						return charge(ctx)
					})
					results[i], errs[i] = string(res), err
					refusals.Add(int32(refused))
					decided.Add(1)
				})
			}
			<-started
			// Every other instance polls the pending key. (One that has not
			// touched the store before the loss is a process started after
			// it: see the package documentation.)
			for waiters.Load() < callers-1 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}

			epochBefore := epochOf(t, *m.addr.Load())
			switch strings.TrimSuffix(fault, ", lost replies") {
			case "kill", "kill, aof":
				kill9(t, primary)
			case "flush":
				c := redistest.NewClient(primary.Addr)
				if err := c.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				c.Close()
			case "failover":
				m.set(replica.Addr)
				kill9(t, primary) // the old primary is gone; its clients reconnect to the replica
			}
			if drops {
				for range 3 {
					p.DropReply("EVAL")
				}
			}

			// Wait for the owner's beat to write its claim back (or, without
			// it, for every caller but the owner to be done).
			raw := redistest.NewClient(*m.addr.Load())
			for wait := time.Now().Add(5 * time.Second); decided.Load() < callers-1 && time.Now().Before(wait); time.Sleep(time.Millisecond) {
				if n, _ := raw.Exists(ctx, "portico:fx:"+tag(string(key))).Result(); n == 1 {
					break
				}
			}
			raw.Close()
			// A process that starts after the loss asks for the keys
			// completed before it: refused during the quarantine, then
			// given the outcome its completer wrote back; the dead
			// completer's key, whose record was lost, runs again (the cost
			// of a store that is not durable).
			asker := m.instance(t, nil)
			var refused [3]int
			for i := range before {
				var res []byte
				var err error
				res, refused[i], err = decideCounting(ctx, asker, before[i], chargeBefore(i))
				if want := "charged-" + strconv.Itoa(i); err != nil || string(res) != want {
					t.Errorf("the key completed before the loss on completer %d = %q, %v; want %q", i, res, err, want)
				}
			}
			kept := !durable && fault != "failover" // the replica had the records; the AOF had them
			for i := range before {
				wantRuns := int32(1)
				if i == 2 && kept {
					wantRuns = 2
				}
				if n := runsBefore[i].Load(); n != wantRuns {
					t.Errorf("the key completed before the loss on completer %d ran %d times after %d refusals, want %d", i, n, refused[i], wantRuns)
				}
			}
			// The asker may read a write-back whose reply was one of the
			// three dropped: the completer sends it again, and the third
			// drop is its, at its next Poll, not necessarily by now.
			for wait := time.Now().Add(10 * time.Second); drops && p.Dropped() < 3 && time.Now().Before(wait); time.Sleep(time.Millisecond) {
			}
			if drops && p.Dropped() != 3 {
				t.Errorf("replies dropped to the first completer = %d 10 s after the loss, want 3", p.Dropped())
			}

			close(release)
			wg.Wait()
			ok, unk := 0, 0
			for i := range callers {
				switch {
				case errs[i] == nil && results[i] == "charged":
					ok++
				case errors.Is(errs[i], effect.ErrUnknown):
					unk++
				default:
					t.Errorf("caller %d = %q, %v; want the result or Unknown", i, results[i], errs[i])
				}
			}
			t.Logf("%s: runs of the key under way %d (callers told ok %d, unknown %d, claims refused %d); runs of the keys completed before on live completers %d, %d, on the dead one %d (asker refused %v, replies dropped %d)",
				fault, runs.Load(), ok, unk, refusals.Load(), runsBefore[0].Load(), runsBefore[1].Load(), runsBefore[2].Load(), refused, p.Dropped())
			if n := runs.Load(); n != 1 {
				t.Errorf("the effect ran %d times, want 1", n)
			}
			if ok < 1 {
				t.Errorf("callers told ok = %d, want at least the owner", ok)
			}
			if durable {
				// Every waiter reads the owner's record, which the AOF kept.
				// The owner itself may be told Unknown: it missed a beat
				// while the server was down, and its outcome may reach the
				// store's probe window after the restart (it writes it back
				// later), so it cannot know that its claim survived.
				for i := range callers {
					if i != int(owner.Load()) && errs[i] != nil {
						t.Errorf("through a durable restart: caller %d, not the owner, = %v; want the owner's result", i, errs[i])
					}
				}
				if refusals.Load() != 0 {
					t.Errorf("through a durable restart: %d claims refused, want none", refusals.Load())
				}
				// The epoch survived (no records lost); the restart is seen
				// as a change of server all the same.
				if e := epochOf(t, primary.Addr); e.id != epochBefore.id || e.lost == 0 {
					t.Errorf("epoch after the restart = %+v, before %+v; want the same id, marked lost", e, epochBefore)
				}
			}
			// The owner wrote its outcome back over the lost record.
			if res, err := decide(ctx, m.instance(t, nil), key, charge); err != nil || string(res) != "charged" || runs.Load() != 1 {
				t.Errorf("a later caller = %q, %v after %d runs; want the owner's result", res, err, runs.Load())
			}
		})
	}
}

// epochInfo is the effect epoch on one server (see epochLua).
type epochInfo struct {
	id   string
	lost int64 // unix milliseconds, 0 for never
}

// epochOf reads the effect epoch of the server at addr.
func epochOf(t *testing.T, addr string) epochInfo {
	t.Helper()
	c := redistest.NewClient(addr)
	defer c.Close()
	v, err := c.HMGet(context.Background(), "portico:fx:epoch", "id", "lost").Result()
	if err != nil {
		t.Fatal(err)
	}
	var e epochInfo
	e.id, _ = v[0].(string)
	if l, ok := v[1].(string); ok {
		e.lost, _ = strconv.ParseInt(l, 10, 64)
	}
	return e
}

// proxied returns a Runner whose Store's client reaches srv through p,
// with go-redis's retries (3, its default) or none (-1), and the records
// of its warnings.
func proxied(t *testing.T, p *redistest.Proxy, retries int) (*effect.Runner, *logs) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr, ContextTimeoutEnabled: true, MaxRetries: retries,
		DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	s, err := New(Config{Client: c, Timeout: 200 * time.Millisecond, Probe: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := &logs{}
	// Keep none: no poll of the store's members shares the proxy's faults,
	// which are meant for the claim and the outcome.
	r, err := effect.New(effect.Config{Store: s.Effects(), Poll: 10 * time.Millisecond, Keep: -1, Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, h
}

// TestEffectClaimReplyLost: the server runs a claim and its reply is lost
// (or comes after the client gave up). With go-redis's retries the claim
// is resent: the store recognises the caller's own claim and the effect
// runs once, at once. Without them, Do says nothing ran (a Transient
// ErrStore) and the caller's retry runs it at once. The claim used to be
// taken for another run's: the resend or the retry waited out the
// 5-minute lease, then reported Unknown for an effect that never ran.
func TestEffectClaimReplyLost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		fault   func(p *redistest.Proxy)
		after   func(p *redistest.Proxy)
	}{
		{"lost reply, resent", 3, func(p *redistest.Proxy) { p.DropReply("EVAL") }, nil},
		{"lost reply, no resend", -1, func(p *redistest.Proxy) { p.DropReply("EVAL") }, nil},
		{"late reply", -1, func(p *redistest.Proxy) { p.Delay(400 * time.Millisecond) }, func(p *redistest.Proxy) { p.Delay(0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			p := srv.Proxy(t)
			r, _ := proxied(t, p, tc.retries)
			other, _ := proxied(t, p, -1)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			key, _ := effect.StepKey("op-1", "charge")
			var runs atomic.Int32
			charge := func(context.Context) ([]byte, error) { runs.Add(1); return []byte("charged"), nil }
			// The scripts are loaded first: a NOSCRIPT error is no lost reply.
			warm, _ := effect.StepKey("op-0", "warm")
			if _, err := decide(ctx, r, warm, charge); err != nil || runs.Swap(0) != 1 {
				t.Fatal(err)
			}
			tc.fault(p)
			res, err := r.Do(ctx, key, charge)
			if tc.after != nil {
				tc.after(p)
			}
			if tc.retries > 0 {
				if err != nil || string(res) != "charged" || runs.Load() != 1 {
					t.Fatalf("Do with the claim's reply lost and resent = %q, %v after %d runs; want the effect run once", res, err, runs.Load())
				}
			} else {
				if !errors.Is(err, effect.ErrStore) || portico.ClassOf(err) != portico.Transient || runs.Load() != 0 {
					t.Fatalf("Do with the claim's reply lost = %q, %v after %d runs; want a transient ErrStore, nothing run", res, err, runs.Load())
				}
				// The claim is in the store: another process would wait for it.
				if rec, ok, err := other.Status(ctx, key); !ok || err != nil || rec.State != effect.Pending {
					t.Fatalf("Status = %+v, %v, %v; want the claim pending", rec, ok, err)
				}
				start := time.Now()
				res, err = decide(ctx, r, key, charge)
				if err != nil || string(res) != "charged" || runs.Load() != 1 {
					t.Fatalf("the retry = %q, %v after %d runs and %v; want the effect run once", res, err, runs.Load(), time.Since(start))
				}
			}
			if tc.name != "late reply" && p.Dropped() != 1 {
				t.Errorf("replies dropped = %d, want 1", p.Dropped())
			}
			if res, err := decide(ctx, other, key, charge); err != nil || string(res) != "charged" || runs.Load() != 1 {
				t.Errorf("a later caller = %q, %v after %d runs; want the stored result", res, err, runs.Load())
			}
			t.Logf("%s: effect runs %d, replies dropped %d", tc.name, runs.Load(), p.Dropped())
		})
	}
}

// TestEffectOutcomeReplyLost: the reply to the update that records the
// outcome is lost and go-redis resends it; the resent compare-and-swap
// finds the record moved already, and the runner, reading it back, sees
// its own outcome: recorded, with no warning.
func TestEffectOutcomeReplyLost(t *testing.T) {
	srv := redistest.Start(t)
	p := srv.Proxy(t)
	r, h := proxied(t, p, 3)
	ctx := context.Background()
	key, _ := effect.StepKey("op-1", "charge")
	res, err := r.Do(ctx, key, func(context.Context) ([]byte, error) {
		p.DropReply("EVAL") // the next script is the update
		return []byte("charged"), nil
	})
	if err != nil || string(res) != "charged" || p.Dropped() != 1 {
		t.Fatalf("Do = %q, %v with %d replies dropped; want the result, one reply dropped", res, err, p.Dropped())
	}
	if rec, ok, err := r.Status(ctx, key); !ok || err != nil || rec.State != effect.Completed || string(rec.Result) != "charged" {
		t.Errorf("Status = %+v, %v, %v; want completed", rec, ok, err)
	}
	if h.has("WARN") {
		t.Errorf("logs = %q, want no warning", h.out)
	}
}

// TestEffectNewcomerAfterLoss: one instance runs the effect and the server
// loses its records; a Poll later a process started after the loss (it
// knows no epoch) asks for the key. The owner's heartbeat has sent its
// claim again, which found the epoch gone (or the server changed) and
// wrote the claim back: the newcomer finds the key pending, waits past the
// quarantine, gets the owner's result, and the effect runs once. Without
// the heartbeat the newcomer created a new epoch, claimed the key and ran
// it again, both told ok.
func TestEffectNewcomerAfterLoss(t *testing.T) {
	for _, fault := range []string{"kill", "flush", "failover"} {
		t.Run(fault, func(t *testing.T) {
			primary := redistest.Start(t)
			var m movable
			m.set(primary.Addr)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var replica *redistest.Server
			if fault == "failover" {
				replica = redistest.Start(t)
			}
			key, _ := effect.StepKey("op-1", "charge")
			var runs atomic.Int32
			charge, started, release := held(&runs)
			var fails *failures // the owner's
			owning := lossInstance(t, func() string { return *m.addr.Load() }, func(s effect.Store) effect.Store { fails = newFailures(s); return fails })
			owner := make(chan error)
			go func() {
				res, err := decide(ctx, owning, key, charge)
				owner <- ownerTold(fails, key, res, err, "charged")
			}()
			<-started
			if fault == "failover" {
				// The replica had the epoch, not the claim.
				src, dst := redistest.NewClient(primary.Addr), redistest.NewClient(replica.Addr)
				d, err := src.Dump(ctx, "portico:fx:epoch").Result()
				if err != nil {
					t.Fatal(err)
				}
				if err := dst.Restore(ctx, "portico:fx:epoch", 0, d).Err(); err != nil {
					t.Fatal(err)
				}
				src.Close()
				dst.Close()
			}
			switch fault {
			case "kill":
				kill9(t, primary)
			case "flush":
				c := redistest.NewClient(primary.Addr)
				if err := c.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				c.Close()
			case "failover":
				m.set(replica.Addr)
				kill9(t, primary)
			}
			// The owner beats every 10 ms: wait for a beat to reach the server
			// (or 500 ms, without heartbeats).
			raw := redistest.NewClient(*m.addr.Load())
			for wait := time.Now().Add(500 * time.Millisecond); time.Now().Before(wait); time.Sleep(5 * time.Millisecond) {
				if n, _ := raw.Exists(ctx, "portico:fx:"+tag(string(key))).Result(); n == 1 {
					break
				}
			}
			raw.Close()
			newcomer := m.instance(t, nil)
			if rec, ok, err := newcomer.Status(ctx, key); err != nil || !ok || rec.State != effect.Pending {
				t.Errorf("the key after the beat = %+v, %v, %v; want the owner's claim, pending", rec, ok, err)
			}
			answer := make(chan error)
			go func() {
				res, err := decide(ctx, newcomer, key, charge)
				if err == nil && string(res) != "charged" {
					err = errors.New("result " + string(res))
				}
				answer <- err
			}()
			time.Sleep(lossQuarantine) // the newcomer waits on the claim past the quarantine
			close(release)
			if err := <-owner; err != nil {
				t.Error(err)
			}
			err := <-answer
			if err != nil {
				t.Errorf("the newcomer's Do = %v; want the owner's result", err)
			}
			t.Logf("%s: effect runs %d; newcomer told %v", fault, runs.Load(), err)
			if n := runs.Load(); n != 1 {
				t.Errorf("the effect ran %d times, want 1", n)
			}
			if res, err := decide(ctx, m.instance(t, nil), key, charge); err != nil || string(res) != "charged" {
				t.Errorf("a later caller = %q, %v; want the owner's result", res, err)
			}
		})
	}
}

// TestEffectClusterFlush: on a Redis Cluster each hash slot's records have
// their epoch in that slot; a FLUSHALL while one instance runs an effect
// makes a newcomer, a beat later, find the owner's claim written back and
// get its result, and the effect runs once.
func TestEffectClusterFlush(t *testing.T) {
	srv := redistest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var fails *failures // the first instance's: the owner's
	instance := func() *effect.Runner {
		s, err := New(Config{Client: srv.ClusterClient(t), Timeout: lossTimeout, Probe: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var store effect.Store = s.Effects()
		if fails == nil {
			fails = newFailures(store)
			store = fails
		}
		r, err := effect.New(effect.Config{Store: store, Poll: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	key, _ := effect.StepKey("op-1", "charge")
	var runs atomic.Int32
	charge, started, release := held(&runs)
	owning := instance()
	owner := make(chan error)
	go func() {
		res, err := decide(ctx, owning, key, charge)
		owner <- ownerTold(fails, key, res, err, "charged")
	}()
	<-started
	c := srv.ClusterClient(t)
	if err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.FlushAll(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	for wait := time.Now().Add(500 * time.Millisecond); time.Now().Before(wait); time.Sleep(5 * time.Millisecond) {
		if n, _ := c.Exists(ctx, "portico:fx:"+tag(string(key))).Result(); n == 1 {
			break
		}
	}
	answer := make(chan error)
	go func() {
		res, err := decide(ctx, instance(), key, charge)
		if err == nil && string(res) != "charged" {
			err = errors.New("result " + string(res))
		}
		answer <- err
	}()
	time.Sleep(lossQuarantine)
	close(release)
	if err := <-owner; err != nil {
		t.Error(err)
	}
	if err := <-answer; err != nil {
		t.Errorf("the newcomer's Do = %v; want the owner's result", err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the effect ran %d times, want 1", n)
	}
	// The epoch is in the record's slot.
	ekeys, err := c.Keys(ctx, "portico:fx:epoch*").Result()
	if err != nil || len(ekeys) != 1 || slotOf(ekeys[0]) != slotOf("portico:fx:"+tag(string(key))) {
		t.Errorf("epoch keys = %q, %v; want one, in the record's slot", ekeys, err)
	}
}

// TestEffectWithoutInfo: a server that refuses INFO to the client (an
// ACL, or a managed service) still runs effects: the epoch keeps no
// run_id. The scripts used to fail, and every effect with them.
func TestEffectWithoutInfo(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := srv.Client(t)
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "app", Password: "pw", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	if err := c.Info(ctx, "server").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("INFO as app = %v, want NOPERM: the test would prove nothing", err)
	}
	s, err := New(Config{Client: c, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	r, err := effect.New(effect.Config{Store: s.Effects()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	key, _ := effect.StepKey("op-1", "charge")
	res, err := r.Do(ctx, key, func(context.Context) ([]byte, error) { return []byte("charged"), nil })
	if err != nil || string(res) != "charged" {
		t.Fatalf("Do = %q, %v; want the effect run", res, err)
	}
}

// held returns an effect that counts its runs in runs and holds its first
// run, once started is closed, until release is closed.
func held(runs *atomic.Int32) (charge func(context.Context) ([]byte, error), started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	charge = func(context.Context) ([]byte, error) {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return []byte("charged"), nil
	}
	return charge, started, release
}
