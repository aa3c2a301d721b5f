package ratelimit

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestRefundBilledUsage: a failed call whose error carries the usage the
// provider billed (portico.Error.Usage) is settled on that usage exactly as
// a success is, whatever its class: the bucket gets back the reservation
// less what was billed, or is charged the excess. Usage that bills nothing
// says no more than a success without usage, so the class rule applies.
// (The class rule was applied whatever the error carried: an answer
// rejected by validation, InvalidResponse, refunded nothing.)
func TestRefundBilledUsage(t *testing.T) {
	billed := func(c portico.Class, status, in, out int) error {
		return &portico.Error{Class: c, Status: status, Usage: &portico.Usage{InputTokens: in, OutputTokens: out}}
	}
	wrapped := fmt.Errorf("layer: %w", billed(portico.InvalidResponse, 0, 80, 20))
	tests := []struct {
		name string
		err  error
		want int // Refund(err, 100, 400); the bucket (b = 1000) then holds 500 + want
	}{
		{"invalid response", billed(portico.InvalidResponse, 0, 100, 150), 250},
		{"N_in below the estimate", billed(portico.InvalidResponse, 0, 60, 40), 400},
		{"N_in above the estimate", billed(portico.Ambiguous, 0, 180, 300), 20},
		{"wrapped", wrapped, 400},
		{"status 200 stream cut", billed(portico.Transient, 200, 100, 30), 370},
		{"429 with usage", billed(portico.RateLimited, 429, 100, 0), 400},
		{"rejected with usage", billed(portico.Rejected, 0, 100, 0), 400},
		{"beyond the reservation", billed(portico.InvalidResponse, 0, 300, 400), -200},
		{"nothing billed: class rule", billed(portico.InvalidResponse, 0, 0, 0), 0},
		{"nothing billed, 429: class rule", billed(portico.RateLimited, 429, 0, 0), 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Refund(tt.err, 100, 400); got != tt.want {
				t.Errorf("Refund(%v, 100, 400) = %d, want %d", tt.err, got, tt.want)
			}
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, Config{Limits: Limits{Tokens: 1000}, Estimator: fixedEstimator(100)})
				r := req("a", 400)
				l.Wrap(errModel(tt.err)).Generate(t.Context(), r)
				if got, want := l.levelOf(r, time.Now()), float64(500+tt.want); got != want {
					t.Errorf("level after the failed call = %v, want %v", got, want)
				}
			})
		})
	}
}
