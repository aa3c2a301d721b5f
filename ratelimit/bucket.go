package ratelimit

import (
	"math"
	"time"
)

// bucket is the token bucket on LLM tokens: capacity burst, refill rate tokens
// per second, and a level that reservations lower and refunds raise. It is
// written here, not taken from golang.org/x/time/rate, because it needs refunds.
//
// Every method takes the current time as an argument and reads no clock, as
// rate.Limiter's AllowN(t, n) does, so that the logic is tested without one.
// A bucket is not safe for concurrent use; the key's entry guards it.
//
// # The bound, with refunds
//
// Let the events on the bucket be processed in time order t_1 <= t_2 <= ...
// (a time earlier than the last event is treated as the last event). Each is
// an admission of cost k (allowed only when level >= k, and k <= b), a refund
// of ρ >= 0, a surcharge s >= 0 (usage beyond the reservation, charged after
// the fact) or a provider adjustment (the level lowered to what the provider
// says remains). Write U_m for the level just before event m, after refill:
//
//	U_m = min(b, L_{m-1} + r*(t_m - t_{m-1}))  <=  L_{m-1} + r*(t_m - t_{m-1})
//
// and L_m for the level just after it: L_m = U_m - k (admission),
// L_m = min(b, U_m + ρ) (refund; the credit actually applied, ρ' = L_m - U_m,
// is at most ρ), L_m = U_m - s (surcharge) or L_m <= U_m (adjustment). So every
// event moves the level by U_m - L_m, which is k, -ρ', s, or >= 0. Summing over
// the events i..j of any interval [t_s, t_e] and telescoping:
//
//	Σ (U_m - L_m) = U_i - L_j + Σ_{m=i+1..j} (U_m - L_{m-1})
//	              <= b - L_j + r*(t_j - t_i).
//
// Take j to be the last admission in the interval: then L_j >= 0 (admission
// requires level >= k), and every surcharge and adjustment term is >= 0, so
//
//	Σ admitted k - Σ refunded ρ  <=  Σ k - Σ ρ'  <=  b + r*(t_j - t_i)  <=  b + r*dt,
//
// and events after j in the interval are refunds or surcharges, which only
// lower the net admitted cost. A refund never lifts the level above b, which is
// why the bound holds on net withdrawals: the cap at b forgets any refund that
// would carry a future burst beyond b. Room left for waiters in line (take's
// ahead) only makes admission stricter, and a SetLimit that changes b leaves
// the bound holding with the largest b in force during the interval. The
// property test and the fuzz test check the bound over every interval of
// random runs.
type bucket struct {
	level float64   // tokens available at last; may be < 0 after a surcharge
	last  time.Time // the time level was computed at
	rate  float64   // refill, tokens per second; > 0
	burst float64   // capacity b, tokens; > 0

	// A provider's tighter view (see adopt): until provUntil the bucket refills
	// at provRate instead of rate, when provRate < rate.
	provRate  float64
	provUntil time.Time
}

// tokenEps, times the burst, forgives float64 noise in the level (a refill
// computed in two steps may fall 1e-14 short of a whole token): far below one
// token and below one nanosecond's refill at any sane rate, so admissions are
// exact to the nanosecond and the bound moves by at most b*1e-12 per admission.
const tokenEps = 1e-12

func newBucket(rate, burst float64, now time.Time) bucket {
	return bucket{level: burst, last: now, rate: rate, burst: burst}
}

// advance refills the bucket up to now. A now before last changes nothing.
func (b *bucket) advance(now time.Time) {
	if !now.After(b.last) {
		return
	}
	if !b.provUntil.IsZero() {
		if now.Before(b.provUntil) {
			b.level = min(b.burst, b.level+b.provRate*now.Sub(b.last).Seconds())
			b.last = now
			return
		}
		if b.provUntil.After(b.last) {
			b.level = min(b.burst, b.level+b.provRate*b.provUntil.Sub(b.last).Seconds())
			b.last = b.provUntil
		}
		b.provUntil = time.Time{}
	}
	b.level = min(b.burst, b.level+b.rate*now.Sub(b.last).Seconds())
	b.last = now
}

// take admits cost n at now when the level covers n plus ahead, the tokens
// held for calls waiting in line before this one, and returns true; else it
// changes nothing and returns false with the wait after which the same take
// would succeed if nothing else happened meanwhile (the waiters ahead taking
// theirs first). n must be <= burst.
func (b *bucket) take(now time.Time, n, ahead float64) (bool, time.Duration) {
	b.advance(now)
	if b.level+tokenEps*b.burst >= n+ahead {
		b.level -= n
		return true, 0
	}
	return false, b.waitFor(n + ahead - b.level)
}

// undo gives back a take made at the same instant (the other bucket refused).
// Since the level was >= n before the take, it restores it exactly.
func (b *bucket) undo(n float64) { b.level += n }

// refund credits n >= 0 tokens, never beyond burst. The credit is applied at
// the bucket's last update; since min(b, min(b, L+ρ)+r·dt) = min(b, L+ρ+r·dt),
// the resulting level is the same as crediting it at any later time, so
// completion needs no clock read.
func (b *bucket) refund(n float64) { b.level = min(b.burst, b.level+n) }

// charge debits n >= 0 tokens used beyond the reservation; the level may go
// negative, so later admissions wait to pay it back.
func (b *bucket) charge(n float64) { b.level -= n }

// waitFor returns how long the refill takes to add need > 0 tokens from the
// current state (after advance), rounded up to the nanosecond.
func (b *bucket) waitFor(need float64) time.Duration {
	var d float64 // seconds
	if !b.provUntil.IsZero() && b.provRate < b.rate {
		seg := b.provUntil.Sub(b.last).Seconds()
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
// view is pending: its state then equals a fresh bucket's.
func (b *bucket) full(now time.Time) bool {
	b.advance(now)
	return b.level >= b.burst && b.provUntil.IsZero()
}

// adopt takes in a provider's view: remaining tokens now, which refill to
// limit (0: unknown) by now+reset. The level drops to remaining when that is
// lower; until the reset the refill rate is the lower of the configured one and
// the provider's (limit-remaining)/reset. Neither raises any level or rate, so
// the bound above still holds.
func (b *bucket) adopt(now time.Time, remaining, limit int, reset time.Duration) {
	b.advance(now)
	if r := float64(max(remaining, 0)); r < b.level {
		b.level = r
	}
	if reset <= 0 || limit <= 0 {
		return
	}
	pr := float64(max(limit-remaining, 0)) / reset.Seconds()
	if pr >= b.rate {
		return
	}
	until := now.Add(reset)
	if b.provUntil.IsZero() || pr < b.provRate || until.After(b.provUntil) {
		b.provRate = pr
		b.provUntil = until
	}
}

// setLimit changes rate and burst at now, keeping the level (capped at the new
// burst).
func (b *bucket) setLimit(now time.Time, rate, burst float64) {
	b.advance(now)
	b.rate, b.burst = rate, burst
	b.level = min(b.level, burst)
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
