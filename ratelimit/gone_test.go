package ratelimit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// TestGone: a call whose caller has gone (its context canceled or past its
// deadline) is refused with the context's error, NotSent, and next is not
// called, whatever the mode, in process and over a shared store.
func TestGone(t *testing.T) {
	for name, cfg := range map[string]func() Config{
		"reject": func() Config {
			return Config{Limits: Limits{Requests: 10, Tokens: 10_000}, DefaultMaxTokens: 100}
		},
		"wait with a queue": func() Config {
			return Config{Limits: Limits{Requests: 10, MaxInFlight: 1}, Mode: Wait, Queue: Queue{Size: 4}}
		},
		"shared": func() Config {
			return Config{Limits: Limits{Requests: 10, MaxInFlight: 1}, Shared: Shared{Store: newFakeStore()}}
		},
		"shared fail-open": func() Config {
			return Config{Limits: Limits{Requests: 10}, Shared: Shared{Store: newFakeStore(), FailOpen: true, Instances: 2}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			modeltest.RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
				return mustNew(t, cfg()).Wrap(base)
			})
		})
	}
}

// TestGoneTakesNothing: a call whose caller has gone takes no token and no
// request, makes no key, takes no slot, does not queue or wait, and the
// shared store is not asked. Before, it was admitted (a request of the
// hour's one and 500 tokens spent on a call nobody waits for), or queued
// for a slot until it noticed its context.
func TestGoneTakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Requests: 1, Period: time.Hour, Tokens: 1000, MaxInFlight: 1},
			Mode: Wait, Queue: Queue{Size: 4}, Estimator: fixedEstimator(100)})
		obs := &recorder{}
		ctx := portico.ContextWithObserver(t.Context(), obs)
		dead, cancel := context.WithCancel(ctx)
		cancel()
		queued := 0
		testHookQueue = func() { queued++ }
		defer func() { testHookQueue = nil }()

		m := l.Wrap(okModel(100, 100))
		if _, err := m.Generate(dead, req("gone", 400)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Generate(canceled) = %v, want context.Canceled", err)
		}
		if e := l.entryOf(req("gone", 400)); e != nil {
			t.Errorf("a canceled call made its key's entry: %+v", e)
		}

		// A live call holds the key's one slot; a canceled one neither
		// queues behind it nor waits.
		release := make(chan struct{})
		held := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			<-release
			return &portico.Response{Usage: portico.Usage{InputTokens: 100, OutputTokens: 100}}, nil
		})
		go l.Wrap(held).Generate(ctx, req("a", 400))
		synctest.Wait()
		if _, err := m.Generate(dead, req("a", 400)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Generate(canceled, slot busy) = %v, want context.Canceled", err)
		}
		if queued != 0 || l.inflightOf(req("a", 400)) != 1 {
			t.Errorf("canceled call: queued %d times, %d in flight; want 0 and the live call's 1", queued, l.inflightOf(req("a", 400)))
		}
		close(release)
		synctest.Wait()
		// The live call took the hour's one request and 500 tokens, and gave
		// 300 back: 800 left, and the canceled calls took nothing.
		if got := l.levelOf(req("a", 400), time.Now()); got != 800 {
			t.Errorf("token level = %v, want 800", got)
		}
		for _, e := range obs.events {
			if e.Kind == portico.EventRateLimitWait || e.Kind == portico.EventRateLimitReject {
				t.Errorf("event %v for a canceled call", e.Kind)
			}
		}
	})
}

// TestGoneAsksNoStore: over a shared store, a call whose caller has gone
// does not ask the store; the request it would have taken is the next
// call's.
func TestGoneAsksNoStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		l := mustNew(t, Config{Limits: Limits{Requests: 1, Period: time.Hour}, Shared: Shared{Store: f}})
		m := l.Wrap(okModel(1, 1))
		dead, cancel := context.WithTimeout(t.Context(), -time.Second)
		defer cancel()
		if _, err := m.Generate(dead, req("a", 1)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Generate(past deadline) = %v, want context.DeadlineExceeded", err)
		}
		if n := len(f.lims); n != 0 {
			t.Errorf("store asked %d times for a call past its deadline, want 0", n)
		}
		if _, err := m.Generate(t.Context(), req("a", 1)); err != nil {
			t.Errorf("next live call = %v, want the hour's one request admitted", err)
		}
	})
}
