package ratelimit

import (
	"errors"
	"log/slog"
	"time"
)

// SetLimit changes the limits of every key, existing and future, at once,
// for limits that providers announce at run time. Each bucket keeps the
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
func (l *Limiter) SetLimit(lim Limits) error {
	n, err := lim.norm(l.cfg.Concurrency != nil)
	if err != nil {
		return err
	}
	if err := defaultTooLarge(l.cfg.DefaultMaxTokens, &n); err != nil {
		return err
	}
	if l.cfg.Queue.Size > 0 && n.MaxInFlight == 0 && l.cfg.Concurrency == nil {
		return errors.New("ratelimit: Limits.MaxInFlight 0 with a Config.Queue.Size and no Config.Concurrency")
	}
	if l.shared != nil {
		return l.shared.setLimit(n)
	}
	l.limits.Store(&n)
	now := l.now()
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for _, e := range s.m {
			e.lock()
			e.setLimits(&n, now)
			e.replan()
			l.dispatch(e, now)
			e.mu.Unlock()
		}
		s.mu.Unlock()
	}
	return nil
}

func logModel(model string) slog.Attr   { return slog.String("model", model) }
func logWait(d time.Duration) slog.Attr { return slog.Duration("retry_after", d) }
func logWhich(which string) slog.Attr   { return slog.String("bucket", which) }
