package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
)

// The retry middleware keeps the Model contract (modeltest's conformance
// suite), with the defaults and with every timeout set.
func TestConformance(t *testing.T) {
	for name, cfg := range map[string]retry.Config{
		"defaults": {},
		"timeouts": {MinAttemptTime: time.Millisecond, Backoff: retry.Backoff{Schedule: retry.DecorrelatedJitter},
			Timeouts: retry.Timeouts{Attempt: 10 * time.Minute, FirstChunk: 10 * time.Minute, ChunkGap: 10 * time.Minute}},
	} {
		t.Run(name, func(t *testing.T) {
			modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
				return retry.MustNew(cfg).Wrap(base)
			})
		})
	}
}

// Over modeltest's fault injection (429 with Retry-After, 5xx, refused
// connections, ambiguous timeouts, context overflow on 40% of calls), every
// request ends with an answer or a classified error, and the attempts stay
// within DESIGN.md's bound requests*(1+ratio) + burst.
func TestFaultsWithinBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults := modeltest.MustFaults(modeltest.FaultConfig{Seed: 1, RetryAfter: 2 * time.Second, Rates: map[modeltest.FaultKind]float64{
			modeltest.Fault429: 0.1, modeltest.Fault503: 0.1, modeltest.FaultConnRefused: 0.05,
			modeltest.FaultTimeout: 0.1, modeltest.FaultContextOverflow: 0.05,
		}})
		base := modeltest.NewFake(modeltest.Answer("ok"))
		retries := map[portico.Class]int{}
		r := retry.MustNew(retry.Config{OnRetry: func(i retry.Info) { retries[i.Class]++ }})
		m := portico.Chain(base, r.Wrap, faults.Wrap)
		const n = 5000
		answered := 0
		classes := map[portico.Class]int{}
		for i := range n {
			req := &portico.Request{Model: "gpt", NoAmbiguousRetry: i%2 == 1,
				Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
			resp, err := m.Generate(context.Background(), req)
			if (resp == nil) == (err == nil) {
				t.Fatalf("request %d: Generate = %v, %v, want a response XOR an error", i, resp, err)
			}
			if err == nil {
				answered++
				continue
			}
			c := portico.ClassOf(err)
			classes[c]++
			var pe *portico.Error
			if !errors.As(err, &pe) {
				t.Errorf("request %d: error %v is not a *portico.Error", i, err)
			}
		}
		attempts := faults.Calls()
		bound := n*(1+retry.DefaultBudgetRatio) + retry.DefaultBudgetBurst
		t.Logf("%d requests: %d answered, %d attempts (bound %.0f), retries by class %v, errors by class %v",
			n, answered, attempts, bound, retries, classes)
		if float64(attempts) > bound {
			t.Errorf("attempts = %d, want <= %.0f", attempts, bound)
		}
		if retries[portico.Incompatible] != 0 || retries[portico.Permanent] != 0 {
			t.Errorf("retries by class = %v, want none for incompatible or permanent", retries)
		}
		if retries[portico.RateLimited] == 0 || retries[portico.Transient] == 0 || retries[portico.Ambiguous] == 0 {
			t.Errorf("retries by class = %v, want some rate-limited, transient and ambiguous", retries)
		}
		if classes[portico.Incompatible] != faults.Count(modeltest.FaultContextOverflow) {
			t.Errorf("incompatible errors = %d, want one per injected overflow (%d)", classes[portico.Incompatible], faults.Count(modeltest.FaultContextOverflow))
		}
	})
}

// Retry-After from a 429 wins over the backoff, with modeltest's scripted fake.
func TestRetryAfterWithFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := modeltest.NewFake(modeltest.Fail(modeltest.RateLimitError(1500*time.Millisecond)), modeltest.Answer("ok"))
		start := time.Now()
		resp, err := retry.MustNew(retry.Config{Backoff: retry.Backoff{BaseDelay: time.Millisecond}}).Wrap(base).Generate(context.Background(),
			&portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}})
		if err != nil || resp.Text != "ok" || base.Count() != 2 || time.Since(start) != 1500*time.Millisecond {
			t.Errorf("Generate = %v, %v after %d calls and %v; want ok after 2 calls and 1.5s", resp, err, base.Count(), time.Since(start))
		}
	})
}
