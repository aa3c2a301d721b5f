package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/inflight"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// TestInFlightStore: leases up to the cap, an acquire resent for a held
// id admitted again without a second slot, renewal of a live lease only,
// release idempotent, expiry on the server's clock, and two tenants
// whose Name and Key concatenate alike kept apart.
func TestInFlightStore(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv, Config{}).InFlight()
	ctx := context.Background()
	lease := func(key, id string) *inflight.Lease {
		return &inflight.Lease{Name: "n", Key: key, ID: id, Max: 2, TTL: 300 * time.Millisecond}
	}
	for _, c := range []struct {
		l    *inflight.Lease
		want bool
	}{{lease("t", "a"), true}, {lease("t", "a"), true}, {lease("t", "b"), true}, {lease("t", "c"), false}} {
		if ok, err := st.Acquire(ctx, c.l); err != nil || ok != c.want {
			t.Errorf("Acquire(%s) = %v, %v, want %v", c.l.ID, ok, err, c.want)
		}
	}
	other := &inflight.Lease{Name: "n1", Key: "", ID: "x", Max: 1, TTL: time.Second} // "n"+"1" vs "n1"+""
	if ok, _ := st.Acquire(ctx, &inflight.Lease{Name: "n", Key: "1", ID: "y", Max: 1, TTL: time.Second}); !ok {
		t.Error("tenant n/1 refused")
	}
	if ok, _ := st.Acquire(ctx, other); !ok {
		t.Error("tenant n1/ shares n/1's set")
	}
	if n, _ := st.Held(ctx, "n", "t"); n != 2 {
		t.Errorf("Held = %d, want 2", n)
	}
	if err := st.Release(ctx, lease("t", "b")); err != nil {
		t.Fatal(err)
	}
	st.Release(ctx, lease("t", "b"))
	if ok, _ := st.Renew(ctx, lease("t", "b")); ok {
		t.Error("Renew of a released lease = true")
	}
	time.Sleep(200 * time.Millisecond)
	if ok, _ := st.Renew(ctx, lease("t", "a")); !ok {
		t.Error("Renew of a live lease = false")
	}
	time.Sleep(200 * time.Millisecond) // a: renewed 200 ms ago, 100 ms left
	if n, _ := st.Held(ctx, "n", "t"); n != 1 {
		t.Errorf("Held after renewal = %d, want 1", n)
	}
	time.Sleep(150 * time.Millisecond)
	if ok, _ := st.Renew(ctx, lease("t", "a")); ok {
		t.Error("Renew of an expired lease = true")
	}
	if n, _ := st.Held(ctx, "n", "t"); n != 0 {
		t.Errorf("Held after expiry = %d, want 0", n)
	}
}

// holder is a model that holds every call until release is closed,
// counting calls in flight and the most at once.
type holder struct {
	release      chan struct{}
	now, maximum atomic.Int64
	hold         time.Duration
}

func (h *holder) Generate(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
	n := h.now.Add(1)
	for m := h.maximum.Load(); n > m && !h.maximum.CompareAndSwap(m, n); m = h.maximum.Load() {
	}
	defer h.now.Add(-1)
	if h.hold > 0 {
		time.Sleep(h.hold)
	} else {
		<-h.release
	}
	return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
}

func tenantReq(key string) *portico.Request {
	return &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}, Identity: portico.Identity{ClientKey: key}}
}

