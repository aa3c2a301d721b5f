package trace

import (
	"context"
	"errors"
	"time"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names: the GenAI client conventions where they exist, portico.*
// for the routing rates (fallbacks, attempts, validation, cost) and the
// events of the policy layers.
const (
	MetricTokenUsage        = "gen_ai.client.token.usage"                   // histogram {token}, by gen_ai.token.type
	MetricOperationDuration = "gen_ai.client.operation.duration"            // histogram s
	MetricTimeToFirstChunk  = "gen_ai.client.operation.time_to_first_chunk" // histogram s, streaming calls only
	MetricRequests          = "portico.requests"                            // counter {request}, by portico.outcome, error.type, portico.route
	MetricFallbacks         = "portico.fallbacks"                           // counter {fallback}: fallback rate = fallbacks / requests
	MetricAttempts          = "portico.attempts"                            // histogram {attempt} per completed request
	MetricDeadlineExhausted = "portico.deadline_exhausted"                  // counter {request} ending in class deadline
	MetricValidationRejects = "portico.validation.rejections"               // counter {answer}
	MetricAmbiguous         = "portico.ambiguous"                           // counter {request} ending in class ambiguous
	MetricCost              = "portico.cost"                                // histogram, price unit, per accepted answer with a known cost
	MetricRouteDuration     = "portico.route.duration"                      // histogram s, by final portico.route and portico.outcome
	MetricRetries           = "portico.retries"                             // counter {retry}, by portico.retry.reason
	MetricBudgetExhausted   = "portico.retry.budget_exhausted"              // counter {event}
	MetricBreakerChanges    = "portico.breaker.transitions"                 // counter {transition}, by portico.route and portico.breaker.state
	MetricRateLimitWait     = "portico.ratelimit.wait"                      // histogram s, one point per wait
	MetricRateLimitRejects  = "portico.ratelimit.rejections"                // counter {rejection}, by portico.ratelimit.reason
	MetricSharedStore       = "portico.shared_store.degraded"               // counter {decision} made without the shared store, by portico.shared_store
	MetricCacheLookups      = "portico.cache.lookups"                       // counter {lookup} of a response cache, by portico.cache.result
)

// Bucket boundaries the GenAI conventions recommend.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	ttfcBuckets     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	attemptBuckets  = []float64{1, 2, 3, 4, 5, 6, 8, 10}
)

