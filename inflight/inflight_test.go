package inflight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t testing.TB, cfg Config) *Caps {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sleeper answers after d.
func sleeper(d time.Duration) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
		select {
		case <-time.After(d):
			return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
		case <-ctx.Done():
			return nil, portico.FromContext(ctx)
		}
	})
}

func of(tenant string) *portico.Request {
	return &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Identity: portico.Identity{ClientKey: tenant}}
}

// Three instances over one Memory, Max 2 for tenant t: of 12 calls at
// once, 2 are admitted and 10 refused (Rejected, ClientLimit, ErrFull,
// nothing sent); tenant u's call is admitted beside them; once they end
// the slots are back.
func TestCapAcrossInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := &Memory{}
		var inst [3]portico.Model
		for i := range inst {
			inst[i] = mustNew(t, Config{Max: 2, Shared: portico.Shared[Store]{Store: mem}}).Wrap(sleeper(time.Second))
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted, refused := 0, 0
		for i := range 12 {
			wg.Go(func() {
				_, err := inst[i%3].Generate(context.Background(), of("t"))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted++
				case errors.Is(err, ErrFull) && portico.ClassOf(err) == portico.Rejected && portico.RefuserOf(err) == portico.ClientLimit && portico.NothingSent(err):
					refused++
				default:
					t.Errorf("call %d: %v", i, err)
				}
			})
		}
		synctest.Wait()
		if n := mem.InFlight("", "t"); n != 2 {
			t.Errorf("t's leases in flight = %d, want 2", n)
		}
		if _, err := inst[0].Generate(context.Background(), of("u")); err != nil {
			t.Errorf("tenant u beside t's cap: %v", err)
		}
		wg.Wait()
		if admitted != 2 || refused != 10 || mem.InFlight("", "t") != 0 {
			t.Errorf("admitted %d, refused %d, left %d; want 2, 10, 0", admitted, refused, mem.InFlight("", "t"))
		}
	})
}

// A call running for 10 TTLs (a long stream) keeps its slot: its lease
// is renewed, and another instance is refused throughout.
func TestLeaseRenewedWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := &Memory{}
		cfg := Config{Max: 1, TTL: time.Second, Shared: portico.Shared[Store]{Store: mem}}
		a, b := mustNew(t, cfg), mustNew(t, cfg)
		go a.Wrap(sleeper(10*time.Second)).Generate(context.Background(), of("t"))
		start := time.Now()
		for range 19 {
			time.Sleep(500 * time.Millisecond)
			if _, err := b.Wrap(sleeper(0)).Generate(context.Background(), of("t")); !errors.Is(err, ErrFull) {
				t.Fatalf("at %v, b's call = %v, want ErrFull", time.Since(start), err)
			}
		}
		time.Sleep(time.Second)
		if _, err := b.Wrap(sleeper(0)).Generate(context.Background(), of("t")); err != nil || a.Lost() != 0 {
			t.Errorf("after a's call: %v, lost %d, want nil, 0", err, a.Lost())
		}
	})
}

// A crashed instance's leases (taken, never renewed nor released) are
// back TTL after they were taken, not a moment sooner.
func TestCrashedLeasesBackAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := &Memory{}
		for i := range 2 {
			mem.Acquire(context.Background(), &Lease{Key: "t", ID: string(rune('a' + i)), Max: 2, TTL: 5 * time.Second})
		}
		c := mustNew(t, Config{Max: 2, TTL: 5 * time.Second, Shared: portico.Shared[Store]{Store: mem}})
		start := time.Now()
		for {
			_, err := c.Wrap(sleeper(0)).Generate(context.Background(), of("t"))
			if err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("slots back after %v, want 5s", got)
		}
	})
}

// failing is a Store that fails every operation.
type failing struct{}

var errDown = errors.New("store down")

func (failing) Acquire(context.Context, *Lease) (bool, error) { return false, errDown }
func (failing) Renew(context.Context, *Lease) (bool, error)   { return false, errDown }
func (failing) Release(context.Context, *Lease) error         { return errDown }

// A failing store refuses calls (fail closed), or, with FailOpen over 3
// instances of Max 6, admits 2 per instance on its own Memory.
func TestStoreFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		closed := mustNew(t, Config{Max: 6, Shared: portico.Shared[Store]{Store: failing{}}})
		if _, err := closed.Wrap(sleeper(0)).Generate(context.Background(), of("t")); !errors.Is(err, ErrStore) || !errors.Is(err, errDown) ||
			portico.ClassOf(err) != portico.Rejected || !portico.NothingSent(err) {
			t.Errorf("fail closed: %v, want Rejected wrapping ErrStore", err)
		}
		open := mustNew(t, Config{Max: 6, Shared: portico.Shared[Store]{Store: failing{}, FailOpen: true, Instances: 3}})
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for range 5 {
			wg.Go(func() {
				if _, err := open.Wrap(sleeper(time.Second)).Generate(context.Background(), of("t")); err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if ok != 2 {
			t.Errorf("fail open admitted %d of 5, want 2 (6/3)", ok)
		}
	})
}

