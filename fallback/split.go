package fallback

import "time"

// allowance returns how long a candidate may run when remaining time is left
// before the deadline, and whether it is worth starting at all. Pure.
//
// The usable time is remaining - reserve. A candidate that another could follow
// (last false) gets share of the remaining time, capped at the usable time; the
// last candidate gets all the usable time. When a non-last candidate's share is
// below minAttempt, it gets all the usable time instead, so that a tight
// deadline goes to the preferred route rather than to none. It returns false
// when the allowance is below minAttempt or not positive.
func allowance(remaining, reserve, minAttempt time.Duration, share float64, last bool) (time.Duration, bool) {
	usable := remaining - reserve
	d := usable
	if !last {
		if s := time.Duration(float64(remaining) * share); s < usable && s >= minAttempt {
			d = s
		}
	}
	if d <= 0 || d < minAttempt {
		return d, false
	}
	return d, true
}

// reserve is what a request that enters the group with left time before
// its deadline keeps back: Config.Reserve, or when that was zero,
// scaledReserve of left.
func (g *Group) reserve(left time.Duration) time.Duration {
	if g.scaled {
		return scaledReserve(left, g.cfg.Reserve)
	}
	return g.cfg.Reserve
}

// scaledReserve is the default reserve of a request that enters the group with
// remaining time left: min(most, remaining/reserveDivisor), and never negative.
// Pure.
func scaledReserve(remaining, most time.Duration) time.Duration {
	return max(0, min(most, remaining/reserveDivisor))
}
