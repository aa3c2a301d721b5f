package portico_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// prompt is a request of model m whose CharEstimator estimate is 104: 400
// bytes (100 tokens) plus 4 for the message.
func prompt(m string) *portico.Request {
	return &portico.Request{Model: m, Messages: []portico.Message{portico.Text(portico.RoleUser, strings.Repeat("x", 400))}}
}

// observe reports tokens for req to e as a Limiter does: with the
// estimate e returns for it.
func observe(e *portico.Calibrated, req *portico.Request, tokens int) {
	e.ObserveInputTokens(req, e.EstimateInputTokens(req), tokens)
}

func calibrated(t *testing.T, c portico.Calibration) *portico.Calibrated {
	t.Helper()
	e, err := portico.NewCalibrated(portico.CharEstimator{}, c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCalibratedAfterMinSamples: 15 reports of 208 leave the estimate at
// the base's 104; the 16th applies the ratio 2 (208/104).
func TestCalibratedAfterMinSamples(t *testing.T) {
	e := calibrated(t, portico.Calibration{})
	req := prompt("m")
	for i := range 16 {
		if got, want := e.EstimateInputTokens(req), 104; got != want {
			t.Fatalf("after %d samples: estimate = %d, want %d", i, got, want)
		}
		observe(e, req, 208)
	}
	if got := e.EstimateInputTokens(req); got != 208 {
		t.Errorf("after 16 samples: estimate = %d, want 208", got)
	}
	if got := e.Ratio(prompt("other")); got != 1 {
		t.Errorf("another key's ratio = %v, want 1", got)
	}
}

// TestCalibratedAverages: with Alpha 0.5 and one sample needed, the ratio
// is the moving average of reports over that of the base's estimates,
// each the estimate returned over the ratio applied: 208/104 = 2, then
// (208+104)/2 / 104 = 1.5, then clamped to Max and Min.
func TestCalibratedAverages(t *testing.T) {
	e := calibrated(t, portico.Calibration{Alpha: 0.5, MinSamples: 1})
	req := prompt("m")
	for _, s := range []struct {
		report int
		ratio  float64
		est    int
	}{
		{208, 2, 208},
		{104, 1.5, 156},
		{0, 1.5, 156},            // no tokens reported: no sample
		{10_000, 4, 416},         // (156+10000)/2 / 104 = 48.8: Max 4
		{1, 4, 416},              // (5078+1)/2 / 104 = 24.4
		{1, 4, 416},              // 12.2
		{1, 4, 416},              // 6.1
		{1, 318.3125 / 104, 319}, // 3.06
		// The base's side is the estimate over the ratio: 319/3.06 =
		// 104.22, the average 104.11; then 160/1.5335 = 104.34, 104.22.
		{1, 159.65625 / (104 + (319/(318.3125/104)-104)/2), 160},
		{1, 80.328125 / 104.22429763, 81},
		{1, 0.5, 52}, // 40.66/104 = 0.39: Min 0.5
	} {
		observe(e, req, s.report)
		if got := e.Ratio(req); got-s.ratio > 1e-6 || s.ratio-got > 1e-6 {
			t.Errorf("after a report of %d: ratio = %v, want %v", s.report, got, s.ratio)
		}
		if got := e.EstimateInputTokens(req); got != s.est {
			t.Errorf("after a report of %d: estimate = %d, want %d", s.report, got, s.est)
		}
	}
}

// TestCalibratedKeysBounded: with Keys 2, the third and later keys share
// one ratio, which every unknown key then reads.
func TestCalibratedKeysBounded(t *testing.T) {
	e := calibrated(t, portico.Calibration{MinSamples: 1, Keys: 2})
	observe(e, prompt("a"), 208)
	observe(e, prompt("b"), 312)
	observe(e, prompt("c"), 52)
	for _, c := range []struct {
		key  string
		want float64
	}{{"a", 2}, {"b", 3}, {"c", 0.5}, {"never seen", 0.5}} {
		if got := e.Ratio(prompt(c.key)); got != c.want {
			t.Errorf("Ratio(%s) = %v, want %v", c.key, got, c.want)
		}
	}
}

// TestCalibratedConcurrent: 8 goroutines reporting the same ratio while
// others estimate end at that ratio; run with -race.
func TestCalibratedConcurrent(t *testing.T) {
	e := calibrated(t, portico.Calibration{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 100 {
				observe(e, prompt("m"), 312)
				_ = e.EstimateInputTokens(prompt(string(rune('a' + g))))
			}
		})
	}
	wg.Wait()
	if got := e.EstimateInputTokens(prompt("m")); got != 312 {
		t.Errorf("estimate = %d, want 312", got)
	}
}

// TestCalibrationMistakes: each field that can only be a mistake is
// refused, naming it.
func TestCalibrationMistakes(t *testing.T) {
	for _, c := range []struct {
		base portico.Estimator
		cfg  portico.Calibration
		want string
	}{
		{nil, portico.Calibration{}, "nil base"},
		{portico.CharEstimator{}, portico.Calibration{Alpha: 1.5}, "Alpha"},
		{portico.CharEstimator{}, portico.Calibration{MinSamples: -1}, "MinSamples"},
		{portico.CharEstimator{}, portico.Calibration{Keys: -1}, "Keys"},
		{portico.CharEstimator{}, portico.Calibration{Min: 3, Max: 2}, "Min and Max"},
		{portico.CharEstimator{}, portico.Calibration{Min: -1}, "Min and Max"},
	} {
		_, err := portico.NewCalibrated(c.base, c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "portico: Calibration") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewCalibrated(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}

// TestLimiterTeachesCalibrated: a Limiter whose Estimator is a Calibrated
// gives it each answer's input tokens (208 for an estimate of 104): after
// 16 calls its reservation is 208, which a CapacityError shows.
func TestLimiterTeachesCalibrated(t *testing.T) {
	e := calibrated(t, portico.Calibration{})
	l, err := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Tokens: 1_000_000, TokenBurst: 10_000}, Estimator: e})
	if err != nil {
		t.Fatal(err)
	}
	m := l.Wrap(modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop,
		Usage: portico.Usage{InputTokens: 208, OutputTokens: 1}}}))
	for range 16 {
		if _, err := m.Generate(context.Background(), prompt("m")); err != nil {
			t.Fatal(err)
		}
	}
	big := prompt("m")
	big.MaxOutputTokens = 9900
	_, err = m.Generate(context.Background(), big)
	var ce *ratelimit.CapacityError
	if !errors.As(err, &ce) || ce.Input != 208 {
		t.Errorf("a request over capacity = %v, want a CapacityError with Input 208", err)
	}
}

