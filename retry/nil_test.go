package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// A Model that returns neither a Response nor an error breaks the contract:
// the Retrier returns portico.ErrNilResponse (InvalidResponse) instead of
// (nil, nil), and retries it only with RetryInvalidResponse. Streaming or
// not, with or without an attempt timeout.
func TestNilResponseIsInvalid(t *testing.T) {
	nilThenOK := func() *counting {
		return &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
			if n == 0 {
				return nil, nil
			}
			return okResp, nil
		}}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		ch   bool
	}{
		{"inline", Config{Backoff: Backoff{Schedule: Immediate}}, false},
		{"single attempt", Config{MaxAttempts: 1}, false},
		{"attempt timeout", Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{Attempt: time.Second}}, false},
		{"streamed", Config{Backoff: Backoff{Schedule: Immediate}}, true},
		{"streamed, watched", Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{FirstChunk: time.Second}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				req := userReq.Clone()
				if tc.ch {
					req.OnChunk = func(portico.Chunk) error { return nil }
				}
				base := nilThenOK()
				resp, err := mustNew(t, tc.cfg).Wrap(base).Generate(context.Background(), req)
				if resp != nil || !errors.Is(err, portico.ErrNilResponse) || portico.ClassOf(err) != portico.InvalidResponse || base.calls() != 1 {
					t.Errorf("Generate = (%v, %v) after %d calls, want ErrNilResponse after 1", resp, err, base.calls())
				}
				if tc.cfg.MaxAttempts == 1 {
					return
				}
				cfg := tc.cfg
				cfg.RetryInvalidResponse = true
				base = nilThenOK()
				resp, err = mustNew(t, cfg).Wrap(base).Generate(context.Background(), req)
				if err != nil || resp != okResp || base.calls() != 2 {
					t.Errorf("RetryInvalidResponse: Generate = (%v, %v) after %d calls, want ok from the retry", resp, err, base.calls())
				}
			})
		})
	}
}