type instruments struct {
	tokens        metric.Int64Histogram
	duration      metric.Float64Histogram
	ttfc          metric.Float64Histogram
	requests      metric.Int64Counter
	fallbacks     metric.Int64Counter
	attempts      metric.Int64Histogram
	deadline      metric.Int64Counter
	validations   metric.Int64Counter
	ambiguous     metric.Int64Counter
	cost          metric.Float64Histogram
	routeDuration metric.Float64Histogram
	retries       metric.Int64Counter
	budget        metric.Int64Counter
	breaker       metric.Int64Counter
	rlWait        metric.Float64Histogram
	rlRejects     metric.Int64Counter
	shared        metric.Int64Counter
	cache         metric.Int64Counter
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var i instruments
	var errs [18]error
	i.tokens, errs[0] = m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	i.duration, errs[1] = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	i.ttfc, errs[2] = m.Float64Histogram(MetricTimeToFirstChunk, metric.WithUnit("s"),
		metric.WithDescription("Time to receive the first chunk of a streamed answer."), metric.WithExplicitBucketBoundaries(ttfcBuckets...))
	i.requests, errs[3] = m.Int64Counter(MetricRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Requests completed, by outcome and final route."))
	i.fallbacks, errs[4] = m.Int64Counter(MetricFallbacks, metric.WithUnit("{fallback}"),
		metric.WithDescription("Routes left for another one."))
	i.attempts, errs[5] = m.Int64Histogram(MetricAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made per completed request."), metric.WithExplicitBucketBoundaries(attemptBuckets...))
	i.deadline, errs[6] = m.Int64Counter(MetricDeadlineExhausted, metric.WithUnit("{request}"),
		metric.WithDescription("Requests that ran out of their time budget."))
	i.validations, errs[7] = m.Int64Counter(MetricValidationRejects, metric.WithUnit("{answer}"),
		metric.WithDescription("Answers the acceptance pipeline rejected."))
	i.ambiguous, errs[8] = m.Int64Counter(MetricAmbiguous, metric.WithUnit("{request}"),
		metric.WithDescription("Requests that ended with an ambiguous outcome (sent, result unknown)."))
	i.cost, errs[9] = m.Float64Histogram(MetricCost, metric.WithUnit("{price}"),
		metric.WithDescription("Cost per accepted answer, in the routes' price unit."))
	i.routeDuration, errs[10] = m.Float64Histogram(MetricRouteDuration, metric.WithUnit("s"),
		metric.WithDescription("Request latency by final route."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	i.retries, errs[11] = m.Int64Counter(MetricRetries, metric.WithUnit("{retry}"),
		metric.WithDescription("Retries scheduled."))
	i.budget, errs[12] = m.Int64Counter(MetricBudgetExhausted, metric.WithUnit("{event}"),
		metric.WithDescription("Retries refused because the retry budget was empty."))
	i.breaker, errs[13] = m.Int64Counter(MetricBreakerChanges, metric.WithUnit("{transition}"),
		metric.WithDescription("Circuit breaker state changes."))
	i.rlWait, errs[14] = m.Float64Histogram(MetricRateLimitWait, metric.WithUnit("s"),
		metric.WithDescription("Waits imposed by rate limiters."), metric.WithExplicitBucketBoundaries(ttfcBuckets...))
	i.rlRejects, errs[15] = m.Int64Counter(MetricRateLimitRejects, metric.WithUnit("{rejection}"),
		metric.WithDescription("Calls refused by rate limiters or in-flight caps."))
	i.shared, errs[16] = m.Int64Counter(MetricSharedStore, metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions a layer made without its shared store (fail open or closed)."))
	i.cache, errs[17] = m.Int64Counter(MetricCacheLookups, metric.WithUnit("{lookup}"),
		metric.WithDescription("Response cache lookups, by result (hit: answered without a call)."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return &i, nil
}

// enabled reports whether any measurement would be kept; the request duration
// instrument stands for all (a view could drop it alone, then nothing is
// recorded, which is documented).
func (i *instruments) enabled(ctx context.Context) bool { return i.duration.Enabled(ctx) }

// genAIAttrs returns the GenAI metric attributes of a request.
func (t *Tracer) genAIAttrs(l labels, resp *portico.Response, class portico.Class) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 8)
	a = append(a, KeyOperationName.String(t.op))
	a = l.append(a, true)
	if resp != nil && resp.Model != "" {
		a = append(a, KeyResponseModel.String(resp.Model))
	}
	if class != portico.OK {
		a = append(a, KeyErrorType.String(class.String()))
	}
	return a
}

func outcome(class portico.Class) string {
	if class == portico.OK {
		return "accepted"
	}
	return class.String()
}

// recordRequest records the per-request metrics.
func (i *instruments) recordRequest(ctx context.Context, t *Tracer, req *portico.Request, resp *portico.Response,
	class portico.Class, dur time.Duration, s summary) {
	base := t.genAIAttrs(s.labels, resp, class)
	set := metric.WithAttributeSet(attribute.NewSet(base...))
	i.duration.Record(ctx, dur.Seconds(), set)
	if s.ttft > 0 {
		i.ttfc.Record(ctx, s.ttft.Seconds(), set)
	}
	if resp != nil {
		// attribute.NewSet sorts its argument in place: rebuild the slice from
		// base before changing the token type, not just its last element.
		n := len(base)
		tok := append(base[:n:n], KeyTokenType.String("input"))
		i.tokens.Record(ctx, int64(resp.Usage.InputTokens), metric.WithAttributeSet(attribute.NewSet(tok...)))
		copy(tok, base)
		tok[n] = KeyTokenType.String("output")
		i.tokens.Record(ctx, int64(resp.Usage.OutputTokens), metric.WithAttributeSet(attribute.NewSet(tok...)))
	}
	route := ""
	if resp != nil {
		route = resp.Route
	}
	oc := outcome(class)
	routeSet := metric.WithAttributeSet(attribute.NewSet(KeyRoute.String(route), KeyOutcome.String(oc)))
	i.requests.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(KeyRoute.String(route), KeyOutcome.String(oc),
		KeyErrorType.String(class.String()))))
	i.routeDuration.Record(ctx, dur.Seconds(), routeSet)
	i.attempts.Record(ctx, int64(s.attempts), metric.WithAttributeSet(attribute.NewSet(KeyOutcome.String(oc))))
	switch class {
	case portico.Deadline:
		i.deadline.Add(ctx, 1)
	case portico.Ambiguous:
		i.ambiguous.Add(ctx, 1)
	}
	if c := t.cost(resp); class == portico.OK && c > 0 {
		i.cost.Record(ctx, c, routeSet)
	}
}

// recordEvent records the metrics of one layer event (see eventRules).
func (i *instruments) recordEvent(ctx context.Context, e portico.Event) {
	if r := ruleOf(e.Kind); r.record != nil {
		r.record(ctx, i, e)
	}
}