// counting is CharEstimator counting its estimates.
type counting struct{ n atomic.Int64 }

func (c *counting) EstimateInputTokens(req *portico.Request) int {
	c.n.Add(1)
	return portico.CharEstimator{}.EstimateInputTokens(req)
}

// TestCalibratedObserveEstimatesNothing: a Limiter over a Calibrated
// estimates each of 20 calls once, at admission; the 20 observations
// take that estimate and do not call the base again, and still teach
// the ratio 2 (208/104).
func TestCalibratedObserveEstimatesNothing(t *testing.T) {
	base := &counting{}
	e, err := portico.NewCalibrated(base, portico.Calibration{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Tokens: 1_000_000, TokenBurst: 10_000}, Estimator: e})
	if err != nil {
		t.Fatal(err)
	}
	m := l.Wrap(modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop,
		Usage: portico.Usage{InputTokens: 208, OutputTokens: 1}}}))
	for range 20 {
		if _, err := m.Generate(context.Background(), prompt("m")); err != nil {
			t.Fatal(err)
		}
	}
	if got := base.n.Load(); got != 20 {
		t.Errorf("base estimates for 20 calls = %d, want 20", got)
	}
	if got := e.Ratio(prompt("m")); got != 2 {
		t.Errorf("ratio = %v, want 2", got)
	}
}

// TestEstimateOnly: EstimateOnly of a Calibrated estimates as it does
// but is no InputObserver, so a Limiter given it teaches nothing.
func TestEstimateOnly(t *testing.T) {
	e := calibrated(t, portico.Calibration{MinSamples: 1})
	observe(e, prompt("m"), 208)
	v := portico.EstimateOnly(e)
	if _, ok := v.(portico.InputObserver); ok {
		t.Fatal("EstimateOnly is an InputObserver")
	}
	if got := v.EstimateInputTokens(prompt("m")); got != 208 {
		t.Errorf("estimate = %d, want 208", got)
	}
}
