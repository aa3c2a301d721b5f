package effect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
)

func Example() {
	r, _ := effect.New(effect.Config{})
	ctx := context.Background()
	type receipt struct{ ID string }
	charges := 0
	charge := func(context.Context) (receipt, error) {
		charges++
		return receipt{ID: "ch_1"}, nil
	}

	// The model asked for the same charge twice, arguments in another order
	// (a retried generation, a fallback model, a replayed agent step).
	for _, args := range []string{`{"amount":1999,"currency":"EUR"}`, `{"currency":"EUR","amount":1999}`} {
		key, _ := effect.NewKey("order-42", "charge", json.RawMessage(args))
		rc, err := effect.Once(ctx, r, key, charge)
		fmt.Println(rc.ID, err)
	}
	fmt.Println("charges:", charges)
	// Output:
	// ch_1 <nil>
	// ch_1 <nil>
	// charges: 1
}

func ExampleRunner_Resolve() {
	r, _ := effect.New(effect.Config{})
	ctx := context.Background()
	key, _ := effect.NewKey("order-43", "send_email", json.RawMessage(`{"to":"ops"}`))

	_, err := r.Do(ctx, key, func(context.Context) ([]byte, error) {
		return nil, &portico.Error{Class: portico.Ambiguous, Reason: "timeout after send"}
	})
	fmt.Println(errors.Is(err, effect.ErrUnknown), portico.ClassOf(err))

	// The application checks the mail server: the email went out.
	_ = r.Resolve(ctx, key, effect.Outcome{Happened: true, Result: []byte(`"queued"`)})
	res, err := r.Do(ctx, key, func(context.Context) ([]byte, error) { panic("not run again") })
	fmt.Println(string(res), err)
	// Output:
	// true ambiguous
	// "queued" <nil>
}

func ExampleStepKey() {
	r, _ := effect.New(effect.Config{})
	ctx := context.Background()
	tickets := 0
	open := func(context.Context) (string, error) {
		tickets++
		return "TCK-1", nil
	}
	// Step 3 of operation support-7 opens a ticket; the step is replayed
	// after a fallback, and the other model words the ticket otherwise.
	key, _ := effect.StepKey("support-7", "step-3", "open_ticket")
	for _, args := range []string{`{"title":"Printer down"}`, `{"title":"The printer is down","priority":"P1"}`} {
		id, err := effect.OnceArgs(ctx, r, key, json.RawMessage(args), open)
		fmt.Println(id, errors.Is(err, effect.ErrArgumentsDiffer))
	}
	fmt.Println("tickets:", tickets)
	// Output:
	// TCK-1 false
	// TCK-1 true
	// tickets: 1
}
