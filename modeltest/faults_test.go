package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

func TestNewFaultsRejects(t *testing.T) {
	for name, cfg := range map[string]FaultConfig{
		"negative rate":     {Rates: map[FaultKind]float64{Fault503: -0.1}},
		"rate above 1":      {Rates: map[FaultKind]float64{Fault503: 1.5}},
		"NaN rate":          {Rates: map[FaultKind]float64{Fault503: math.NaN()}},
		"sum above 1":       {Rates: map[FaultKind]float64{Fault503: 0.6, Fault429: 0.6}},
		"FaultNone key":     {Rates: map[FaultKind]float64{FaultNone: 0.1}},
		"unknown key":       {Rates: map[FaultKind]float64{numFaultKinds: 0.1}},
		"negative SlowTTFT": {SlowTTFT: -time.Second},
		"negative Timeout":  {Timeout: -time.Second},
		"negative stall":    {StallAfter: -1},
	} {
		if f, err := NewFaults(cfg); err == nil || f != nil {
			t.Errorf("NewFaults(%s) = (%v, %v), want (nil, an error)", name, f, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustFaults(sum above 1) did not panic")
		}
	}()
	MustFaults(FaultConfig{Rates: map[FaultKind]float64{Fault503: 0.6, Fault429: 0.6}})
}

// allFaults gives each injectable kind the same rate.
func allFaults(seed uint64, rate float64) FaultConfig {
	rates := map[FaultKind]float64{}
	for _, k := range FaultKinds() {
		rates[k] = rate
	}
	return FaultConfig{Seed: seed, Rates: rates, StallAfter: 1, Timeout: 3 * time.Second}
}

// checkFault checks that one call's result is what kind k injects over a base
// answering "alpha beta gamma delta" with a 1 s deadline per call.
func checkFault(t *testing.T, k FaultKind, resp *portico.Response, err error, took time.Duration) {
	t.Helper()
	const text = "alpha beta gamma delta"
	if (resp == nil) == (err == nil) {
		t.Fatalf("%v: Generate() = (%v, %v), want a Response XOR an error", k, resp, err)
	}
	var e *portico.Error
	errors.As(err, &e)
	switch k {
	case FaultNone:
		if err != nil || resp.Text != text {
			t.Errorf("%v: got (%v, %v), want the base's answer", k, resp, err)
		}
	case Fault429:
		if e == nil || e.Class != portico.RateLimited || e.Status != 429 || e.RetryAfter != time.Second {
			t.Errorf("%v: got %v, want rate_limited 429 with retry-after 1s", k, err)
		}
	case Fault500, Fault502, Fault503:
		want := map[FaultKind]int{Fault500: 500, Fault502: 502, Fault503: 503}[k]
		if e == nil || e.Class != portico.Transient || e.Status != want {
			t.Errorf("%v: got %v, want transient %d", k, err, want)
		}
	case FaultConnRefused:
		if e == nil || e.Class != portico.Transient || e.Status != 0 {
			t.Errorf("%v: got %v, want transient without status", k, err)
		}
	case FaultTimeout:
		if e == nil || e.Class != portico.Ambiguous || took != 3*time.Second {
			t.Errorf("%v: got %v after %v, want ambiguous after 3s", k, err, took)
		}
	case FaultSlowTTFT:
		if err != nil || resp.Text != text || took != 10*time.Second {
			t.Errorf("%v: got (%v, %v) after %v, want the answer after 10s", k, resp, err, took)
		}
	case FaultStall:
		if portico.ClassOf(err) != portico.Deadline || took != time.Minute {
			t.Errorf("%v: got %v after %v, want a deadline error after 1m", k, err, took)
		}
	case FaultInvalidJSON:
		if err != nil || resp.Text != BrokenJSON || json.Valid([]byte(resp.Text)) {
			t.Errorf("%v: got (%v, %v), want text BrokenJSON, invalid JSON", k, resp, err)
		}
	case FaultTruncation:
		if err != nil || resp.Text != text[:len(text)/2] || resp.FinishReason != portico.FinishLength {
			t.Errorf("%v: got (%+v, %v), want the first half with finish length", k, resp, err)
		}
	case FaultContextOverflow:
		if e == nil || e.Class != portico.Incompatible || e.Code != "context_length_exceeded" {
			t.Errorf("%v: got %v, want incompatible context_length_exceeded", k, err)
		}
	}
	if err != nil && portico.ClassOf(err) != portico.Deadline && !errors.Is(err, ErrInjected) {
		t.Errorf("%v: error %v does not wrap ErrInjected", k, err)
	}
}

// TestFaultsInject makes 20,000 sequential calls with every kind at 5% and
// checks each call's result against the kind Faults.Kind gives its index, the
// counts against the rates, and which kinds reach the inner Model.
func TestFaultsInject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const calls, rate = 20000, 0.05
		var hooked sync.Map
		cfg := allFaults(7, rate)
		cfg.OnFault = func(n int, k FaultKind) { hooked.Store(n, k) }
		f := MustFaults(cfg)
		base := &Fake{Outcomes: []Outcome{Answer("alpha beta gamma delta")}, RecordLimit: -1}
		m := f.Wrap(base)
		innerWant := 0
		for n := range calls {
			k := f.Kind(n)
			switch k {
			case FaultNone, FaultTimeout, FaultSlowTTFT, FaultInvalidJSON, FaultTruncation:
				innerWant++
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			start := time.Now()
			resp, err := m.Generate(ctx, userReq("q"))
			checkFault(t, k, resp, err, time.Since(start))
			cancel()
			h, ok := hooked.Load(n)
			if (k == FaultNone) == ok || (ok && h != k) {
				t.Errorf("OnFault for call %d = (%v, %v), want it called with %v unless none", n, h, ok, k)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
		if base.Count() != innerWant {
			t.Errorf("inner Model calls = %d, want %d", base.Count(), innerWant)
		}
		// Each count is binomial(20000, 0.05): sd = sqrt(20000*0.05*0.95) = 30.8;
		// 5 sd (154) bounds a fair sampler's miss at about 6e-7 per kind.
		sd := math.Sqrt(calls * rate * (1 - rate))
		total := 0
		for _, k := range FaultKinds() {
			got := f.Count(k)
			total += got
			if math.Abs(float64(got)-calls*rate) > 5*sd {
				t.Errorf("Count(%v) = %d, want %v ± %.0f", k, got, calls*rate, 5*sd)
			}
		}
		if total+f.Count(FaultNone) != calls || f.Calls() != calls {
			t.Errorf("counts sum to %d, Calls() = %d, want %d", total+f.Count(FaultNone), f.Calls(), calls)
		}
	})
}

// TestFaultsDeterministic checks that concurrent calls get exactly the counts of
// the same seed's sequential decisions, and another seed gets other decisions.
func TestFaultsDeterministic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := allFaults(42, 0.08)
		f := MustFaults(cfg)
		want := map[FaultKind]int{}
		const calls = 4000
		for n := range calls {
			want[f.Kind(n)]++
		}
		m := f.Wrap(&Fake{RecordLimit: -1})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range calls / 8 {
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					m.Generate(ctx, userReq("q"))
					cancel()
				}
			})
		}
		wg.Wait()
		if got := f.Counts(); !maps.Equal(got, want) {
			t.Errorf("Counts() after concurrent calls = %v, want %v", got, want)
		}
		other := MustFaults(allFaults(43, 0.08))
		same := 0
		for n := range 1000 {
			if other.Kind(n) == f.Kind(n) {
				same++
			}
		}
		// P(same kind) = 0.88^2 + 11*0.08^2 = 0.845 per call: 845 ± 5 sd (57).
		if same > 950 {
			t.Errorf("seeds 42 and 43 agree on %d of 1000 calls, want about 845", same)
		}
	})
}