func TestNewRefusesMistakes(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "inflight: Config.Max must be positive"},
		{Config{Max: 1, TTL: -1}, "inflight: negative Config.TTL"},
		{Config{Max: 1, TTL: time.Second, Renew: time.Second}, "inflight: Config.Renew must be positive and below TTL"},
		{Config{Max: 1, Shared: portico.Shared[Store]{FailOpen: true}}, "inflight: Config.Shared.FailOpen needs Shared.Instances > 0"},
		{Config{Max: 1, Shared: portico.Shared[Store]{Instances: 2}}, "inflight: Config.Shared.Instances without FailOpen"},
	} {
		if _, err := New(c.cfg); err == nil || err.Error() != c.want {
			t.Errorf("New(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}

// noRenew is a Memory whose renewals fail while down is set.
type noRenew struct {
	Memory
	down atomic.Bool
}

func (n *noRenew) Renew(ctx context.Context, l *Lease) (bool, error) {
	if n.down.Load() {
		return false, errDown
	}
	return n.Memory.Renew(ctx, l)
}

// A call whose renewals all fail for a whole TTL loses its lease: another
// instance takes the slot TTL after the last renewal, and once the store
// answers again the call counts one lost lease and reports it.
func TestLeaseLostWhenRenewalsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &noRenew{}
		cfg := Config{Max: 1, TTL: 3 * time.Second, Shared: portico.Shared[Store]{Store: st}}
		a, b := mustNew(t, cfg), mustNew(t, cfg)
		var ev events
		ctx := portico.ContextWithObserver(context.Background(), &ev)
		done := make(chan struct{})
		go func() { a.Wrap(sleeper(10*time.Second)).Generate(ctx, of("t")); close(done) }()
		time.Sleep(2500 * time.Millisecond) // renewed at 1 s and 2 s: expires at 5 s
		st.down.Store(true)
		start := time.Now()
		for {
			if _, err := b.Wrap(sleeper(0)).Generate(context.Background(), of("t")); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := time.Since(start); got != 2500*time.Millisecond {
			t.Errorf("slot taken by b %v after renewals failed, want 2.5s (TTL after the last renewal)", got)
		}
		st.down.Store(false)
		<-done
		if a.Lost() != 1 || len(ev.e) != 1 || ev.e[0].Reason != "inflight:lease_lost" {
			t.Errorf("Lost = %d, events %+v; want 1, one inflight:lease_lost", a.Lost(), ev.e)
		}
	})
}

// events records the events of calls.
type events struct {
	mu sync.Mutex
	e  []portico.Event
}

func (o *events) Observe(_ context.Context, e portico.Event) {
	o.mu.Lock()
	o.e = append(o.e, e)
	o.mu.Unlock()
}

// Max 4, Reserve 1, the calls of one tenant held in flight: two Sheddable
// calls are admitted and the third refused; a Default call then finds a
// third slot and the next is refused; a Critical call takes the fourth.
// Failing open with Max 8 and Reserve 2 over two instances, an instance's
// share (4 slots, 1 reserved) admits the same. A negative Reserve is an
// error.
func TestReserve(t *testing.T) {
	for _, cfg := range []Config{
		{Max: 4, Reserve: 1},
		{Max: 8, Reserve: 2, Shared: portico.Shared[Store]{Store: failing{}, FailOpen: true, Instances: 2}},
	} {
		synctest.Test(t, func(t *testing.T) {
			m := mustNew(t, cfg).Wrap(sleeper(time.Second))
			var wg sync.WaitGroup
			for i, c := range []struct {
				p    portico.Priority
				full bool
			}{
				{portico.Sheddable, false}, {portico.Sheddable, false}, {portico.Sheddable, true},
				{portico.Default, false}, {portico.Default, true},
				{portico.Critical, false}, {portico.Critical, true},
			} {
				r := of("t")
				r.Priority = c.p
				wg.Go(func() {
					if _, err := m.Generate(context.Background(), r); errors.Is(err, ErrFull) != c.full || !c.full && err != nil {
						t.Errorf("Max %d: call %d (%v): %v, want refused %v", cfg.Max, i, c.p, err, c.full)
					}
				})
				synctest.Wait()
			}
			wg.Wait()
		})
	}
	if _, err := New(Config{Max: 4, Reserve: -1}); err == nil || err.Error() != "inflight: negative Config.Reserve" {
		t.Errorf("New with Reserve -1 = %v, want inflight: negative Config.Reserve", err)
	}
}
