package route

import (
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/rules"
)

// Scorer predicts, before any model is called, the probability in [0, 1] that
// the strong model's answer to req would win over the weak model's (RouteLLM's
// P(strong wins | x)). A [Threshold] router sends req to the strong route when
// the score is above its threshold. A Scorer must be safe for concurrent use,
// must not modify req, and should be fast: it runs on every call.
type Scorer func(req *portico.Request) float64

// heuristicKeywords are words that, in the user's text, tend to mark reasoning,
// math or code work (lower case, matched case-insensitively as substrings).
var heuristicKeywords = [...]string{
	"prove", "proof", "derive", "theorem", "integral", "equation", "calculate",
	"step by step", "algorithm", "complexity", "optimiz", "debug", "refactor",
}

// HeuristicScore is the built-in [Scorer]: a logistic function of request
// features with hand-set weights, NO trained ones (RouteLLM trains its scorer
// on preference data). Calibrate its threshold on your traffic with
// [Calibrate], or plug in a trained scorer. The score is 1 / (1 + exp(-z)):
//
//	z = -3 + 0.35 * log2(1 + N_in/64)   N_in from portico.DefaultEstimator
//	    + 1.0 if user or system text holds a code fence (```)
//	    + 0.5 if the request has tools    + 0.5 if it has a Schema
//	    + 0.25 * min(question marks in user text, 4)
//	    + 0.6 * min(distinct keywords in user text, 3)
//	    + 0.1 * min(messages - 1, 10)
//
// The keywords are prove, proof, derive, theorem, integral, equation,
// calculate, step by step, algorithm, complexity, optimiz, debug and
// refactor, case-insensitive. A short plain question scores about 0.1. It
// does not allocate and is safe for concurrent use.
func HeuristicScore(req *portico.Request) float64 {
	tokens := portico.DefaultEstimator.EstimateInputTokens(req)
	z := -3 + 0.35*math.Log2(1+float64(tokens)/64)
	code, questions, keywords := textFeatures(req)
	if code {
		z += 1
	}
	if len(req.Tools) > 0 {
		z += 0.5
	}
	if req.Schema != nil {
		z += 0.5
	}
	z += 0.25*float64(questions) + 0.6*float64(keywords)
	z += 0.1 * float64(min(max(len(req.Messages)-1, 0), 10))
	return 1 / (1 + math.Exp(-z))
}

// textFeatures reports a code fence in user or system text, and counts the
// user text's question marks (up to 4) and distinct keywords (up to 3).
func textFeatures(req *portico.Request) (code bool, questions, keywords int) {
	var found [len(heuristicKeywords)]bool // each keyword counts once per request
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != portico.RoleUser && m.Role != portico.RoleSystem {
			continue
		}
		for _, p := range m.Content {
			if p.Kind != portico.PartText {
				continue
			}
			code = code || strings.Contains(p.Text, "```")
			if m.Role != portico.RoleUser {
				continue
			}
			questions = min(questions+strings.Count(p.Text, "?"), 4)
			keywords += countKeywords(p.Text, &found, 3-keywords)
		}
	}
	return code, questions, keywords
}

// keywordFirst maps a lower-case byte to the bit set of heuristicKeywords that
// start with it.
var keywordFirst = func() (t [256]uint16) {
	for i, kw := range heuristicKeywords {
		t[kw[0]] |= 1 << i
	}
	return t
}()

// countKeywords marks in found the keywords occurring in s (ASCII case
// folded) that were not found before, and returns how many it marked. One pass
// over s: each byte is looked up in keywordFirst, and only keywords starting
// with it are compared. It stops once need keywords are marked.
func countKeywords(s string, found *[len(heuristicKeywords)]bool, need int) int {
	n := 0
	for i := 0; i < len(s) && n < need; i++ {
		for set := keywordFirst[lower(s[i])]; set != 0; set &= set - 1 {
			k := bits.TrailingZeros16(set)
			kw := heuristicKeywords[k]
			// Byte for byte: a slice of len(kw) bytes holding a non-ASCII
			// rune has fewer runes than kw, so EqualFold folds ASCII only.
			if !found[k] && len(s)-i >= len(kw) && strings.EqualFold(s[i:i+len(kw)], kw) {
				found[k] = true
				n++
			}
		}
	}
	return n
}

// Calibrate returns the threshold at which a [Threshold] router, with
// scorer, sends the share targetStrongShare of sample to the strong route, as
// RouteLLM calibrates on a sample of traffic. With the scores sorted
// ascending, s[0] <= ... <= s[n-1], and k = round(targetStrongShare * n), it
// returns s[n-k-1]: a request goes strong when its score is strictly above
// it, so exactly k of the sample do when scores are distinct, and fewer
// (never more) when they tie across the cut. k = 0 returns s[n-1]; k = n the
// float just below s[0].
//
// It panics, with a message starting "route:", when sample is empty, scorer
// is nil or targetStrongShare is outside [0, 1] (or NaN). It calls scorer
// once per request and allocates one slice of n floats.
func Calibrate(sample []*portico.Request, scorer Scorer, targetStrongShare float64) float64 {
	if err := rules.First(
		rules.If(len(sample) == 0, "route: Calibrate of an empty sample"),
		rules.If(scorer == nil, "route: Calibrate with a nil scorer"),
		rules.If(!(targetStrongShare >= 0 && targetStrongShare <= 1), "route: Calibrate target share outside [0, 1]"),
	); err != nil {
		panic(err.Error())
	}
	s := make([]float64, len(sample))
	for i, r := range sample {
		s[i] = scorer(r)
	}
	slices.Sort(s)
	n := len(s)
	k := int(math.Floor(targetStrongShare*float64(n) + 0.5))
	switch k {
	case 0:
		return s[n-1]
	case n:
		return math.Nextafter(s[0], math.Inf(-1))
	}
	return s[n-k-1]
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
