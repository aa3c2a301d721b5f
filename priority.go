package portico

import (
	"context"
	"strconv"
)

// Priority is a request's criticality under overload, after Google's
// (Beyer et al., "Site Reliability Engineering", chapter 21 "Handling
// Overload", section "Criticality"), in three levels: a layer that must
// shed or delay calls sheds or delays the lowest priority first, and
// refuses a priority only while it refuses every lower one. The zero
// value is [Default]; a value beyond [Critical] or [Sheddable] counts as
// that level. It travels on the request ([Request].Priority), as
// [Identity] does, so that every layer reads it without a context lookup,
// a request's copies (retries, hedges, fallbacks) keep it, and the calls
// a handler makes for other purposes under the same context do not
// inherit it.
type Priority int8

// The priorities, lowest first.
const (
	// Sheddable is work whose partial unavailability is expected: batch
	// jobs, prefetches, speculative calls (the book's SHEDDABLE).
	Sheddable Priority = -1
	// Default is the zero value: ordinary traffic (the book's CRITICAL,
	// the default of production requests).
	Default Priority = 0
	// Critical is a call whose failure a user sees at once (the book's
	// CRITICAL_PLUS): shed last.
	Critical Priority = 1
)

// String returns "sheddable", "default" or "critical".
func (p Priority) String() string {
	switch p {
	case Sheddable:
		return "sheddable"
	case Default:
		return "default"
	case Critical:
		return "critical"
	}
	return "Priority(" + strconv.Itoa(int(p)) + ")"
}

// Level returns p as one of the three priorities: values beyond Critical
// or Sheddable count as that level.
func (p Priority) Level() Priority { return min(Critical, max(Sheddable, p)) }

// Slots returns how many of a cap's limit slots calls of priority p may
// fill when reserve slots are kept free for each priority above p: limit
// for Critical, limit-reserve for Default, limit-2*reserve for Sheddable,
// and never fewer than one when limit is positive (an idle cap admits a
// call of any priority). A negative reserve counts as zero. Package
// ratelimit's in-flight cap (Config.Reserve) and package inflight's
// (Config.Reserve) apply this one rule.
func (p Priority) Slots(limit, reserve int) int {
	if limit <= 0 {
		return limit
	}
	n := limit - int(Critical-p.Level())*max(reserve, 0)
	return max(n, 1)
}

type priorityKey struct{}

// WithPriority returns a copy of ctx that carries p, for the calls that do
// not go through a [Request] of their own, as [WithIdentity] carries the
// tenant: an SDK's requests through an adapter's guard (its Protect
// option) and the framework bridges make their requests' Priority from
// it. A Request's own Priority is never read from the context.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the Priority ctx carries ([WithPriority]), or
// Default.
func PriorityFrom(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}
