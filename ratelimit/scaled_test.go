package ratelimit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// oddPrompt is 400 bytes of a rare CJK-extension character (4 bytes each),
// which the byte rule estimates at 104 tokens and tokenizers count near a
// token per byte; plainPrompt is 3,000 bytes of English-like text, 754
// tokens by the byte rule.
var (
	oddPrompt   = strings.Repeat("\U00020000", 100)
	plainPrompt = strings.Repeat("the quick brown fox jumps over a lazy dog ", 73)[:3000]
)

// poisoned returns a Calibrated byte estimator taught by 40 other tenants'
// odd prompts through l (each answered with 450 input tokens: a ratio of
// 4.33, clamped to 4), and checks the ratio.
func poisoned(t *testing.T, m portico.Model, est *portico.Calibrated) {
	t.Helper()
	for i := range 40 {
		r := &portico.Request{Model: "m", MaxOutputTokens: 16, Identity: portico.Identity{ClientKey: "tenant-A" + strconv.Itoa(i)},
			Messages: []portico.Message{portico.Text(portico.RoleUser, oddPrompt)}}
		if _, err := m.Generate(t.Context(), r); err != nil {
			t.Fatalf("odd call %d: %v", i, err)
		}
	}
	if got := est.Ratio(&portico.Request{Model: "m"}); got != 4 {
		t.Fatalf("ratio after the odd calls = %v, want 4 (the clamp)", got)
	}
}

// TestScaledNeverRefusesForGood reproduces attack review 2's finding 1: a
// Calibrated estimator taught a ratio of 4 by other tenants' odd prompts
// estimates tenant B's ordinary 3,000-byte request at 3,016 tokens, which
// with 256 max output exceeds B's bucket of 2,800. Only the learned scale
// puts it over (754 + 256 fits), so the call is admitted reserving the
// whole bucket, 2,544 of it as input, and settles on its usage (520 + 100
// tokens, which it teaches against its estimate of 3,016); an error that
// sent nothing gives back exactly the 2,800. A call
// whose unscaled estimate is over the capacity is still refused, with the
// calibrated figures.
func TestScaledNeverRefusesForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		est, err := portico.NewCalibrated(portico.CharEstimator{}, portico.Calibration{})
		if err != nil {
			t.Fatal(err)
		}
		l := mustNew(t, Config{Limits: Limits{Tokens: 2800, Period: time.Second}, Estimator: est})
		var during float64
		fail := false
		m := l.Wrap(portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
			if r.Identity.ClientKey != "B" {
				return &portico.Response{FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 450, OutputTokens: 16}}, nil
			}
			during = l.Headroom(r)
			if fail {
				return nil, &portico.Error{Class: portico.Transient, NotSent: true, Err: errors.New("down")}
			}
			return &portico.Response{FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 520, OutputTokens: 100}}, nil
		}))
		poisoned(t, m, est)
		b := &portico.Request{Model: "m", MaxOutputTokens: 256, Identity: portico.Identity{ClientKey: "B"},
			Messages: []portico.Message{portico.Text(portico.RoleUser, plainPrompt)}}
		if base, got := est.BaseInputTokens(b), est.EstimateInputTokens(b); base != 754 || got != 3016 {
			t.Fatalf("B's estimate = %d unscaled, %d calibrated; want 754, 3016", base, got)
		}
		// Unscaled over the capacity: refused, with the calibrated figures.
		big := &portico.Request{Model: "m", MaxOutputTokens: 2100, Identity: portico.Identity{ClientKey: "B"},
			Messages: []portico.Message{portico.Text(portico.RoleUser, plainPrompt)}}
		var ce *CapacityError
		if _, err := m.Generate(t.Context(), big); !errors.As(err, &ce) || *ce != (CapacityError{Input: 3016, MaxOutput: 2100, Capacity: 2800}) {
			t.Errorf("754 + 2100 unscaled = %v, want a CapacityError {3016 2100 2800}", err)
		}
		fail = true
		if _, err := m.Generate(t.Context(), b); portico.ClassOf(err) != portico.Transient {
			t.Fatalf("B's failing call = %v, want its Transient error", err)
		}
		if during != 0 || l.Headroom(b) != 1 {
			t.Errorf("headroom during, after a call that sent nothing = %v, %v; want 0, 1 (the 2800 reserved, all given back)", during, l.Headroom(b))
		}
		fail = false
		if _, err := m.Generate(t.Context(), b); err != nil {
			t.Fatalf("B's call = %v, want admitted (754 + 256 unscaled fits 2800)", err)
		}
		if during != 0 {
			t.Errorf("headroom during B's call = %v, want 0 (the whole bucket of 2800 reserved)", during)
		}
		if got, want := l.Headroom(b), float64(2800-620)/2800; got != want {
			t.Errorf("headroom after B's call = %v, want %v (settled on 520 + 100 used)", got, want)
		}
		// B's call teaches the ratio the Estimator's own estimate (3016, so
		// 754 unscaled), not the 2544 reserved as input.
		if got, want := est.Ratio(b), (450+0.1*(520-450))/(104+0.1*(754-104)); got != want {
			t.Errorf("ratio after B's call = %v, want %v", got, want)
		}
	})
}

// TestScaledTierCapacity: with tiers the call is priced against the
// largest bucket, then its key's; the rule holds against the key's too.
func TestScaledTierCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		est, err := portico.NewCalibrated(portico.CharEstimator{}, portico.Calibration{})
		if err != nil {
			t.Fatal(err)
		}
		l := mustNew(t, Config{Limits: Limits{Tokens: 2800, Period: time.Second}, Estimator: est,
			Tiers: map[string]Limits{"big": {Tokens: 100_000, Period: time.Second}},
			Tier: func(r *portico.Request) string {
				if strings.HasPrefix(r.Identity.ClientKey, "tenant-A") {
					return "big"
				}
				return ""
			}})
		var during float64
		m := l.Wrap(portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
			if r.Identity.ClientKey == "B" {
				during = l.Headroom(r)
			}
			return &portico.Response{FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 450, OutputTokens: 16}}, nil
		}))
		poisoned(t, m, est)
		b := &portico.Request{Model: "m", MaxOutputTokens: 256, Identity: portico.Identity{ClientKey: "B"},
			Messages: []portico.Message{portico.Text(portico.RoleUser, plainPrompt)}}
		if _, err := m.Generate(t.Context(), b); err != nil || during != 0 {
			t.Fatalf("B's call = %v, headroom during %v; want admitted, 0 (its whole bucket of 2800)", err, during)
		}
	})
}
