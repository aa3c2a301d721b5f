package route

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
)

func TestHeuristicScore(t *testing.T) {
	logistic := func(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
	// "hi": 4 tokens of message overhead + 1 of text.
	if got, want := HeuristicScore(userReq("hi")), logistic(-3+0.35*math.Log2(1+5.0/64)); math.Abs(got-want) > 1e-12 {
		t.Errorf("HeuristicScore(hi) = %v, want %v", got, want)
	}
	// 40 bytes: 4 + 10 tokens; a code fence, one '?', keywords "prove" and "step by step".
	text := "Prove it step by step? ```go\nx := 1\n```"
	text += strings.Repeat(" ", 40-len(text))
	want := logistic(-3 + 0.35*math.Log2(1+14.0/64) + 1 + 0.25 + 2*0.6)
	if got := HeuristicScore(userReq(text)); math.Abs(got-want) > 1e-12 {
		t.Errorf("HeuristicScore(code, question, 2 keywords) = %v, want %v", got, want)
	}
	// Caps: at most 4 question marks and 3 keywords count; tools and schema add 0.5 each.
	r := userReq("PROVE DERIVE THEOREM INTEGRAL ?????????")
	r.Tools = []portico.Tool{{Name: "f"}}
	r.Schema = &portico.Schema{Name: "s", JSON: json.RawMessage(`{}`)}
	n := portico.DefaultEstimator.EstimateInputTokens(r)
	want = logistic(-3 + 0.35*math.Log2(1+float64(n)/64) + 0.5 + 0.5 + 0.25*4 + 0.6*3)
	if got := HeuristicScore(r); math.Abs(got-want) > 1e-12 {
		t.Errorf("HeuristicScore(capped features) = %v, want %v", got, want)
	}
	// An assistant's text does not count as the user's.
	a := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleAssistant, "prove????")}}
	if got, hard := HeuristicScore(a), HeuristicScore(userReq("prove????")); got >= hard {
		t.Errorf("HeuristicScore(assistant text) = %v, want below the same user text's %v", got, hard)
	}
	if allocs := testing.AllocsPerRun(100, func() { HeuristicScore(r) }); allocs != 0 {
		t.Errorf("HeuristicScore allocs = %v, want 0", allocs)
	}
}

// scoreOf is a scorer reading the score from the request's model name, for
// calibration tests on known samples.
func scoreOf(req *portico.Request) float64 {
	var s float64
	json.Unmarshal([]byte(req.Model), &s)
	return s
}

func sampleOf(scores ...float64) []*portico.Request {
	rs := make([]*portico.Request, len(scores))
	for i, s := range scores {
		b, _ := json.Marshal(s)
		rs[i] = &portico.Request{Model: string(b)}
	}
	return rs
}

func strongShare(sample []*portico.Request, threshold float64) float64 {
	n := 0
	for _, r := range sample {
		if scoreOf(r) > threshold {
			n++
		}
	}
	return float64(n) / float64(len(sample))
}

func TestCalibrate(t *testing.T) {
	// 100 distinct scores 0.00 .. 0.99, shuffled by a fixed permutation.
	scores := make([]float64, 100)
	for i := range scores {
		scores[i] = float64((i*37)%100) / 100
	}
	sample := sampleOf(scores...)
	for _, tc := range []struct {
		target, threshold float64
	}{
		{0.3, 0.69}, {0.5, 0.49}, {0.01, 0.98}, {0, 0.99}, {0.994, 0}, {0.996, math.Nextafter(0, -1)}, {1, math.Nextafter(0, -1)},
	} {
		got := Calibrate(sample, scoreOf, tc.target)
		if got != tc.threshold {
			t.Errorf("Calibrate(0..0.99, %v) = %v, want %v", tc.target, got, tc.threshold)
		}
		want := math.Floor(tc.target*100+0.5) / 100
		if share := strongShare(sample, got); share != want {
			t.Errorf("strong share at Calibrate(0..0.99, %v) = %v, want %v", tc.target, share, want)
		}
	}
	// Ties at the cut go weak: the share falls short, never over.
	tied := sampleOf(0.1, 0.2, 0.5, 0.5, 0.5, 0.9)
	th := Calibrate(tied, scoreOf, 0.5) // k = 3: threshold s[2] = 0.5
	if th != 0.5 {
		t.Errorf("Calibrate(tied, 0.5) = %v, want 0.5", th)
	}
	if share := strongShare(tied, th); share != 1.0/6 {
		t.Errorf("strong share with ties = %v, want 1/6", share)
	}
}

func TestCalibratePanics(t *testing.T) {
	for name, f := range map[string]func(){
		"empty":      func() { Calibrate(nil, scoreOf, 0.5) },
		"nil scorer": func() { Calibrate(sampleOf(1), nil, 0.5) },
		"target>1":   func() { Calibrate(sampleOf(1), scoreOf, 1.5) },
		"NaN":        func() { Calibrate(sampleOf(1), scoreOf, math.NaN()) },
	} {
		func() {
			defer func() {
				if r, _ := recover().(string); !strings.HasPrefix(r, "route:") {
					t.Errorf("Calibrate(%s) panic = %q, want a message starting route:", name, r)
				}
			}()
			f()
		}()
	}
}
