package retry

import (
	"errors"
	"math"
	"time"

	"github.com/portico-llm/portico"
)

// Bounds are the ranges within which a request's [portico.Overrides] may
// set a route's retry settings (Config.Bounds): an override outside its
// range is clamped into it. A bound left zero is the route's own value
// (Timeouts.FirstChunk, Timeouts.Attempt, MaxAttempts): the zero Bounds
// lets a request change nothing, a Max alone lets it lengthen up to Max,
// a Min alone shorten down to Min. A route timeout of zero (none) counts
// as longer than any, so a Min lets a request set one. A reasoning
// model's route, say, with Timeouts.FirstChunk 10 s and FirstChunk {Max:
// 2 min}, lets a request that thinks long wait up to 2 min for its first
// chunk on the same route, and no request shorten it.
type Bounds struct {
	// FirstChunk bounds an override of Timeouts.FirstChunk.
	FirstChunk Range
	// Attempt bounds an override of Timeouts.Attempt.
	Attempt Range
	// MinAttempts and MaxAttempts bound an override of MaxAttempts.
	MinAttempts, MaxAttempts int
}

// Range is a range of durations, [Min, Max]; a zero bound is the route's
// own value.
type Range struct {
	Min, Max time.Duration
}

// check returns the error of bounds that can only be a mistake: a
// negative bound, or a Min above its Max.
func (b *Bounds) check() error {
	for _, r := range []struct {
		name     string
		min, max int64
	}{{"FirstChunk", int64(b.FirstChunk.Min), int64(b.FirstChunk.Max)}, {"Attempt", int64(b.Attempt.Min), int64(b.Attempt.Max)},
		{"MinAttempts/MaxAttempts", int64(b.MinAttempts), int64(b.MaxAttempts)}} {
		if min(r.min, r.max) < 0 || r.max > 0 && r.min > r.max {
			return errors.New("retry: Config.Bounds." + r.name + ": negative, or Min above Max")
		}
	}
	return nil
}

// overridden returns r with o's settings, each clamped into r's bounds:
// a copy sharing r's budgets, for one call. It returns r itself when
// nothing changes.
func (r *Retrier) overridden(o *portico.Overrides) *Retrier {
	b := &r.bounds
	attempts := clampCount(o.MaxAttempts, r.maxAttempts, b.MinAttempts, b.MaxAttempts)
	ttft := clampTimeout(o.FirstChunk, r.ttft, b.FirstChunk)
	attempt := clampTimeout(o.Attempt, r.attemptTimeout, b.Attempt)
	if attempts == r.maxAttempts && ttft == r.ttft && attempt == r.attemptTimeout {
		return r
	}
	c := *r
	c.maxAttempts, c.ttft, c.attemptTimeout = attempts, ttft, attempt
	if attempts != r.maxAttempts {
		c.ceil = ceilings(r.base, r.max, attempts-1)
	}
	return &c
}

// clampCount is the attempts a request asking for want gets on a route
// whose own are own within [lo, hi] (see clamp); want <= 0 keeps own.
func clampCount(want, own, lo, hi int) int {
	if want <= 0 {
		return own
	}
	return int(clamp(int64(want), int64(own), int64(lo), int64(hi)))
}

// clampTimeout is the timeout a request asking for want gets on a route
// whose own is own within rg (zero: none, longer than any); want <= 0
// keeps own.
func clampTimeout(want, own time.Duration, rg Range) time.Duration {
	if want <= 0 {
		return own
	}
	none := func(d time.Duration) int64 {
		if d == 0 {
			return math.MaxInt64
		}
		return int64(d)
	}
	v := clamp(int64(want), none(own), int64(rg.Min), int64(rg.Max))
	if v == math.MaxInt64 {
		return 0
	}
	return time.Duration(v)
}

// clamp is want within [lo, hi], each bound own when zero.
func clamp(want, own, lo, hi int64) int64 {
	if lo == 0 {
		lo = own
	}
	if hi == 0 {
		hi = own
	}
	return min(max(want, lo), max(hi, lo))
}
