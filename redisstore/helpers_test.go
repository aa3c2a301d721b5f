package redisstore

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
)

// newStore returns a Store over srv with cfg's other fields, on a client of
// its own (cfg's, when set): an instance of a service. A zero Timeout is
// testTimeout.
func newStore(t testing.TB, srv *redistest.Server, cfg Config) *Store {
	t.Helper()
	if cfg.Client == nil {
		cfg.Client = srv.Client(t)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = testTimeout
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // before the client's own cleanup closes it
	return s
}

// testTimeout bounds each operation in the tests that are not about
// timeouts: 100 clients dialing at once under -race on a loaded two-core
// machine can take longer than the 50 ms default, which would turn a
// healthy server into an outage and the test's exact count into noise.
const testTimeout = 5 * time.Second

// events records the events of the calls whose context it is in.
type events struct {
	mu sync.Mutex
	e  []portico.Event
}

func (o *events) Observe(_ context.Context, e portico.Event) {
	o.mu.Lock()
	o.e = append(o.e, e)
	o.mu.Unlock()
}

func (o *events) reset() {
	o.mu.Lock()
	o.e = nil
	o.mu.Unlock()
}

// count returns how many events of kind k with reason r were seen.
func (o *events) count(k portico.EventKind, r string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, e := range o.e {
		if e.Kind == k && e.Reason == r {
			n++
		}
	}
	return n
}

// logs is a slog handler that keeps each record's level and message.
type logs struct {
	mu  sync.Mutex
	out []string
}

func (h *logs) Enabled(context.Context, slog.Level) bool { return true }
func (h *logs) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.out = append(h.out, r.Level.String()+" "+r.Message)
	h.mu.Unlock()
	return nil
}
func (h *logs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logs) WithGroup(string) slog.Handler      { return h }

func (h *logs) reset() {
	h.mu.Lock()
	h.out = nil
	h.mu.Unlock()
}

// has reports whether a record "LEVEL message" starting with prefix was logged.
func (h *logs) has(prefix string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.out {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

var failing = portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
	return nil, &portico.Error{Class: portico.Transient, Status: 503, Reason: "unavailable"}
})

func retryLimits(capacity, destCapacity int64) retry.BudgetLimits {
	return retry.BudgetLimits{Capacity: capacity, DestinationCapacity: destCapacity}
}

// scripts records when a client ran which script: a go-redis hook.
type scripts struct {
	mu  sync.Mutex
	ran []scriptRun
}

// scriptRun is one EVALSHA or EVAL of a script, as its client saw it.
type scriptRun struct {
	sha        string
	start, end time.Time
	err        error
}

func (h *scripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *scripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		if a := cmd.Args(); len(a) > 1 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			sha, _ := a[1].(string)
			if cmd.Name() == "eval" {
				sha = redis.NewScript(sha).Hash()
			}
			h.mu.Lock()
			h.ran = append(h.ran, scriptRun{sha: sha, start: start, end: time.Now(), err: err})
			h.mu.Unlock()
		}
		return err
	}
}

// runs returns the runs of s recorded so far, in the order they began.
func (h *scripts) runs(s *redis.Script) []scriptRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	var r []scriptRun
	for _, x := range h.ran {
		if x.sha == s.Hash() {
			r = append(r, x)
		}
	}
	slices.SortFunc(r, func(a, b scriptRun) int { return a.start.Compare(b.start) })
	return r
}
