package ratelimit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestNilRequest: a nil *Request is refused with the root's shared
// portico.ErrNilRequest (Permanent), without calling the model or touching a
// key.
func TestNilRequest(t *testing.T) {
	l := mustNew(t, Config{Limits: Limits{Tokens: 1000, MaxInFlight: 1}, Estimator: fixedEstimator(10)})
	called := false
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		called = true
		return &portico.Response{}, nil
	}))
	resp, err := m.Generate(context.Background(), nil)
	if resp != nil || err != portico.ErrNilRequest || !errors.Is(err, portico.ErrNilRequest) {
		t.Fatalf("Generate(nil) = %v, %v; want nil, portico.ErrNilRequest", resp, err)
	}
	if portico.ClassOf(err) != portico.Permanent || called || l.Keys() != 0 {
		t.Errorf("Generate(nil): class %v, model called %v, keys %d; want permanent, false, 0", portico.ClassOf(err), called, l.Keys())
	}
}

// TestNilResponse: a model returning (nil, nil) breaks the Model contract;
// the limiter returns portico.ErrNilResponse (InvalidResponse) and, as the
// refund rule says for that class (output may have been generated), gives
// back no tokens; the slot is freed.
func TestNilResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 1000, MaxInFlight: 1}, Estimator: fixedEstimator(100)})
		m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return nil, nil }))
		r := req("a", 300)
		resp, err := m.Generate(t.Context(), r)
		if resp != nil || err != portico.ErrNilResponse {
			t.Fatalf("Generate with a model returning (nil, nil) = %v, %v; want nil, portico.ErrNilResponse", resp, err)
		}
		if c := portico.ClassOf(err); c != portico.InvalidResponse {
			t.Errorf("ClassOf(err) = %v, want invalid_response", c)
		}
		if got := Refund(err, 100, 300); got != 0 {
			t.Errorf("Refund(ErrNilResponse, 100, 300) = %d, want 0", got)
		}
		// Virtual time stands still: 1000 - 400 reserved, nothing refunded.
		if got := l.levelOf(r, time.Now()); got != 600 {
			t.Errorf("level after a (nil, nil) answer to a call reserving 400 of 1000 = %v, want 600 (no refund)", got)
		}
		if n := l.inflightOf(r); n != 0 {
			t.Errorf("in flight after the call = %d, want 0", n)
		}
	})
}

// TestCapacityErrorText: the message of an over-capacity refusal states the
// numbers once (it used to repeat the CapacityError's text as both Reason and
// cause), at pricing and when SetLimit lowers the capacity under a waiting
// call, whose numbers are its own N_in and N_max.
func TestCapacityErrorText(t *testing.T) {
	const text = "ratelimit: call needs 506 tokens (6 input + 500 max output), more than the token bucket's capacity of 500"
	l := mustNew(t, Config{Limits: Limits{Tokens: 500}, Estimator: fixedEstimator(6)})
	m := l.Wrap(okModel(1, 1))
	for _, tt := range []struct{ model, want string }{
		{"", "portico: incompatible by client_limit: " + text},
		{"m", "portico: incompatible by client_limit model m: " + text},
	} {
		r := req("a", 500)
		r.Model = tt.model
		_, err := m.Generate(context.Background(), r)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Generate(6 + 500 tokens, capacity 500, model %q) = %v, want %q", tt.model, err, tt.want)
		}
	}

	synctest.Test(t, func(t *testing.T) {
		// 10 tokens/s, b = 1000; the level falls to 0, and a call of 6 + 500
		// waits 50.6s, during which the capacity falls to 500.
		l := mustNew(t, Config{Limits: Limits{Tokens: 600, TokenBurst: 1000}, Mode: Wait, MaxWait: time.Minute, Estimator: fixedEstimator(6)})
		m := l.Wrap(errModel(&portico.Error{Class: portico.Ambiguous})) // refunds nothing
		m.Generate(t.Context(), req("a", 994))
		errc := make(chan error)
		go func() { _, err := m.Generate(t.Context(), req("a", 500)); errc <- err }()
		time.Sleep(time.Second)
		if err := l.SetLimit(Limits{Tokens: 600, TokenBurst: 500}); err != nil {
			t.Fatal(err)
		}
		err := <-errc
		var ce *CapacityError
		if want := "portico: incompatible by client_limit model m: " + text; err == nil || err.Error() != want {
			t.Errorf("waiting call after SetLimit lowered the capacity = %v, want %q", err, want)
		}
		if !errors.As(err, &ce) || *ce != (CapacityError{Input: 6, MaxOutput: 500, Capacity: 500}) || !errors.Is(err, ErrOverCapacity) {
			t.Errorf("waiting call after SetLimit: CapacityError %+v, errors.Is(ErrOverCapacity) %v; want {6 500 500}, true", ce, errors.Is(err, ErrOverCapacity))
		}
	})
}
