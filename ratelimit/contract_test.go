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
