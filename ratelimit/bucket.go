package ratelimit

import (
	"math"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// bucket is a token bucket: capacity burst, refill rate tokens per second,
// and a level that reservations lower and refunds raise. Each key has two: on
// LLM tokens, written here because golang.org/x/time/rate has no refunds, and
// on requests (cost 1, never refunded), where it admits exactly what a
// rate.Limiter with the same rate and burst admits (see fits, and the
// differential test) but shares the key's lock instead of taking its own (see
// the package documentation for the measurement).
//
// Every method takes the current time as an argument and reads no clock, as
// rate.Limiter's AllowN(t, n) does, so that the logic is tested without one.
// Times are readings of internal/mono's clock, monotonic, so that the hot
// path does integer arithmetic instead of time.Time's. A bucket is not safe for concurrent use; the key's entry
// guards it. It admits at most b + r·dt net of refunds over any interval dt
// (the proof is in the package documentation, The bound with refunds).
type bucket struct {
	level float64       // tokens available at last; may be < 0 after a surcharge
	last  time.Duration // the time level was computed at
	rate  float64       // refill, tokens per second; > 0
	burst float64       // capacity b, tokens; > 0

	// A provider's tighter view (see adopt): until provUntil the bucket refills
	// at provRate instead of rate, when provRate < rate. The view holds at t
	// when provUntil > t; noView means none.
	provRate  float64
	provUntil time.Duration
}

// noView is bucket.provUntil without a provider view: earlier than any
// reading of the clock (mono's readings are negative in a synctest bubble).
const noView time.Duration = math.MinInt64

func newBucket(rate, burst float64, now time.Duration) bucket {
	return bucket{level: burst, last: now, rate: rate, burst: burst, provUntil: noView}
}

// at returns the level at now, after refill, and the time it refers to (now,
// or last when now is earlier), without changing b. The refill is
// min(burst, level + rate·dt), computed as golang.org/x/time/rate computes it,
// at the lower of the configured and the provider's rate until provUntil.
func (b *bucket) at(now time.Duration) (float64, time.Duration) {
	if now <= b.last {
		return b.level, b.last
	}
	if b.provUntil <= b.last {
		return min(b.burst, b.level+b.rate*(now-b.last).Seconds()), now
	}
	return b.atProv(now)
}

// atProv is at while a provider view holds at last, out of line so that at
// inlines.
func (b *bucket) atProv(now time.Duration) (float64, time.Duration) {
	level, last := b.level, b.last
	if b.provUntil > last {
		pr := min(b.provRate, b.rate)
		if now < b.provUntil {
			return min(b.burst, level+pr*(now-last).Seconds()), now
		}
		level = min(b.burst, level+pr*(b.provUntil-last).Seconds())
		last = b.provUntil
	}
	return min(b.burst, level+b.rate*(now-last).Seconds()), now
}

// set installs level at last (as computed by at) and forgets a provider view
// that has ended by then.
func (b *bucket) set(level float64, last time.Duration) {
	b.level, b.last = level, last
	if b.provUntil <= last {
		b.provUntil = noView
	}
}

// advance refills the bucket up to now. A now before last changes nothing.
func (b *bucket) advance(now time.Duration) { b.set(b.at(now)) }

// fits reports whether need tokens can be taken from level at last. It is
// golang.org/x/time/rate's rule, to the bit (the request bucket's
// differential test pins it): a call is admitted when the level covers it, or
// when the shortfall would be refilled in less than one nanosecond (rate's
// durationFromTokens truncates to zero). So a take that would succeed at the
// next nanosecond succeeds now, which also forgives float64 noise in the
// level (a refill computed in two steps may fall 1e-14 short of a whole
// token), and the bound above holds with dt lengthened by that nanosecond.
func (b *bucket) fits(level, need float64, last time.Duration) bool {
	short := need - level
	if short <= 0 {
		return true
	}
	r := b.rateAt(last)
	return r > 0 && short/r*float64(time.Second) < 1
}

// rateAt is the refill rate in force just after t: the lower of the
// configured and the provider's rate while a provider view holds.
func (b *bucket) rateAt(t time.Duration) float64 {
	if b.provUntil > t {
		return min(b.provRate, b.rate)
	}
	return b.rate
}

// refund credits n >= 0 tokens, never beyond burst. The credit is applied at
// the bucket's last update; since min(b, min(b, L+ρ)+r·dt) = min(b, L+ρ+r·dt),
// the resulting level is the same as crediting it at any later time, so
// completion needs no clock read.
func (b *bucket) refund(n float64) { b.level = min(b.burst, b.level+n) }

// charge debits n >= 0 tokens used beyond the reservation; the level may go
// negative, so later admissions wait to pay it back, but a charge takes it
// no lower than -floor (a level already lower stays): the caller passes one
// period's refill, the provider's whole quota per window, since a provider's
// window forgets usage after a period. So one call reporting absurd usage
// (math.MaxInt tokens, say) delays its key by about a period and a burst,
// not for centuries.
func (b *bucket) charge(n, floor float64) { b.level = min(b.level, max(b.level-n, -floor)) }

// waitFor returns how long the refill takes to add need > 0 tokens to the
// level at last (as computed by at), rounded up to the nanosecond.
func (b *bucket) waitFor(need float64, last time.Duration) time.Duration {
	var d float64 // seconds
	if b.provUntil > last && b.provRate < b.rate {
		seg := (b.provUntil - last).Seconds()
		if gained := b.provRate * seg; gained >= need {
			return seconds(need / b.provRate)
		} else {
			need -= gained
			d = seg
		}
	}
	return seconds(d + need/b.rate)
}

// full reports whether the bucket at now holds burst tokens and no provider
// view is pending: its state then equals a fresh bucket's. The zero
// bucket (no bucket) is full.
func (b *bucket) full(now time.Duration) bool {
	level, last := b.at(now)
	return level >= b.burst && b.provUntil <= last
}

// adopt takes in a provider's view: remaining tokens now, which refill to
// limit (0: unknown) by now+reset. The level drops to remaining when that is
// lower; until the reset, or for hold > 0 at most, the refill rate is the
// lower of the configured one and the provider's (limit-remaining)/reset.
// A provider with nothing used (remaining >= limit) says nothing of its
// rate, and is not read as a rate of zero.
// (The rate is the provider's, from the whole reset; hold only shortens the
// time it applies.) Neither raises any level or rate, so the bound above
// still holds.
func (b *bucket) adopt(now time.Duration, remaining, limit int, reset, hold time.Duration) {
	b.advance(now)
	b.level = min(b.level, float64(max(remaining, 0)))
	if reset <= 0 || limit <= 0 || remaining >= limit {
		return // no rate: with nothing used, (limit-remaining)/reset is 0
	}
	pr := float64(max(limit-remaining, 0)) / reset.Seconds()
	if pr >= b.rate {
		return
	}
	until := mono.Add(now, min(reset, hold))
	if pr < b.provRate || until > b.provUntil { // a view later than noView, always
		b.provRate = pr
		b.provUntil = until
	}
}

// setLimit changes rate and burst at now, keeping the level (capped at the new
// burst), and forgets any provider view: the operator's limits replace it
// (see Limiter.SetLimit). The refill up to now runs under the old view; the
// level it leaves refills at the new rate. Neither the bound's proof nor its
// statement changes: a SetLimit is a change of (r, b) at now.
func (b *bucket) setLimit(now time.Duration, rate, burst float64) {
	b.advance(now)
	b.rate, b.burst = rate, burst
	b.level = min(b.level, burst)
	b.provRate, b.provUntil = 0, noView
}

// install makes b a bucket of rate and burst at now (none when rate is
// 0): a new one full, one already there by setLimit.
func (b *bucket) install(now time.Duration, rate, burst float64) {
	switch {
	case rate == 0:
		*b = bucket{}
	case b.rate == 0:
		*b = newBucket(rate, burst, now)
	default:
		b.setLimit(now, rate, burst)
	}
}

// fill returns the level at now over the capacity: 1 for the zero bucket
// (none).
func (b *bucket) fill(now time.Duration) float64 {
	if b.burst == 0 {
		return 1
	}
	level, _ := b.at(now)
	return level / b.burst
}

// adoptQuota adopts the provider's view q (see adopt) when q says
// anything.
func (b *bucket) adoptQuota(now time.Duration, q portico.Quota, hold time.Duration) {
	if q.Known {
		b.adopt(now, q.Remaining, q.Limit, q.Reset, hold)
	}
}

// seconds converts s seconds to a Duration, rounding up to the nanosecond so
// that the wait suffices (up to float64 noise: 1e-3 ns is forgiven, so an
// exact 1ns is not reported as 2ns); +Inf and huge values saturate.
func seconds(s float64) time.Duration {
	ns := math.Ceil(s*1e9 - 1e-3)
	if ns >= math.MaxInt64 || math.IsNaN(ns) {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
