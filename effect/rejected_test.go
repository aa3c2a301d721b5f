package effect

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
)

// TestRejectedReleasesKey: an effect refused locally (its breaker open:
// nothing was sent) releases the key. Do returns the
// breaker's error as is, RetryAfter included; the next Do,
// once the breaker lets calls through, runs the effect. The key used to be
// marked Failed (Rejected is not retryable) and locked for the TTL (24 h):
// the effect could never run, Resolve refused the key, and the RetryAfter
// told the caller to come back to a key that would refuse it.
func TestRejectedReleasesKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		r := newRunner(t, Config{})
		key := mustKey(t, "order-7", "charge", `{"amount":500}`)

		// The payment API behind a breaker that one failure opens for 10 s.
		brk := breaker.MustNew(breaker.Config{Name: "payments", Trip: breaker.ConsecutiveFailures(1), OpenFor: 10 * time.Second})
		api := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)), modeltest.Answer("ch_1"))
		payments := brk.Wrap(api)
		call := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "charge")}}
		charge := func(ctx context.Context) ([]byte, error) {
			resp, err := payments.Generate(ctx, call)
			if err != nil {
				return nil, err
			}
			return []byte(resp.Text), nil
		}
		if _, err := payments.Generate(ctx, call); portico.ClassOf(err) != portico.Transient {
			t.Fatalf("first API call = %v, want the 503 that opens the breaker", err)
		}

		_, err := r.Do(ctx, key, charge)
		if portico.ClassOf(err) != portico.Rejected || !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("Do with the breaker open = %v, want the breaker's Rejected error", err)
		}
		if ra := portico.RetryAfterOf(err); ra != 10*time.Second {
			t.Errorf("RetryAfter = %v, want 10s (the breaker's)", ra)
		}
		// Released: Failed with class Rejected, which the next Do runs, kept
		// for the Lease so that a caller that saw the key pending does not
		// find it absent (which reads as a record the store lost).
		if rec, ok, err := r.Status(ctx, key); !ok || err != nil || rec.State != Failed || rec.Class != portico.Rejected ||
			!rec.Expires.Equal(time.Now().Add(DefaultLease)) {
			t.Errorf("Status after a rejection = %+v, %v, %v; want released: failed, rejected, for the lease", rec, ok, err)
		}
		if api.Count() != 1 {
			t.Fatalf("API calls = %d, want 1 (the rejected run sent nothing)", api.Count())
		}

		time.Sleep(10 * time.Second) // the breaker admits a probe
		res, err := r.Do(ctx, key, charge)
		if err != nil || string(res) != "ch_1" {
			t.Fatalf("Do after RetryAfter = %q, %v; want the effect run", res, err)
		}
		if rec, ok, _ := r.Status(ctx, key); !ok || rec.State != Completed {
			t.Errorf("Status = %+v, %v; want completed", rec, ok)
		}
		if api.Count() != 2 {
			t.Errorf("API calls = %d, want 2", api.Count())
		}
	})
}

// TestRejectedRecordStillRerunnable: a released key read from a store whose
// clock lags (the record not yet expired there) is run again, not refused.
func TestRejectedRecordStillRerunnable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s, _ := NewMemoryStore(MemoryConfig{})
		r := newRunner(t, Config{Store: s})
		key := mustKey(t, "op", "t", `{}`)
		s.PutIfAbsent(ctx, key, Record{State: Failed, Class: portico.Rejected, Owner: "x", Expires: time.Now().Add(time.Second)})
		res, err := r.Do(ctx, key, func(context.Context) ([]byte, error) { return []byte(`1`), nil })
		if err != nil || string(res) != "1" {
			t.Fatalf("Do over a Rejected record = %q, %v; want the effect run", res, err)
		}
	})
}
