package trace

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type recordingObserver struct {
	mu     sync.Mutex
	events []portico.Event
}

func (o *recordingObserver) Observe(_ context.Context, e portico.Event) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
}

// TestEventsToSpans checks the span event each kind makes, the span it lands
// on (the one current where it was reported), the attributes folded into the
// request span, and forwarding to an Observer installed outside.
func TestEventsToSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
		outer := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitReject, Reason: "in_flight", Delay: 2 * time.Second})
			portico.Observe(ctx, portico.Event{Kind: portico.EventBreakerState, Route: "a", Reason: "half_open"})
			portico.Observe(ctx, portico.Event{Kind: portico.EventBudgetExhausted, Route: "a", Class: portico.RateLimited})
			portico.Observe(ctx, portico.Event{Kind: portico.EventFirstChunk, Route: "a", Delay: 40 * time.Millisecond})
			portico.Observe(ctx, portico.Event{Kind: portico.EventRetry, Route: "a", Attempt: 1, Class: portico.RateLimited,
				Delay: 3 * time.Second, Reason: "retry_after"})
			portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitWait, Route: "gpt-4o", Delay: time.Second, Reason: "tokens"})
			portico.Observe(ctx, portico.Event{Kind: portico.EventHedge, Route: "b", Attempt: 1, Delay: 250 * time.Millisecond, Reason: "sent"})
			portico.Observe(ctx, portico.Event{Kind: portico.EventHedge, Route: "b", Reason: "budget"})
			portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Route: "gpt-4o", Reason: "retry:fail_closed", Class: portico.Transient})
			return tr.WrapAttempt(eventsThen(&portico.Error{Class: portico.InvalidResponse, Reason: "schema"},
				portico.Event{Kind: portico.EventValidation, Route: "a", Reason: "rejected", Class: portico.InvalidResponse},
			)).Generate(ctx, req)
		})
		obs := &recordingObserver{}
		ctx := portico.ContextWithObserver(context.Background(), obs)
		if _, err := tr.Wrap(outer).Generate(ctx, &portico.Request{Model: "m"}); portico.ClassOf(err) != portico.InvalidResponse {
			t.Fatalf("ClassOf(err) = %v, want invalid_response", portico.ClassOf(err))
		}
		spans := s.rec.Ended()
		if len(spans) != 2 {
			t.Fatalf("%d spans, want 2", len(spans))
		}
		attempt, root := spans[0], spans[1]
		rootEvents := root.Events()
		wantRoot := []struct {
			name  string
			attrs map[string]string
		}{
			{EventNameRateLimitReject, map[string]string{"portico.ratelimit.reason": "in_flight", "portico.retry_after": "2"}},
			{EventNameBreakerState, map[string]string{"portico.route": "a", "portico.breaker.state": "half_open"}},
			{EventNameBudgetExhausted, map[string]string{"portico.route": "a", "portico.retry.reason": "rate_limited"}},
			{EventNameLayerFirstChunk, map[string]string{"portico.route": "a", "portico.layer.time_to_first_chunk": "0.04"}},
			{EventNameRetry, map[string]string{"portico.route": "a", "portico.attempt.index": "1", "portico.retry.reason": "rate_limited",
				"portico.retry.delay": "3", "portico.retry.delay_source": "retry_after"}},
			{EventNameRateLimitWait, map[string]string{"portico.route": "gpt-4o", "portico.ratelimit.wait": "1", "portico.ratelimit.reason": "tokens"}},
			{EventNameHedge, map[string]string{"portico.route": "b", "portico.attempt.index": "1", "portico.hedge.delay": "0.25", "portico.hedge.reason": "sent"}},
			{EventNameHedge, map[string]string{"portico.route": "b", "portico.hedge.reason": "budget"}},
			{EventNameSharedStore, map[string]string{"portico.route": "gpt-4o", "portico.shared_store": "retry:fail_closed"}},
		}
		if len(rootEvents) != len(wantRoot) {
			t.Fatalf("root has %d events, want %d: %v", len(rootEvents), len(wantRoot), rootEvents)
		}
		for i, w := range wantRoot {
			if rootEvents[i].Name != w.name {
				t.Errorf("root event %d = %q, want %q", i, rootEvents[i].Name, w.name)
			}
			sameAttrs(t, w.name, rootEvents[i].Attributes, w.attrs)
		}
		ae := attempt.Events()
		if len(ae) != 1 || ae[0].Name != EventNameValidationReject {
			t.Fatalf("attempt events = %v, want one %s", ae, EventNameValidationReject)
		}
		sameAttrs(t, "validation event", ae[0].Attributes, map[string]string{"portico.route": "a",
			"portico.validation.result": "rejected", "error.type": "invalid_response"})
		got := attrs(root.Attributes())
		for k, v := range map[string]string{"portico.breaker.state": "half_open", "portico.retry.budget_exhausted": "true",
			"portico.validation.result": "rejected", "error.type": "invalid_response", "portico.attempts": "1",
			"portico.retry.count": "1", "portico.retry.delay": "3", "portico.ratelimit.wait": "1"} {
			if got[k] != v {
				t.Errorf("root attribute %s = %q, want %q", k, got[k], v)
			}
		}
		if len(obs.events) != 10 {
			t.Errorf("outer observer got %d events, want all 10 forwarded", len(obs.events))
		}
	})
}

