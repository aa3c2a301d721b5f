package ratelimit

import (
	"fmt"
	"github.com/portico-llm/portico/internal/mono"
	"log/slog"
)

// SetLimit changes the default limits (Config.Limits) of every key on
// them, existing and future, at once, for limits that providers announce
// at run time; the keys of Config.Tiers keep theirs (see
// [Limiter.SetTierLimit]). Each bucket keeps the
// tokens it holds, capped at its new capacity, and refills from there at the
// new rate; a raised MaxInFlight hands the new slots to queued calls, and
// calls waiting for the buckets compute their waits again at once (one the
// new capacity can never admit fails with [ErrOverCapacity]). The operator's
// word wins: SetLimit clears every provider view adopted from response
// headers (see Provider feedback in the package documentation), so a
// SetLimit with the current limits unsticks a key a provider slowed. It
// returns an error starting with "ratelimit:", and changes nothing, when lim
// is invalid (see [New]) or leaves Config.DefaultMaxTokens no room. It is
// safe for concurrent use.
func (l *Limiter) SetLimit(lim Limits) error { return l.set(0, lim) }

// SetTierLimit changes the limits of tier (one of Config.Tiers) for every
// key of that tier, existing and future, as [Limiter.SetLimit] does for
// the default limits: buckets keep their tokens capped at the new
// capacity, waiters plan again, provider views are cleared. A key is of
// the tier Config.Tier gave it when its entry was made. It returns an
// error starting with "ratelimit:", and changes nothing, for a tier not in
// Config.Tiers or an invalid lim. It is safe for concurrent use.
func (l *Limiter) SetTierLimit(tier string, lim Limits) error {
	ix, ok := l.tierIx[tier]
	if !ok {
		return fmt.Errorf("ratelimit: SetTierLimit of tier %q, not in Config.Tiers", tier)
	}
	if err := l.set(ix, lim); err != nil {
		return within(fmt.Sprintf("tier %q", tier), err)
	}
	return nil
}

// set installs lim as the limits of tier ix (0: the default) and of every
// entry of that tier.
func (l *Limiter) set(ix uint8, lim Limits) error {
	n, err := l.cfg.checkLimits(lim)
	if err != nil {
		return err
	}
	l.setMu.Lock()
	defer l.setMu.Unlock()
	if l.shared != nil {
		if err := l.shared.setLimit(ix, n); err != nil {
			return err
		}
	}
	l.limits[ix].Store(&n)
	l.reprice()
	if l.shared == nil { // else the buckets are in the store, the entries in slots and local
		l.apply(ix, &n)
	}
	return nil
}

// apply installs n in every entry of tier ix: its waiters plan again, and
// the slots a raised cap adds go to its queue.
func (l *Limiter) apply(ix uint8, n *Limits) {
	now := mono.Now()
	l.eachShard(func(s *shard) {
		for _, e := range s.m {
			if e.tier == ix {
				e.mu.Lock()
				e.setLimits(n, now)
				e.replan()
				l.dispatch(e, now)
				e.mu.Unlock()
			}
		}
	})
}

func logModel(model string) slog.Attr { return slog.String("model", model) }
