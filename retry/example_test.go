package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/retry"
)

// A model that is overloaded twice, then answers. The Retrier retries the
// transient failures; Exponential waits make the delays printable (use the
// default full jitter in production).
func Example() {
	calls := 0
	provider := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		calls++
		a := portico.AttemptFromContext(ctx)
		fmt.Printf("attempt %d (id set: %v)\n", a.Index, a.ID != "")
		if calls <= 2 {
			return nil, &portico.Error{Class: portico.Transient, Status: 503, Reason: "overloaded"}
		}
		return &portico.Response{Text: "hello", FinishReason: portico.FinishStop}, nil
	})
	r := retry.MustNew(retry.Config{
		Backoff: retry.Backoff{Schedule: retry.Exponential, BaseDelay: time.Millisecond},
		OnRetry: func(i retry.Info) {
			fmt.Printf("retry %d after %v: %v\n", i.Attempt, i.Class, i.Delay)
		},
	})
	m := portico.Chain(provider, r.Wrap)
	resp, err := m.Generate(context.Background(), &portico.Request{
		Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")},
	})
	fmt.Println(resp.Text, err)
	// Output:
	// attempt 0 (id set: false)
	// retry 1 after transient: 1ms
	// attempt 1 (id set: true)
	// retry 2 after transient: 2ms
	// attempt 2 (id set: true)
	// hello <nil>
}

// A fixed budget of 20 retries (no refill) over 100 always-failing requests:
// 120 attempts instead of 300 (seed 001), and the rest of the errors say the
// budget ran out.
func Example_budget() {
	attempts := 0
	down := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		attempts++
		return nil, &portico.Error{Class: portico.Transient, Status: 503}
	})
	r := retry.MustNew(retry.Config{
		Backoff: retry.Backoff{Schedule: retry.Immediate},
		Budget:  retry.Budget{NoRefill: true, Burst: 20},
	})
	m := r.Wrap(down)
	exhausted := 0
	for range 100 {
		_, err := m.Generate(context.Background(), &portico.Request{Model: "gpt"})
		if errors.Is(err, retry.ErrBudgetExhausted) {
			exhausted++
		}
	}
	fmt.Println("attempts:", attempts)
	fmt.Println("budget exhausted:", exhausted)
	fmt.Println("tokens left:", r.BudgetLevel("gpt", ""))
	// Output:
	// attempts: 120
	// budget exhausted: 90
	// tokens left: 0
}

// A provider's Retry-After that does not fit the deadline ends the call at
// once with a rate-limited error carrying the hint, so a fallback can act.
func Example_retryAfterBeyondDeadline() {
	limited := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: 20 * time.Second}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := retry.MustNew(retry.Config{}).Wrap(limited).Generate(ctx, &portico.Request{})
	var pe *portico.Error
	errors.As(err, &pe)
	fmt.Println(pe.Class, pe.RetryAfter, errors.Is(err, retry.ErrRetryAfterTooLong))
	// Output:
	// rate_limited 20s true
}

// A streamed call whose first attempt sends nothing within the TTFT timeout is
// abandoned and retried, as by default for an ambiguous failure with nothing
// delivered (a duplicate costs only tokens); only the retry's chunks reach
// the caller.
func Example_firstChunkTimeout() {
	calls := 0
	provider := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		calls++
		if calls == 1 {
			<-ctx.Done() // stuck before the first token
			return nil, portico.FromContext(ctx)
		}
		for _, c := range []string{"hel", "lo"} {
			if err := req.OnChunk(portico.Chunk{Text: c}); err != nil {
				return nil, err
			}
		}
		return &portico.Response{Text: "hello", FinishReason: portico.FinishStop}, nil
	})
	r := retry.MustNew(retry.Config{
		Backoff:  retry.Backoff{Schedule: retry.Immediate},
		Timeouts: retry.Timeouts{FirstChunk: 20 * time.Millisecond},
		OnRetry: func(i retry.Info) {
			fmt.Println("retry after", i.Class, errors.Is(i.Err, retry.ErrFirstChunkTimeout))
		},
	})
	resp, err := r.Wrap(provider).Generate(context.Background(), &portico.Request{
		OnChunk: func(c portico.Chunk) error { fmt.Printf("chunk %q\n", c.Text); return nil },
	})
	fmt.Println(resp.Text, err)
	// Output:
	// retry after ambiguous true
	// chunk "hel"
	// chunk "lo"
	// hello <nil>
}
