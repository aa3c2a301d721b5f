package route

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
)

// nilNil is a broken Model that returns neither a Response nor an error.
var nilNil = portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return nil, nil })

// panicky is a Model that panics.
var panicky = portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { panic("boom") })

// models returns the package's four Models, each over routes answered by m
// (a cascade's first step rejects every answer).
func models(t *testing.T, m portico.Model) map[string]portico.Model {
	t.Helper()
	rt := func(name string) portico.Route { return portico.Route{Name: name, Model: m} }
	th, err1 := NewThreshold(ThresholdConfig{Strong: rt("strong"), Weak: rt("weak")})
	ro, err2 := NewRouter(RouterConfig{Routes: []portico.Route{rt("a"), rt("b")}})
	ca, err3 := NewCascade(CascadeConfig{Steps: []Step{{Route: rt("s0")}}})
	ba, err4 := NewBalancer(BalancerConfig{Replicas: []portico.Route{rt("r0"), rt("r1")}})
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	return map[string]portico.Model{"Threshold": th, "Router": ro, "Cascade": ca, "Balancer": ba}
}

// A Model that returns (nil, nil) breaks the contract; every routing Model
// turns it into a classified InvalidResponse error matching
// portico.ErrNilResponse instead of panicking.
func TestNilResponse(t *testing.T) {
	for name, m := range models(t, nilNil) {
		resp, err := m.Generate(context.Background(), userReq("x"))
		if resp != nil || portico.ClassOf(err) != portico.InvalidResponse || !errors.Is(err, portico.ErrNilResponse) {
			t.Errorf("%s over a (nil, nil) Model = %v, %v, want nil and an InvalidResponse error matching ErrNilResponse", name, resp, err)
		}
	}
	// A cascade moves past such a step to the next one.
	c, err := NewCascade(CascadeConfig{Steps: []Step{{Route: portico.Route{Name: "broken", Model: nilNil}}, {Route: portico.Route{Name: "ok", Model: answer("ok", portico.Usage{}, nil)}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Generate(context.Background(), userReq("x"))
	if err != nil || resp.Route != "ok" || len(resp.Hops) != 1 || resp.Hops[0].Reason != "invalid_response" || !errors.Is(resp.Hops[0].Err, portico.ErrNilResponse) {
		t.Errorf("cascade after a (nil, nil) step = %+v, %v, want route ok with one invalid_response hop", resp, err)
	}
}

// A nil *Request is a caller's bug: a Permanent error from every Model and
// picker, not a nil dereference.
func TestNilRequest(t *testing.T) {
	for name, m := range models(t, answer("ok", portico.Usage{}, nil)) {
		if _, err := m.Generate(context.Background(), nil); !errors.Is(err, portico.ErrNilRequest) {
			t.Errorf("%s.Generate(nil request) = %v, want a Permanent error", name, err)
		}
	}
	r, _ := NewRouter(RouterConfig{Routes: []portico.Route{{Name: "a", Model: answer("ok", portico.Usage{}, nil)}}})
	if pr, err := r.Pick(PickInfo{}); !errors.Is(err, portico.ErrNilRequest) || pr.Index != -1 {
		t.Errorf("Router.Pick(nil request) = %d, %v, want -1 and a Permanent error", pr.Index, err)
	}
	for _, s := range []Strategy{RoundRobin{}, LeastInFlight{}, Affinity{}, PrefixAware{}} {
		rs, _ := replicas(2)
		b := mustBalancer(t, rs, s)
		if pr, err := b.Pick(PickInfo{}); !errors.Is(err, portico.ErrNilRequest) || pr.Index != -1 {
			t.Errorf("%T Balancer.Pick(nil request) = %d, %v, want -1 and a Permanent error", s, pr.Index, err)
		}
	}
}

// A panic in the chosen Model goes on up, and the call does not stay counted
// in flight (it would skew least-in-flight and rebalancing forever).
func TestPanicReleasesInFlight(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("%s: recovered %v, want the Model's panic", name, r)
			}
		}()
		f()
	}
	r, _ := NewRouter(RouterConfig{Routes: []portico.Route{{Name: "a", Model: panicky}}})
	mustPanic("Router", func() { r.Generate(context.Background(), userReq("x")) })
	if st := r.Stats(0); st.InFlight != 0 || st.Observed != 1 || st.ErrorRate != 1 {
		t.Errorf("Router after a panic: in flight %d, observed %d, error rate %v; want 0, 1, 1", st.InFlight, st.Observed, st.ErrorRate)
	}
	for _, s := range []Strategy{RoundRobin{}, LeastInFlight{}, Affinity{}, PrefixAware{}} {
		b := mustBalancer(t, []portico.Route{{Name: "r0", Model: panicky}}, s)
		mustPanic("Balancer", func() { b.Generate(context.Background(), userReq("x")) })
		if got := b.Replicas()[0].InFlight(); got != 0 {
			t.Errorf("%T Balancer after a panic: in flight %d, want 0", s, got)
		}
		if got := b.Replicas()[0].Picks(); got != 1 {
			t.Errorf("%T Balancer after a panic: picks %d, want 1", s, got)
		}
	}
}

// A custom Picker returning an index out of range is a programmer error: a
// panic naming the package, not a silent misroute.
func TestPickerOutOfRange(t *testing.T) {
	rs, _ := replicas(2)
	b := mustBalancer(t, rs, badStrategy{})
	defer func() {
		if r, _ := recover().(string); len(r) < 6 || r[:6] != "route:" {
			t.Errorf("Pick with index 2 of 2 panicked with %q, want a message starting route:", r)
		}
	}()
	b.Pick(PickInfo{Request: userReq("x")})
}

type badStrategy struct{}

func (badStrategy) NewPicker([]*Replica) Picker { return badPicker{} }

type badPicker struct{}

func (badPicker) Pick(PickInfo) (PickResult, error) { return PickResult{Index: 2}, nil }

// Pickers over no replicas (a Strategy used directly) report ErrNoRoute.
func TestPickersWithoutReplicas(t *testing.T) {
	for _, s := range []Strategy{RoundRobin{}, LeastInFlight{}, LeastInFlight{Seed: 1}, Affinity{}, PrefixAware{}} {
		if _, err := s.NewPicker(nil).Pick(PickInfo{Request: userReq("x")}); !errors.Is(err, ErrNoRoute) {
			t.Errorf("%T over no replicas: Pick error %v, want ErrNoRoute", s, err)
		}
	}
}

// A caller that gives up while a step's answer is being scored gets its
// cancellation at once: the next step is not called (nor paid for).
func TestCascadeStopsWhenCanceledBetweenSteps(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var strongCalls atomic.Int64
	c, err := NewCascade(CascadeConfig{Steps: []Step{
		{Route: portico.Route{Name: "weak", Model: answer("w", portico.Usage{}, nil)},
			Accept: func(*portico.Request, *portico.Response) float64 { cancel(); return 0 }, Threshold: 1},
		{Route: portico.Route{Name: "strong", Model: answer("s", portico.Usage{}, &strongCalls)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Generate(ctx, userReq("x"))
	if resp != nil || portico.ClassOf(err) != portico.Canceled || !errors.Is(err, context.Canceled) || strongCalls.Load() != 0 {
		t.Errorf("cascade canceled during scoring = %v, %v, strong calls %d; want a Canceled error and no strong call", resp, err, strongCalls.Load())
	}
}
