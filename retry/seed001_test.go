package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/portico-llm/portico"
)

// Seed 001: with independent failure probability q and at most N = 3 attempts,
// the expected attempts are 1 + q + q^2 and the success rate 1 - q^3:
// q = 0.1: 1.11 / 0.999; q = 0.5: 1.75 / 0.875; q = 0.9: 2.71 / 0.271.
//
// The real Retrier (no budget, no waits) runs n = 100,000 requests per q over a
// fake that fails each attempt with probability q, drawn from a PCG source with
// a fixed seed. Tolerance: k = 4 standard errors of the mean, where the standard
// error is sqrt(Var/n) with Var the exact variance of the attempts per request
// (P(1) = 1-q, P(2) = q(1-q), P(3) = q^2) and, for the success rate, the
// binomial sqrt(p(1-p)/n). Against the seed's figures, which are rounded to
// 0.01 / 0.001, half their last digit is added. A correct implementation fails
// this with probability about 6e-5 per figure; a fixed seed makes it
// reproducible.
func TestSeed001AttemptsAndSuccess(t *testing.T) {
	const n = 100_000
	const k = 4.0
	for _, tt := range []struct {
		q                    float64
		seedMean, seedSucc   float64
		meanRound, succRound float64
	}{
		{0.1, 1.11, 0.999, 0.005, 0.0005},
		{0.5, 1.75, 0.875, 0.005, 0.0005},
		{0.9, 2.71, 0.271, 0.005, 0.0005},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(tt.q*1000)))
		fail := transient()
		base := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			if rng.Float64() < tt.q {
				return nil, fail
			}
			return okResp, nil
		})
		attempts := 0
		counted := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			attempts++
			return base.Generate(ctx, req)
		})
		m := mustNew(t, Config{MaxAttempts: 3, Budget: Budget{Off: true}, Backoff: Backoff{Schedule: Immediate}}).Wrap(counted)
		successes := 0
		for range n {
			if _, err := m.Generate(context.Background(), userReq); err == nil {
				successes++
			}
		}
		q := tt.q
		wantMean := 1 + q + q*q
		wantSucc := 1 - q*q*q
		ex2 := (1 - q) + 4*q*(1-q) + 9*q*q
		seMean := math.Sqrt((ex2 - wantMean*wantMean) / n)
		seSucc := math.Sqrt(wantSucc * (1 - wantSucc) / n)
		mean := float64(attempts) / n
		succ := float64(successes) / n
		t.Logf("q=%.1f: mean attempts %.4f (exact %.4f, seed %.2f, SE %.4f), success %.4f (exact %.4f, seed %.3f, SE %.5f)",
			q, mean, wantMean, tt.seedMean, seMean, succ, wantSucc, tt.seedSucc, seSucc)
		if d := math.Abs(mean - wantMean); d > k*seMean {
			t.Errorf("q=%v: mean attempts = %.4f, want %.4f ± %.4f", q, mean, wantMean, k*seMean)
		}
		if d := math.Abs(mean - tt.seedMean); d > k*seMean+tt.meanRound {
			t.Errorf("q=%v: mean attempts = %.4f, want seed's %.2f ± %.4f", q, mean, tt.seedMean, k*seMean+tt.meanRound)
		}
		if d := math.Abs(succ - wantSucc); d > k*seSucc {
			t.Errorf("q=%v: success = %.4f, want %.4f ± %.4f", q, succ, wantSucc, k*seSucc)
		}
		if d := math.Abs(succ - tt.seedSucc); d > k*seSucc+tt.succRound {
			t.Errorf("q=%v: success = %.4f, want seed's %.3f ± %.4f", q, succ, tt.seedSucc, k*seSucc+tt.succRound)
		}
	}
}
