package stack

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// TestShareAfterClientWait: a client that waited to be admitted has the
// primary's share timed from the end of the wait, as a stack with the time
// left then gives it, not from before the wait.
func TestShareAfterClientWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		left := func(deadline time.Duration, calls int) time.Duration {
			var got time.Duration
			m := portico.ModelFunc(func(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
				d, _ := ctx.Deadline()
				got = time.Until(d)
				return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
			})
			s, err := New(Config{Routes: []Route{route("a", m), route("b", m)}, Deadline: deadline,
				Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: 10 * time.Second}, Mode: ratelimit.Wait}})
			if err != nil {
				t.Fatal(err)
			}
			for range calls {
				if _, err := s.Generate(context.Background(), hello); err != nil {
					t.Fatal(err)
				}
			}
			return got
		}
		// The second call waits 10 s for its token, with 50 s of 60 left.
		if got, want := left(time.Minute, 2), left(50*time.Second, 1); got != want {
			t.Errorf("primary's share after a 10s wait = %v, want %v (a fresh 50s request's)", got, want)
		}
	})
}
