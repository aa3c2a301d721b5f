package redisstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// aclClient makes srv's user "portico" (password "pw", every command,
// only the keys matching keys) and returns a client logged in as it.
func aclClient(t *testing.T, srv *redistest.Server, keys ...string) *redis.Client {
	t.Helper()
	args := []any{"ACL", "SETUSER", "portico", "on", ">pw", "+@all"}
	for _, k := range keys {
		args = append(args, "~"+k)
	}
	if err := srv.Client(t).Do(context.Background(), args...).Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "portico", Password: "pw", ContextTimeoutEnabled: true,
		MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}

// count returns how many records "LEVEL message" starting with prefix
// were logged.
func (h *logs) count(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.out {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

var (
	anyLimits  = &ratelimit.Limits{Requests: 1e9, RequestBurst: 1e9}
	badScript  = redis.NewScript(`return redis.call('NOSUCHCOMMAND')`)
	replyError = redis.NewScript(`return redis.error_reply(ARGV[1])`)
)

// TestRefusalStartsNoOutage: a server that answers an operation with a
// refusal no wait would change (NOPERM from an ACL, WRONGTYPE from a key
// of another type, an ERR from a script) is up: the operation fails with
// ErrRefused, not ErrUnavailable, the Store stays available, the next
// operation that the server accepts succeeds at once (no fail-fast for
// the other keys and tenants), and the refusal is logged once however
// often it repeats. Before this rule each of them failed the whole Store
// for Probe and logged a warning that Redis was down.
func TestRefusalStartsNoOutage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   string
		client func(t *testing.T, srv *redistest.Server) redis.UniversalClient
		refuse func(s *Store) error // refused every time
	}{
		{"NOPERM: an ACL denies the budgets' keys", "NOPERM",
			func(t *testing.T, srv *redistest.Server) redis.UniversalClient {
				return aclClient(t, srv, "portico:rl:*", "portico:op:*")
			},
			func(s *Store) error {
				_, err := s.Budgets().Spend(context.Background(), "d", "c", &limitsWithDest)
				return err
			}},
		{"WRONGTYPE: a string where a bucket's hash belongs", "WRONGTYPE",
			func(t *testing.T, srv *redistest.Server) redis.UniversalClient {
				c := srv.Client(t)
				if err := c.Set(context.Background(), (&Store{prefix: DefaultPrefix}).key("rl", "t1"), "x", 0).Err(); err != nil {
					t.Fatal(err)
				}
				return c
			},
			func(s *Store) error {
				_, _, err := s.Buckets().Take(context.Background(), "t1", anyLimits, 1)
				return err
			}},
		{"ERR: a script's error", "ERR",
			func(t *testing.T, srv *redistest.Server) redis.UniversalClient { return srv.Client(t) },
			func(s *Store) error {
				return s.do(context.Background(), func(ctx context.Context) error { return badScript.Run(ctx, s.c, nil).Err() })
			}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			srv := redistest.Start(t)
			h := &logs{}
			s, err := New(Config{Client: tc.client(t, srv), Timeout: testTimeout, Probe: time.Hour, Logger: slog.New(h)})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				err := tc.refuse(s)
				if !errors.Is(err, ErrRefused) || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.kind+" ") {
					t.Fatalf("refused operation %d = %v, want ErrRefused (not ErrUnavailable) saying %s", i, err, tc.kind)
				}
				if !s.Available() {
					t.Fatalf("Available() after refusal %d = false, want true: the server answered", i)
				}
				if _, _, err := s.Buckets().Take(context.Background(), "t2", anyLimits, 1); err != nil {
					t.Fatalf("Take of another key after refusal %d = %v, want nil: a refusal fails no other operation", i, err)
				}
			}
			if n := h.count("ERROR redisstore: redis refused an operation"); n != 1 || h.has("WARN") {
				t.Errorf("5 refusals logged %d errors, a warning: %v; want 1 error, no warning", n, h.has("WARN"))
			}
		})
	}
}