// TestFaultsStreaming forces each kind on a streaming call and checks the
// chunks the caller sees.
func TestFaultsStreaming(t *testing.T) {
	for _, k := range append([]FaultKind{FaultNone}, FaultKinds()...) {
		t.Run(k.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := FaultConfig{StallAfter: 2, Timeout: 3 * time.Second}
				if k != FaultNone {
					cfg.Rates = map[FaultKind]float64{k: 1}
				}
				base := NewFake(Outcome{Response: Answer("alpha beta gamma delta").Response, ChunkGap: time.Millisecond})
				var got strings.Builder
				req := userReq("q")
				req.OnChunk = func(c portico.Chunk) error { got.WriteString(c.Text); return nil }
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				resp, err := MustFaults(cfg).Wrap(base).Generate(ctx, req)
				switch {
				case k == FaultStall:
					if got.String() != "alpha beta " || portico.ClassOf(err) != portico.Deadline {
						t.Errorf("stall after 2: chunks %q, err %v, want %q and a deadline error", got.String(), err, "alpha beta ")
					}
				case err == nil:
					if got.String() != resp.Text {
						t.Errorf("chunks %q, Response.Text %q, want equal", got.String(), resp.Text)
					}
				case got.Len() != 0:
					t.Errorf("error %v after chunks %q, want no chunks", err, got.String())
				}
			})
		})
	}
}

