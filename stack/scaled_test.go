package stack

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// TestStackCalibrationNeverRefusesForGood is attack review 2's finding 1
// through stack.New: the stack's default estimator (a Calibrated byte
// rule) is taught a ratio of 4 (the clamp) by 40 tenants' odd prompts (400
// bytes of rare CJK, 104 tokens by the byte rule, answered with 450), so
// tenant B's ordinary 3,000-byte request (754 by the byte rule) is
// estimated at 3,016 tokens; with 256 max output that exceeds B's client
// bucket of 2,800. B's call is admitted, reserving the whole bucket, and
// settled on its usage (520 + 100): not refused as Incompatible. The same
// at a route's limiter (the client limiter then sees the estimator
// through portico.EstimateOnly, which keeps the rule).
func TestStackCalibrationNeverRefusesForGood(t *testing.T) {
	lim := &ratelimit.Config{Limits: ratelimit.Limits{Tokens: 2800, Period: time.Second}}
	for _, tc := range []struct {
		name  string
		route *ratelimit.Config // the route's limiter
		limit func(*Stack) *ratelimit.Limiter
	}{
		{"client", nil, (*Stack).ClientLimiter},
		// The client limiter then sees the estimator through EstimateOnly.
		{"route", lim, func(s *Stack) *ratelimit.Limiter { return s.Limiter("only") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var s *Stack
				var during float64
				m := portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
					if r.Identity.ClientKey != "B" {
						return &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 450, OutputTokens: 16}}, nil
					}
					during = tc.limit(s).Headroom(r)
					return &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 520, OutputTokens: 100}}, nil
				})
				rt := route("only", m)
				rt.Limiter = tc.route
				var err error
				if s, err = New(Config{Routes: []Route{rt}, Client: lim}); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				odd := strings.Repeat("\U00020000", 100)
				for i := range 40 {
					r := &portico.Request{MaxOutputTokens: 16, Identity: portico.Identity{ClientKey: "tenant-A" + strconv.Itoa(i)},
						Messages: []portico.Message{portico.Text(portico.RoleUser, odd)}}
					if _, err := s.Generate(t.Context(), r); err != nil {
						t.Fatalf("odd call %d: %v", i, err)
					}
					time.Sleep(time.Second) // the buckets full again
				}
				b := &portico.Request{MaxOutputTokens: 256, Identity: portico.Identity{ClientKey: "B"},
					Messages: []portico.Message{portico.Text(portico.RoleUser, strings.Repeat("the quick brown fox jumps over a lazy dog ", 73)[:3000])}}
				if _, err := s.Generate(t.Context(), b); err != nil {
					t.Fatalf("B's call = %v, want admitted (754 + 256 unscaled fits 2800)", err)
				}
				if during != 0 {
					t.Errorf("headroom during B's call = %v, want 0 (the whole bucket of 2800 reserved)", during)
				}
				if got, want := tc.limit(s).Headroom(b), float64(2800-620)/2800; got != want {
					t.Errorf("headroom after B's call = %v, want %v (settled on 520 + 100 used)", got, want)
				}
			})
		})
	}
}
