package breaker

import (
	"slices"
	"strconv"

	"github.com/portico-llm/portico"
)

// Counts are what a closed breaker's window holds when a [TripRule] is asked:
// the counted calls (route faults and successes, not ignored errors) of the
// current closed period still in the window, of which failed and slow, the
// failures in a row that end with the call just counted, and its class.
type Counts struct {
	// Calls is the counted calls in the window.
	Calls int
	// Failures is the calls that failed with a route fault.
	Failures int
	// Slow is the calls that took at least Config.SlowCall, failed or not.
	Slow int
	// ConsecutiveFailures is the run of failures ending with the last call,
	// across the window's edge, unanswered failures
	// ([portico.IsUnanswered]) included; a success (slow or not) ends it.
	ConsecutiveFailures int
	// Class is the class of the call just counted: its failure's, or
	// [portico.OK] for a slow success.
	Class portico.Class
}

// A TripRule decides whether a closed breaker trips: it returns a short,
// content-free reason ("failure rate") to trip, "" to stay closed. It is the
// breaker's one trip policy (sony/gobreaker's ReadyToTrip, with a reason the
// breaker reports in [Transition].Reason and in logs); the rules below are
// the usual ones and [AnyOf] combines them. It must be fast and pure.
type TripRule func(Counts) string

// DefaultTrip is the rule of the zero Config: an [portico.Unusable]
// failure at once, 5 consecutive failures, or a failure rate of 50% once
// 20 calls are in the window, or, when slow calls are detected, a slow-call
// rate of 100% once 20 calls are in it (the defaults of resilience4j's
// CircuitBreaker, with gobreaker's consecutive failures). Unusable trips at
// once because it does not heal in seconds: a revoked key, a deleted
// deployment, an exhausted quota fail every call until someone acts, so
// each call until a count is reached is a round trip lost.
func DefaultTrip(c Counts) string { return defaultTrip(c) }

var defaultTrip = AnyOf(OnClass(portico.Unusable), ConsecutiveFailures(5), FailureRate(0.5, 20), SlowCallRate(1, 20))

// OnClass trips at once on a counted failure of one of classes, whatever
// the window holds; the reason is the class's name ("unusable").
func OnClass(classes ...portico.Class) TripRule {
	classes = append([]portico.Class(nil), classes...)
	return func(c Counts) string {
		if slices.Contains(classes, c.Class) {
			return c.Class.String()
		}
		return ""
	}
}

// ConsecutiveFailures trips after n failures in a row, whatever the window
// holds; the reason is "consecutive failures". It panics if n < 1.
func ConsecutiveFailures(n int) TripRule {
	if n < 1 {
		panic("breaker: ConsecutiveFailures(" + strconv.Itoa(n) + "): n must be at least 1")
	}
	return func(c Counts) string {
		if c.ConsecutiveFailures >= n {
			return "consecutive failures"
		}
		return ""
	}
}

// FailureRate trips when the window holds at least minCalls calls (and at
// least one) and the fraction that failed is at or above rate, in (0, 1]
// (resilience4j's failureRateThreshold and minimumNumberOfCalls); the reason
// is "failure rate". It panics if rate is outside (0, 1] or minCalls < 0.
func FailureRate(rate float64, minCalls int) TripRule {
	return rateRule("FailureRate", "failure rate", rate, minCalls, func(c *Counts) int { return c.Failures })
}

// SlowCallRate trips when the window holds at least minCalls calls (and at
// least one) and the fraction that were slow (Config.SlowCall) is at or
// above rate, in (0, 1] (resilience4j's slowCallRateThreshold); the reason is
// "slow call rate". Without Config.SlowCall no call is slow and it never
// trips. It panics if rate is outside (0, 1] or minCalls < 0.
func SlowCallRate(rate float64, minCalls int) TripRule {
	return rateRule("SlowCallRate", "slow call rate", rate, minCalls, func(c *Counts) int { return c.Slow })
}

// rateRule trips, with reason, when the window holds at least minCalls calls
// (and one) and the fraction of them that count is at or above rate. It
// panics as checkRate does.
func rateRule(name, reason string, rate float64, minCalls int, count func(*Counts) int) TripRule {
	checkRate(name, rate, minCalls)
	return func(c Counts) string {
		if c.Calls >= max(minCalls, 1) && float64(count(&c)) >= rate*float64(c.Calls) {
			return reason
		}
		return ""
	}
}

// checkRate panics, naming the rule, on a rate outside (0, 1] or a negative
// minCalls.
func checkRate(name string, rate float64, minCalls int) {
	args := name + "(" + strconv.FormatFloat(rate, 'g', -1, 64) + ", " + strconv.Itoa(minCalls) + ")"
	if !(rate > 0 && rate <= 1) {
		panic("breaker: " + args + ": rate must be in (0, 1]")
	}
	if minCalls < 0 {
		panic("breaker: " + args + ": minCalls must not be negative")
	}
}

// AnyOf trips when one of rules does, with the reason of the first that
// does, in order. Nil rules are skipped.
func AnyOf(rules ...TripRule) TripRule {
	rules = slices.DeleteFunc(slices.Clone(rules), func(r TripRule) bool { return r == nil })
	return func(c Counts) string {
		for _, r := range rules {
			if why := r(c); why != "" {
				return why
			}
		}
		return ""
	}
}
