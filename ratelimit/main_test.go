package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// okModel answers at once with the given usage.
func okModel(in, out int) portico.Model {
	resp := &portico.Response{FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: in, OutputTokens: out}}
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		c := *resp
		return &c, nil
	})
}

// errModel fails every call with err.
func errModel(err error) portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, err
	})
}

// slowModel answers after d (virtual time under synctest), honouring ctx.
func slowModel(d time.Duration, out int) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return &portico.Response{Usage: portico.Usage{InputTokens: 1, OutputTokens: out}}, nil
		case <-ctx.Done():
			return nil, portico.FromContext(ctx)
		}
	})
}

// fixedEstimator estimates every request at n input tokens.
func fixedEstimator(n int) portico.Estimator {
	return portico.EstimatorFunc(func(*portico.Request) int { return n })
}

func mustNew(t testing.TB, cfg Config) *Limiter {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	return l
}

// recorder is an Observer that keeps the events it sees.
type recorder struct {
	mu     sync.Mutex
	events []portico.Event
}

func (r *recorder) Observe(_ context.Context, e portico.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds() []portico.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var k []portico.EventKind
	for _, e := range r.events {
		k = append(k, e.Kind)
	}
	return k
}

// level returns the token bucket level of req's key at now.
func (l *Limiter) levelOf(req *portico.Request, t time.Time) float64 {
	now := mono.Of(t)
	e := l.acquire(l.keyOf(req), req, now)
	defer e.mu.Unlock()
	level, _ := e.tok.at(now)
	return level
}

// entryOf returns req's entry in the table, or nil, without adding it.
func (l *Limiter) entryOf(req *portico.Request) *entry {
	k := l.keyOf(req)
	s := l.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

func (l *Limiter) inflightOf(req *portico.Request) int {
	e := l.acquire(l.keyOf(req), req, mono.Now())
	defer e.mu.Unlock()
	return e.inflight
}