// TestPanicEndsSpans checks that a panic below both layers ends both spans
// with an error status and still reaches the caller.
func TestPanicEndsSpans(t *testing.T) {
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	m := tr.Wrap(tr.WrapAttempt(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		panic("boom")
	})))
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recover() = %v, want boom", r)
			}
		}()
		_, _ = m.Generate(context.Background(), &portico.Request{Model: "m"})
	}()
	spans := s.rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2", len(spans))
	}
	for _, sp := range spans {
		if sp.Status().Code != codes.Error {
			t.Errorf("span %s status = %v, want Error", sp.Name(), sp.Status())
		}
	}
}

// TestNestedRequestLayers checks that three request layers, one inside the
// other, do not repeat span events or metrics: the innermost records the
// event, the outer ones only fold it into their attributes, and the caller's
// own Observer receives it once.
func TestNestedRequestLayers(t *testing.T) {
	s := newSDK(t)
	top := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	outer := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	inner := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	obs := &recordingObserver{}
	ctx := portico.ContextWithObserver(context.Background(), obs)
	m := top.Wrap(outer.Wrap(inner.Wrap(eventsThen(nil, portico.Event{Kind: portico.EventRetry, Attempt: 1, Class: portico.Transient}))))
	_, _ = m.Generate(ctx, &portico.Request{Model: "m"})
	spans := s.rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for i, want := range []int{1, 0, 0} { // inner, outer, top
		if got := len(spans[i].Events()); got != want {
			t.Errorf("span %d (inner first): %d events, want %d", i, got, want)
		}
	}
	for _, sp := range spans {
		if got := attrs(sp.Attributes())["portico.retry.count"]; got != "1" {
			t.Errorf("%v portico.retry.count = %q, want 1", sp.SpanContext().SpanID(), got)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if p := onePoint(t, rm, MetricRetries, map[string]string{"portico.retry.reason": "transient"}); p.value != 1 {
		t.Errorf("retries counted %v times, want 1", p.value)
	}
	if len(obs.events) != 1 {
		t.Errorf("caller's observer got %d events, want 1", len(obs.events))
	}
}

// A continuation makes a span event naming the route asked to continue,
// the continuation's number and its form.
func TestContinueEventAttrs(t *testing.T) {
	name, attrs := eventAttrs(portico.Event{Kind: portico.EventContinue, Route: "b", Attempt: 1, Reason: "prefill"})
	got := map[string]string{}
	for _, a := range attrs {
		got[string(a.Key)] = a.Value.String()
	}
	if name != EventNameContinue || len(got) != 3 || got["portico.route"] != "b" || got[string(KeyAttemptIndex)] != "1" || got["portico.continue.form"] != "prefill" {
		t.Errorf("eventAttrs = %q, %v; want %s with route b, attempt 1, form prefill", name, got, EventNameContinue)
	}
}
