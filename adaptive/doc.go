// Package adaptive is an adaptive limit on the calls in flight to one
// destination: a cap that follows the destination's capacity instead of a
// number fixed in advance, for package ratelimit's in-flight cap.
//
// A fixed cap is right for one capacity only. Set for a large one, it lets
// calls queue at the destination when the capacity falls (a provider
// degrading, a region losing replicas), and every queued call waits; set
// for a small one, it wastes the capacity when it is back. By Little's law
// the calls in flight that a destination serves without queueing are its
// throughput times its latency without load; an adaptive limit estimates
// that from what it sees, as TCP's congestion control does for a path.
//
// # Use
//
// A [Limit] built from a [Config] implements ratelimit.Concurrency: set it
// as the Concurrency of the route's ratelimit.Config, and the Limiter caps
// the calls in flight at [Limit.Limit], sheds (or queues, with
// ratelimit.Config.Queue) the others as it does for Limits.MaxInFlight, and
// reports every admitted call back to [Limit.Done]:
//
//	lim := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.Gradient2{}})
//	rl, err := ratelimit.New(ratelimit.Config{Concurrency: lim, Key: ratelimit.ByModel})
//	route := portico.Chain(provider, rl.Wrap, brk.Wrap, retrier.Wrap)
//
// The enforcement is the Limiter's (one in-flight count, its queue orders,
// its errors); this package only decides the number, so it is not a layer
// of its own. In package stack, Route.Limiter.Concurrency does the above.
//
// # Priorities
//
// The Limit decides how many calls; the Limiter decides which, by the
// requests' [portico.Priority]: its queue serves the highest priority
// first and, full, sheds its lowest-ranked call for a higher one, and
// ratelimit.Config.Reserve keeps slots of the limit free for higher
// priorities. So when the limit falls, the calls shed or held at its
// edge are the lowest priority's (TestPriorityAtTheLimit). failsafe-go's
// prioritized adaptive limiter reaches the same end by a rejection
// threshold: a Prioritizer calibrates, from the recent executions'
// priority levels, the level below which calls are rejected so that the
// rejection rate follows how full the queue is. The Limiter's order needs
// no calibration and sheds only when the queue is full; aging
// (ratelimit.Queue.Aging) keeps a low priority from waiting for ever.
//
// # The algorithms
//
// The three of Netflix's concurrency-limits library
// (github.com/Netflix/concurrency-limits, concurrency-limits-core,
// com.netflix.concurrency.limits.limit), with its defaults:
//
//   - [AIMD]: additive increase, multiplicative decrease on a drop (a 429, a
//     5xx, a timeout, or a window slower than AIMD.Timeout), as TCP's
//     congestion avoidance (Jacobson, "Congestion Avoidance and Control",
//     SIGCOMM 1988). Loss-based: without a Timeout it lets the destination
//     queue until it fails.
//   - [Vegas]: delay-based, after TCP Vegas (Brakmo and Peterson, 1995):
//     the queue at the destination is estimated as limit*(1 - noLoad/rtt)
//     and kept between 3 and 6 log10(limit) calls.
//   - [Gradient2]: delay-based on averages: the ratio of a long-term
//     latency baseline to the current latency, tolerating 1.5x, scales the
//     limit. The default.
//
// As in Netflix's WindowedLimit, samples are averaged over windows
// (Config.Window, 10 samples) and the algorithm runs once per window. A
// sample is the call's latency from its admission by the Limiter to its
// end, but for drops and the calls ignored (see Drops, Whose deadline and
// [Limit.Done]). A streamed call's latency is its
// whole stream, and calls of very different sizes make it noisy, which
// Gradient2's averages and tolerance absorb best; AIMD without a Timeout
// needs no latency at all.
//
// # Drops
//
// A call that ends RateLimited, Transient or Ambiguous (the destination
// refusing, failing, or too slow for a layer's timeout) is a drop: it
// counts towards its window and marks it, but its latency is left out of
// the window's mean, as Netflix's addDroppedSample does. A 503 that came
// back at once says nothing of the destination's latency, and would
// otherwise teach Vegas a no-load latency, or Gradient2 a baseline, that
// the healthy destination exceeds once it is back.
//
// # Whose deadline
//
// The limit is shared by every caller of the destination, so a drop must
// be the destination's doing, by the rule its breaker follows. The
// caller's own deadline ([portico.Deadline]) is ignored, as Netflix's gRPC
// client limiter ignores DEADLINE_EXCEEDED: a tenant whose deadlines are
// shorter than the destination's latency would otherwise bring the limit
// to its minimum for all. So is a layer's cut of a short share of it,
// which matches [portico.ErrDeadlineCut] (a fallback group's share below
// its FaultAfter). A hung destination still lowers the limit through the
// timeouts that are its fault: retry's Timeouts, a group's share past
// FaultAfter.
//
// The package's tests reproduce, on modeltest.CapacityServer, each
// algorithm following a capacity step from 200 to 50 calls per second and
// back within seconds, against a fixed cap that is either slow when the
// capacity falls or wasteful when it is back.
//
// # Cost
//
// [Limit.Limit] is one atomic load; [Limit.Done] one atomic add (a second
// one when the calls in flight rose), and once per window a lock and the
// algorithm's few floating-point operations. The Limiter reads the clock
// once more per call to measure the latency. Nothing allocates.
package adaptive