func newCaps(t testing.TB, st inflight.Store, max int, ttl time.Duration) *inflight.Caps {
	t.Helper()
	c, err := inflight.New(inflight.Config{Max: max, TTL: ttl, Shared: portico.Shared[inflight.Store]{Store: st, Name: "inflight"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestInFlightThreeInstances: three instances, each its own client, cap
// 5 for one tenant; 60 callers (20 per instance) each make 10 calls of
// 5 ms: the calls in flight never pass 5, and the cap is reached.
func TestInFlightThreeInstances(t *testing.T) {
	srv := redistest.Start(t)
	h := &holder{hold: 5 * time.Millisecond}
	var inst [3]portico.Model
	for i := range inst {
		inst[i] = newCaps(t, newStore(t, srv, Config{}).InFlight(), 5, time.Second).Wrap(h)
	}
	var wg sync.WaitGroup
	var admitted, full atomic.Int64
	for i := range 60 {
		wg.Go(func() {
			for range 10 {
				_, err := inst[i%3].Generate(context.Background(), tenantReq("t"))
				switch {
				case err == nil:
					admitted.Add(1)
				case errors.Is(err, inflight.ErrFull):
					full.Add(1)
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("3 instances, 60 callers, 600 calls: %d admitted, %d refused, max in flight %d", admitted.Load(), full.Load(), h.maximum.Load())
	if h.maximum.Load() != 5 {
		t.Errorf("max in flight = %d, want 5", h.maximum.Load())
	}
}

// TestInFlightCrashedInstance: instance A holds the tenant's 3 slots
// through a proxy (TTL 300 ms, renewed every 100 ms); calls run for
// several TTLs with the slots kept. Then A crashes (the proxy closes: no
// renewal, no release). Instance B gets a slot back within TTL of the
// crash: asserted on the lease set and the server's clock (no lease ends
// more than TTL after the crash; B refused only before the first end,
// admitted only after it), not on how soon a loaded machine polls; how
// long before the crash A last renewed is logged.
func TestInFlightCrashedInstance(t *testing.T) {
	srv := redistest.Start(t)
	p := srv.Proxy(t)
	const ttl = 300 * time.Millisecond
	a := newCaps(t, newStore(t, srv, Config{Client: redistest.NewClient(p.Addr)}).InFlight(), 3, ttl)
	b := newCaps(t, newStore(t, srv, Config{}).InFlight(), 3, ttl)
	h := &holder{release: make(chan struct{})}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { a.Wrap(h).Generate(context.Background(), tenantReq("t")) })
	}
	defer wg.Wait()
	defer close(h.release)
	for h.now.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	quick := &holder{hold: time.Millisecond}
	time.Sleep(3 * ttl) // renewals keep the slots
	if _, err := b.Wrap(quick).Generate(context.Background(), tenantReq("t")); !errors.Is(err, inflight.ErrFull) {
		t.Fatalf("B's call while A runs = %v, want ErrFull", err)
	}
	p.Close()
	crash := time.Now()
	direct := srv.Client(t)
	ctx := context.Background()
	serverNow := func() int64 { // the server's time in milliseconds, as the scripts read it
		t.Helper()
		now, err := direct.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now.UnixMilli()
	}
	keys, err := direct.Keys(ctx, "*if:{k=*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("lease sets = %v, %v; want one", keys, err)
	}
	leases, err := direct.ZRangeWithScores(ctx, keys[0], 0, -1).Result()
	now := serverNow()
	if err != nil || len(leases) != 3 {
		t.Fatalf("leases after the crash = %v, %v; want A's 3", leases, err)
	}
	first, last := int64(leases[0].Score), int64(leases[2].Score)
	if left := time.Duration(last-now) * time.Millisecond; left > ttl {
		t.Errorf("a lease of the crashed instance has %v left, want at most the TTL, %v", left, ttl)
	}
	for {
		before := serverNow()
		_, err := b.Wrap(quick).Generate(ctx, tenantReq("t"))
		after := serverNow()
		if err == nil {
			if after < first {
				t.Errorf("B admitted at %d ms of the server's clock, before A's first lease ends at %d", after, first)
			}
			break
		}
		if before >= first {
			t.Fatalf("B refused (%v) at %d ms of the server's clock, after A's first lease ended at %d: held past its TTL", err, before, first)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("a crashed instance's slot back after %v (TTL %v, renewed every %v; its leases had %v to %v left)", time.Since(crash).Round(time.Millisecond),
		ttl, ttl/3, time.Duration(first-now)*time.Millisecond, time.Duration(last-now)*time.Millisecond)
}

// TestInFlightLostReplies: replies lost on the way back (the server ran
// the script), on a client that does not resend and on one that does.
// A lost release's reply: the release applied, the slot is back at once.
// A lost acquire's reply without resend: the call is refused (fail
// closed) and the release that follows finds the store down, so the
// lease nobody holds lives out its TTL, no longer. Resent (go-redis's
// MaxRetries), the acquire finds its id held: the call runs on one slot,
// given back when it ends.
//
// Asserted on the lease set itself and the server's clock, not on how
// soon a loaded machine polls: "at once" is no lease left when A's call
// returns and B's first call admitted; "its TTL, no longer" is A's lease
// ending TTL after its acquire, B refused only while the server's time
// is before that end and admitted only after it.
func TestInFlightLostReplies(t *testing.T) {
	const ttl = 300 * time.Millisecond
	for _, c := range []struct {
		name    string
		retries int
		inCall  bool // drop the reply of the release (from inside the call), not the acquire
		refused bool
	}{
		{"release reply lost", -1, true, false},
		{"acquire reply lost", -1, false, true},
		{"acquire reply lost, resent", 3, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redistest.Start(t)
			p := srv.Proxy(t)
			cl := redistest.NewClient(p.Addr)
			cl.Options().MaxRetries = c.retries
			a := newCaps(t, newStore(t, srv, Config{Client: cl}).InFlight(), 1, ttl)
			b := newCaps(t, newStore(t, srv, Config{}).InFlight(), 1, ttl)
			direct := srv.Client(t)
			ctx := context.Background()
			serverNow := func() int64 { // the server's time in milliseconds, as the scripts read it
				t.Helper()
				now, err := direct.Time(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				return now.UnixMilli()
			}
			calls := 0
			model := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
				calls++
				if c.inCall {
					p.DropReply("EVAL") // the release's
				}
				return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
			})
			if !c.inCall {
				p.DropReply("EVAL") // the acquire's
			}
			start := time.Now()
			_, err := a.Wrap(model).Generate(ctx, tenantReq("t"))
			if refused := errors.Is(err, inflight.ErrStore); refused != c.refused || (err != nil && !refused) || calls != map[bool]int{true: 0, false: 1}[c.refused] {
				t.Fatalf("A's call = %v, %d model calls; want refused %v", err, calls, c.refused)
			}
			if p.Dropped() != 1 {
				t.Errorf("replies dropped %d, want 1", p.Dropped())
			}
			var leases []redis.Z
			if keys, err := direct.Keys(ctx, "*if:{k=*").Result(); err != nil || len(keys) > 1 {
				t.Fatalf("lease sets = %v, %v; want at most one", keys, err)
			} else if len(keys) == 1 {
				leases, _ = direct.ZRangeWithScores(ctx, keys[0], 0, -1).Result()
			}
			quick := &holder{hold: time.Millisecond}
			if !c.refused {
				// Released: no lease left, and B's first call is admitted.
				if len(leases) != 0 {
					t.Errorf("leases after A's call = %v, want none (the slot back at once)", leases)
				}
				if _, err := b.Wrap(quick).Generate(ctx, tenantReq("t")); err != nil {
					t.Errorf("B's first call after A's = %v, want admitted", err)
				}
				return
			}
			// A's lease, nobody's now, ends TTL after its acquire: within
			// [TTL - the time since A's call began, TTL] from now.
			now := serverNow()
			if len(leases) != 1 {
				t.Fatalf("leases after A's refused call = %v, want A's", leases)
			}
			end := int64(leases[0].Score)
			if left, most := time.Duration(end-now)*time.Millisecond, ttl-time.Since(start)-time.Millisecond; left > ttl || left < most {
				t.Errorf("A's lease has %v left, want within [%v, %v]", left, most, ttl)
			}
			for i := 0; ; i++ {
				before := serverNow()
				_, err := b.Wrap(quick).Generate(ctx, tenantReq("t"))
				after := serverNow()
				if err == nil {
					if after < end {
						t.Errorf("B admitted at %d ms of the server's clock, before A's lease ends at %d", after, end)
					}
					t.Logf("slot back %v after A's call began (TTL %v), B's call %d", time.Since(start).Round(time.Millisecond), ttl, i+1)
					break
				}
				if before >= end {
					t.Fatalf("B refused (%v) at %d ms of the server's clock, after A's lease ended at %d: held past its TTL", err, before, end)
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
}