// TestPassingStatesAreUnavailable: a reply that names a state of the
// server that passes (loading, a replica, a failover under way, a script
// running, out of memory, ...) is the store being unavailable, as a
// timeout is: ErrUnavailable and an outage. Each reply is sent by the
// real server, from a script, and two of them from the real states: a
// replica refusing writes and a server past its maxmemory.
func TestPassingStatesAreUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	take := func(s *Store) error {
		_, _, err := s.Buckets().Take(context.Background(), "k", anyLimits, 1)
		return err
	}
	for _, reply := range []string{"LOADING Redis is loading the dataset in memory", "READONLY You can't write against a read only replica.",
		"MASTERDOWN Link with MASTER is down", "CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing of slot",
		"BUSY Redis is busy running a script.", "OOM command not allowed when used memory > 'maxmemory'.",
		"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.",
		"NOREPLICAS Not enough good replicas to write.", "ERR max number of clients reached", "MOVED 3999 127.0.0.1:6381",
		"ASK 3999 127.0.0.1:6381"} {
		s := newStore(t, srv, Config{Probe: time.Hour})
		err := s.do(context.Background(), func(ctx context.Context) error { return replyError.Run(ctx, s.c, nil, reply).Err() })
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrRefused) || s.Available() {
			t.Errorf("reply %q: do = %v, Available() = %v; want ErrUnavailable, false", reply, err, s.Available())
		}
	}

	for _, tc := range []struct {
		name  string
		state func(t *testing.T, srv *redistest.Server)
	}{
		{"a replica", func(t *testing.T, srv *redistest.Server) {
			primary := redistest.Start(t)
			host, port, _ := strings.Cut(primary.Addr, ":")
			if err := srv.Client(t).ReplicaOf(context.Background(), host, port).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"out of memory", func(t *testing.T, srv *redistest.Server) {
			if err := srv.Client(t).ConfigSet(context.Background(), "maxmemory", "1").Err(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			s := newStore(t, srv, Config{Probe: time.Hour})
			tc.state(t, srv)
			if err := take(s); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrRefused) || s.Available() {
				t.Errorf("Take from %s = %v, Available() = %v; want ErrUnavailable, false", tc.name, err, s.Available())
			}
		})
	}
}

// TestProbeRefusedEndsOutage: a probe the server refuses proves it
// answers, so it ends the outage (the refusal is returned as such).
func TestProbeRefusedEndsOutage(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{Probe: time.Millisecond})
	if err := s.do(context.Background(), func(context.Context) error { return io.EOF }); !errors.Is(err, ErrUnavailable) || s.Available() {
		t.Fatalf("do of a dropped connection = %v, Available() = %v; want ErrUnavailable, false", err, s.Available())
	}
	time.Sleep(2 * time.Millisecond)
	err := s.do(context.Background(), func(ctx context.Context) error { return badScript.Run(ctx, s.c, nil).Err() })
	if !errors.Is(err, ErrRefused) || !s.Available() {
		t.Errorf("probe refused = %v, Available() = %v; want ErrRefused, true", err, s.Available())
	}
}

// TestRefusalFailureModes: a refused operation is a call the store did
// not decide, so each layer applies its failure mode to that call (the
// decision the package documentation states, Failure modes): a fail-open
// limiter admits on its local share, a fail-closed one refuses with
// ErrStoreUnavailable, an effect does not run; each error wraps
// ErrRefused, and the Store stays available.
func TestRefusalFailureModes(t *testing.T) {
	srv := redistest.Start(t)
	h := &logs{}
	s, err := New(Config{Client: aclClient(t, srv, "nothing:*"), Timeout: testTimeout, Probe: time.Hour, Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	obs := &events{}
	ctx := portico.ContextWithObserver(context.Background(), obs)
	req := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "c"}}
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok"}, nil
	})
	limits := ratelimit.Limits{Requests: 100}
	open, err := ratelimit.New(ratelimit.Config{Limits: limits, Key: ratelimit.ByClient,
		Shared: ratelimit.Shared{Store: s.Buckets(), FailOpen: true, Instances: 10}})
	if err != nil {
		t.Fatal(err)
	}
	closed, err := ratelimit.New(ratelimit.Config{Limits: limits, Key: ratelimit.ByClient, Shared: ratelimit.Shared{Store: s.Buckets()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Wrap(ok).Generate(ctx, req); err != nil {
		t.Errorf("fail-open call over a refusing store = %v, want admitted on the local share", err)
	}
	if _, err := closed.Wrap(ok).Generate(ctx, req); portico.ClassOf(err) != portico.Rejected ||
		!errors.Is(err, ratelimit.ErrStoreUnavailable) || !errors.Is(err, ErrRefused) {
		t.Errorf("fail-closed call over a refusing store = %v, want Rejected wrapping ErrStoreUnavailable and ErrRefused", err)
	}
	runner, err := effect.New(effect.Config{Store: s.Effects()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	ran := false
	if _, err := runner.Do(ctx, "key", func(context.Context) ([]byte, error) { ran = true; return nil, nil }); ran ||
		!errors.Is(err, effect.ErrStore) || !errors.Is(err, ErrRefused) {
		t.Errorf("effect over a refusing store = %v, ran %v; want ErrStore wrapping ErrRefused, not run", err, ran)
	}
	for _, c := range []struct {
		reason string
		n      int
	}{{"ratelimit:fail_open", 1}, {"ratelimit:fail_closed", 1}, {"effect:fail_closed", 1}} {
		if got := obs.count(portico.EventSharedStore, c.reason); got != c.n {
			t.Errorf("%q events = %d, want %d", c.reason, got, c.n)
		}
	}
	if !s.Available() || h.count("ERROR redisstore: redis refused an operation") != 1 {
		t.Errorf("Available() = %v, errors logged %d; want true, 1 (NOPERM, once)", s.Available(), h.count("ERROR redisstore: redis refused an operation"))
	}
}