func TestFaultKindString(t *testing.T) {
	seen := map[string]bool{}
	for k := range numFaultKinds {
		s := k.String()
		if s == "" || seen[s] || strings.HasPrefix(s, "FaultKind(") {
			t.Errorf("FaultKind(%d).String() = %q, want a unique name", k, s)
		}
		seen[s] = true
	}
	if got := numFaultKinds.String(); got != "FaultKind(12)" {
		t.Errorf("numFaultKinds.String() = %q, want FaultKind(12)", got)
	}
	if got := len(FaultKinds()); got != int(numFaultKinds)-1 {
		t.Errorf("len(FaultKinds()) = %d, want %d", got, numFaultKinds-1)
	}
}

func TestFaultsPassThroughAllocs(t *testing.T) {
	m := MustFaults(FaultConfig{}).Wrap(&Fake{Outcomes: []Outcome{Answer("hi")}, RecordLimit: -1})
	req, ctx := userReq("q"), context.Background()
	if got := testing.AllocsPerRun(1000, func() { m.Generate(ctx, req) }); got != 1 {
		t.Errorf("Faults pass-through allocs = %v, want 1 (the Fake's Response)", got)
	}
}

func BenchmarkFaultsPassThrough(b *testing.B) {
	m := MustFaults(FaultConfig{Rates: map[FaultKind]float64{Fault503: 0.0001}}).Wrap(&Fake{Outcomes: []Outcome{Answer("hi")}, RecordLimit: -1})
	req, ctx := userReq("q"), context.Background()
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		sink, _ = m.Generate(ctx, req)
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// Corrupting faults change a copy: an inner Model that returns one shared
// Response (a cached answer) is not modified, so its later callers, and calls
// running at the same time, see the original; and an inner Model that breaks
// the contract with (nil, nil) gets that passed through, not a nil dereference.
func TestFaultsCorruptACopy(t *testing.T) {
	for _, k := range []FaultKind{FaultInvalidJSON, FaultTruncation} {
		shared := &portico.Response{Text: "alpha beta", FinishReason: portico.FinishStop}
		inner := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return shared, nil })
		resp, err := MustFaults(FaultConfig{Rates: map[FaultKind]float64{k: 1}}).Wrap(inner).Generate(context.Background(), userReq("q"))
		if err != nil || resp == shared || resp.Text == "alpha beta" {
			t.Errorf("%v: Generate() = (%+v, %v), want a corrupted copy", k, resp, err)
		}
		if shared.Text != "alpha beta" || shared.FinishReason != portico.FinishStop {
			t.Errorf("%v: the inner Model's Response became %+v, want it unchanged", k, shared)
		}
		nilNil := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return nil, nil })
		resp, err = MustFaults(FaultConfig{Rates: map[FaultKind]float64{k: 1}}).Wrap(nilNil).Generate(context.Background(), userReq("q"))
		if resp != nil || err != nil {
			t.Errorf("%v over (nil, nil): Generate() = (%v, %v), want (nil, nil) passed through", k, resp, err)
		}
	}
}

// A nil request goes to the wrapped Model untouched and uncounted, whatever
// fault its index would have got (each kind at rate 1 in turn).
func TestFaultsNilRequest(t *testing.T) {
	for _, k := range FaultKinds() {
		f := MustFaults(FaultConfig{Rates: map[FaultKind]float64{k: 1}})
		base := NewFake()
		resp, err := f.Wrap(base).Generate(context.Background(), nil)
		if resp != nil || portico.ClassOf(err) != portico.Permanent || base.Count() != 1 || f.Calls() != 0 {
			t.Errorf("%v: Generate(nil) = (%v, %v), inner calls %d, Faults calls %d; want the Fake's permanent error, 1, 0", k, resp, err, base.Count(), f.Calls())
		}
	}
}
