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
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	ints := func(name, unit, desc string, buckets []float64) metric.Int64Histogram {
		h, err := m.Int64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	floats := func(name, unit, desc string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	i := &instruments{
		tokens:        ints(MetricTokenUsage, "{token}", "Number of input and output tokens used.", tokenBuckets),
		duration:      floats(MetricOperationDuration, "s", "GenAI operation duration.", durationBuckets),
		ttfc:          floats(MetricTimeToFirstChunk, "s", "Time to receive the first chunk of a streamed answer.", ttfcBuckets),
		requests:      counter(MetricRequests, "{request}", "Requests completed, by outcome and final route."),
		fallbacks:     counter(MetricFallbacks, "{fallback}", "Routes left for another one."),
		attempts:      ints(MetricAttempts, "{attempt}", "Attempts made per completed request.", attemptBuckets),
		deadline:      counter(MetricDeadlineExhausted, "{request}", "Requests that ran out of their time budget."),
		validations:   counter(MetricValidationRejects, "{answer}", "Answers the acceptance pipeline rejected."),
		ambiguous:     counter(MetricAmbiguous, "{request}", "Requests that ended with an ambiguous outcome (sent, result unknown)."),
		cost:          floats(MetricCost, "{price}", "Cost per accepted answer, in the routes' price unit.", nil),
		routeDuration: floats(MetricRouteDuration, "s", "Request latency by final route.", durationBuckets),
		retries:       counter(MetricRetries, "{retry}", "Retries scheduled."),
		budget:        counter(MetricBudgetExhausted, "{event}", "Retries refused because the retry budget was empty."),
		breaker:       counter(MetricBreakerChanges, "{transition}", "Circuit breaker state changes."),
		rlWait:        floats(MetricRateLimitWait, "s", "Waits imposed by rate limiters.", ttfcBuckets),
		rlRejects:     counter(MetricRateLimitRejects, "{rejection}", "Calls refused by rate limiters or in-flight caps."),
		shared:        counter(MetricSharedStore, "{decision}", "Decisions a layer made without its shared store (fail open or closed)."),
		cache:         counter(MetricCacheLookups, "{lookup}", "Response cache lookups, by result (hit: answered without a call)."),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return i, nil
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
		i.recordTokens(ctx, base, &resp.Usage)
	}
	route, oc := routeOf(resp), outcome(class)
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

// recordTokens records u's input and output tokens under the attributes
// base.
func (i *instruments) recordTokens(ctx context.Context, base []attribute.KeyValue, u *portico.Usage) {
	// attribute.NewSet sorts its argument in place: rebuild the slice from
	// base before changing the token type, not just its last element.
	n := len(base)
	tok := append(base[:n:n], KeyTokenType.String("input"))
	i.tokens.Record(ctx, int64(u.InputTokens), metric.WithAttributeSet(attribute.NewSet(tok...)))
	copy(tok, base)
	tok[n] = KeyTokenType.String("output")
	i.tokens.Record(ctx, int64(u.OutputTokens), metric.WithAttributeSet(attribute.NewSet(tok...)))
}

// recordEvent records the metrics of one layer event (see eventRules).
func (i *instruments) recordEvent(ctx context.Context, e portico.Event) {
	if r := ruleOf(e.Kind); r.record != nil {
		r.record(ctx, i, e)
	}
}
