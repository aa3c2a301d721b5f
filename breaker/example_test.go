package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
)

// A route that keeps failing trips the breaker, which then fails calls at once
// with ErrOpen and says when it will probe again.
func Example() {
	b := breaker.MustNew(breaker.Config{
		Name: "gpt-primary",
		Trip: breaker.ConsecutiveFailures(3),
		OnStateChange: func(tr breaker.Transition) {
			fmt.Printf("%s: %v -> %v (%s)\n", tr.Name, tr.From, tr.To, tr.Reason)
		},
	})
	down := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: portico.Transient, Status: 503}
	})
	m := b.Wrap(down)
	for range 3 {
		m.Generate(context.Background(), &portico.Request{})
	}
	_, err := m.Generate(context.Background(), &portico.Request{})
	fmt.Println(errors.Is(err, breaker.ErrOpen), portico.ClassOf(err), b.State(), b.Available())
	// Output:
	// gpt-primary: closed -> open (consecutive failures)
	// true rejected open false
}

// A client's own errors never open the breaker.
func Example_clientErrors() {
	b := breaker.MustNew(breaker.Config{Trip: breaker.ConsecutiveFailures(1)})
	badRequest := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: portico.Permanent, Status: 400}
	})
	m := b.Wrap(badRequest)
	for range 100 {
		m.Generate(context.Background(), &portico.Request{})
	}
	fmt.Println(b.State())
	// Output: closed
}

// Trip rules combine: here a time-based window of one minute trips on a 25%
// failure rate once 4 calls are in it, or on 10 failures in a row.
func ExampleAnyOf() {
	b := breaker.MustNew(breaker.Config{
		Window: breaker.Window{Duration: time.Minute},
		Trip:   breaker.AnyOf(breaker.FailureRate(0.25, 4), breaker.ConsecutiveFailures(10)),
		OnStateChange: func(tr breaker.Transition) {
			fmt.Printf("%v -> %v (%s)\n", tr.From, tr.To, tr.Reason)
		},
	})
	outcomes := []error{nil, nil, nil, &portico.Error{Class: portico.Transient, Status: 503}}
	m := b.Wrap(portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		err := outcomes[0]
		outcomes = outcomes[1:]
		if err != nil {
			return nil, err
		}
		return &portico.Response{Text: "ok"}, nil
	}))
	for range 4 {
		m.Generate(context.Background(), &portico.Request{})
	}
	// Output: closed -> open (failure rate)
}
