package redisstore

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// presetStack is the preset with every store shared on s: a client
// limiter and a route limiter (requests and tokens), the route's retry
// budgets; model answers each call.
func presetStack(t testing.TB, s *Store, client, route ratelimit.Limits, model portico.Model) *stack.Stack {
	t.Helper()
	st, err := stack.New(stack.Config{
		Client: &ratelimit.Config{Limits: client, Shared: ratelimit.Shared{Store: s.Buckets()}},
		Routes: []stack.Route{{
			Route:   portico.Route{Name: "r", Model: model},
			Limiter: &ratelimit.Config{Limits: route, Shared: ratelimit.Shared{Store: s.Buckets()}},
			Retry:   retry.Config{Budget: retry.Budget{Shared: retry.Shared{Store: s.Budgets()}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPresetOneRoundTrip: a request through the preset, every store on
// one Redis, makes one round trip before it is sent (the client's take,
// the route's and the retry deposit in one script), none after the
// answer on the caller's path; its two settles follow, and apply. Before
// the plan: three before the send, two after.
func TestPresetOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	for _, sc := range []*redis.Script{admitScript.Script, settleScript} { // no NOSCRIPT round trip below
		if err := sc.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ran := &scripts{}
	c.AddHook(ran)
	s := newStore(t, srv, Config{Client: c})
	direct := newStore(t, srv, Config{})
	var before int
	model := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		ran.mu.Lock()
		before = len(ran.ran)
		ran.mu.Unlock()
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 10, OutputTokens: 90}}, nil
	})
	lim := ratelimit.Limits{Requests: 600, Tokens: 10_000, Period: 1000 * time.Hour} // a refill of 0.003 tokens a second
	st := presetStack(t, s, lim, lim, model)
	req := &portico.Request{Model: "m", MaxOutputTokens: 1000, Identity: portico.Identity{ClientKey: "tenant"},
		Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}
	if _, err := st.Generate(ctx, req); err != nil {
		t.Fatal(err)
	}
	ran.mu.Lock()
	after := len(ran.ran)
	ran.mu.Unlock()
	if before != 1 || ran.runs(admitScript.Script) == nil {
		t.Fatalf("%d scripts before the send, want 1 (admitScript)", before)
	}
	s.flush()
	settles := len(ran.runs(settleScript))
	if after > 1+settles || settles == 0 || len(ran.ran) != 1+settles {
		t.Errorf("scripts: %d when Generate returned, %d in all, %d settles; want 1 and the settles after", after, len(ran.ran), settles)
	}
	// What was reserved less what was used (100) is back in both buckets.
	for _, key := range []string{"6:client|=tenant", "7:route r|=m"} {
		if got := tokenLevel(t, direct, key); got != 9900 {
			t.Errorf("%s token level = %v, want 9900 (10,000 less the 100 used)", key, got)
		}
	}
}

// TestAdmissionCarriesSettles: the settles of a request wait in the
// queue for the next admission, which applies them in its own script
// before its takes: two requests cost two round trips, the first's
// settles none of their own, and both refunds are in the buckets. The
// second's settles, left queued, are sent by Close.
func TestAdmissionCarriesSettles(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	for _, sc := range []*redis.Script{admitScript.Script, settleScript} { // no NOSCRIPT round trip below
		if err := sc.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ran := &scripts{}
	c.AddHook(ran)
	s := newStore(t, srv, Config{Client: c})
	s.linger = time.Hour // no settle is sent on its own before Close
	direct := newStore(t, srv, Config{})
	reserved := 0.0 // the tokens a request reserves, seen by the first call
	model := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		if reserved == 0 {
			reserved = 10_000 - tokenLevel(t, direct, "6:client|=tenant")
		}
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 10, OutputTokens: 90}}, nil
	})
	lim := ratelimit.Limits{Requests: 600, Tokens: 10_000, Period: 1000 * time.Hour} // a refill of 0.003 tokens a second
	st := presetStack(t, s, lim, lim, model)
	req := &portico.Request{Model: "m", MaxOutputTokens: 1000, Identity: portico.Identity{ClientKey: "tenant"},
		Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}
	for range 2 {
		if _, err := st.Generate(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if a, n := len(ran.runs(admitScript.Script)), len(ran.runs(settleScript)); a != 2 || n != 0 {
		t.Fatalf("two requests ran %d admit and %d settle scripts, want 2 and 0", a, n)
	}
	// The first request's 100 tokens used, the second's reservation.
	for _, key := range []string{"6:client|=tenant", "7:route r|=m"} {
		if got := tokenLevel(t, direct, key); got != 10_000-100-reserved {
			t.Errorf("%s token level = %v, want %v (the first refund carried, %v reserved)", key, got, 10_000-100-reserved, reserved)
		}
	}
	s.Close()
	if n := len(ran.runs(settleScript)); n != 1 {
		t.Errorf("Close sent %d settle scripts, want 1 (the second request's two settles)", n)
	}
	for _, key := range []string{"6:client|=tenant", "7:route r|=m"} {
		if got := tokenLevel(t, direct, key); got != 9800 {
			t.Errorf("%s token level after Close = %v, want 9800 (200 used)", key, got)
		}
	}
}

// TestPresetUnclaimedRefunded: the plan charges the first route's bucket,
// but the group skips that route (the request does not fit its context
// window) and the second answers: the first route's tokens come back
// after the call, and so does its request; the second route asks
// its own take.
func TestPresetUnclaimedRefunded(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{})
	direct := newStore(t, srv, Config{})
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 10, OutputTokens: 90}}, nil
	})
	lim := ratelimit.Limits{Requests: 600, Tokens: 10_000, Period: 1000 * time.Hour}
	route := func(name string, window int) stack.Route {
		return stack.Route{Route: portico.Route{Name: name, Model: ok, Capabilities: portico.Capabilities{ContextWindow: window}},
			Limiter: &ratelimit.Config{Limits: lim, Shared: ratelimit.Shared{Store: s.Buckets()}, Sharing: ratelimit.Strict},
			Retry:   retry.Config{Budget: retry.Budget{Shared: retry.Shared{Store: s.Budgets()}}}}
	}
	st, err := stack.New(stack.Config{
		Client: &ratelimit.Config{Limits: lim, Shared: ratelimit.Shared{Store: s.Buckets()}, Sharing: ratelimit.Strict},
		Routes: []stack.Route{route("a", 100), route("b", 0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := &portico.Request{Model: "m", MaxOutputTokens: 1000, Identity: portico.Identity{ClientKey: "tenant"},
		Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}
	resp, err := st.Generate(context.Background(), req)
	if err != nil || resp.Route != "b" {
		t.Fatalf("Generate = %v, %v; want route b's answer", resp, err)
	}
	s.flush()
	for key, want := range map[string]float64{"6:client|=tenant": 9900, "7:route a|=m": 10_000, "7:route b|=m": 9900} {
		if got := tokenLevel(t, direct, key); got != want {
			t.Errorf("%s token level = %v, want %v", key, got, want)
		}
	}
	if got := math.Round(hget(t, direct, "7:route a|=m", "rl") / 1e3); got != 600e3 { // to a thousandth of a request
		t.Errorf("route a's request level = %v µ, want 600e6 (the planned request given back too)", got)
	}
}

// cancelOnAdmit is a hook that calls cancel, when set, as an admission
// script is about to be sent: the caller's context ends during its
// admission's round trip.
type cancelOnAdmit struct {
	scripts
	cancel atomic.Pointer[context.CancelFunc]
}

func (h *cancelOnAdmit) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return h.scripts.ProcessHook(func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && a[1] == admitScript.Hash() {
			if c := h.cancel.Load(); c != nil {
				(*c)()
			}
		}
		return next(ctx, cmd)
	})
}

// TestAdmissionCarriesSettlesPastItsCaller: the settles an admission
// carries are other calls'; a caller whose context ends during that
// admission's round trip does not lose them. The first request's refund
// is carried by the second, canceled as its script is sent; the second's
// takes are refunded in full (nothing was sent), so after Close each
// bucket holds 10,000 less the first request's 100 tokens.
func TestAdmissionCarriesSettlesPastItsCaller(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	hook := &cancelOnAdmit{}
	c.AddHook(hook)
	s := newStore(t, srv, Config{Client: c})
	s.linger = time.Hour // no settle is sent on its own before Close
	direct := newStore(t, srv, Config{})
	model := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 10, OutputTokens: 90}}, nil
	})
	lim := ratelimit.Limits{Requests: 600, Tokens: 10_000, Period: 1000 * time.Hour} // a refill of 0.003 tokens a second
	st := presetStack(t, s, lim, lim, model)
	req := &portico.Request{Model: "m", MaxOutputTokens: 1000, Identity: portico.Identity{ClientKey: "tenant"},
		Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}
	if _, err := st.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook.cancel.Store(&cancel)
	if _, err := st.Generate(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("second request: err = %v, want context.Canceled", err)
	}
	hook.cancel.Store(nil)
	s.Close()
	for _, key := range []string{"6:client|=tenant", "7:route r|=m"} {
		if got := tokenLevel(t, direct, key); math.Abs(got-9900) > 0.05 {
			t.Errorf("%s token level after Close = %v, want 9900 (the first request's 100 tokens used, the carried refund applied)", key, got)
		}
	}
}
