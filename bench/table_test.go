package bench

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	fsfallback "github.com/failsafe-go/failsafe-go/fallback"
	fslimiter "github.com/failsafe-go/failsafe-go/ratelimiter"
	fsretry "github.com/failsafe-go/failsafe-go/retrypolicy"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/sony/gobreaker/v2"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/time/rate"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
	"github.com/portico-llm/portico/trace"
	"github.com/portico-llm/portico/validate"
)

// The settings every pipeline of the table shares, Portico's defaults where
// it has them: a client limit that never binds, a breaker over the last
// 100 calls opening at half of them failed for 30 s, 3 attempts with
// backoff from 500 ms to 8 s, a 2-minute end-to-end deadline.
const (
	attempts = 3
	baseWait = 500 * time.Millisecond
	maxWait  = 8 * time.Second
	openFor  = 30 * time.Second
	timeout  = stack.DefaultDeadline
)

// tableReq is a chat request from one client, priced by the limiters.
var tableReq = &portico.Request{
	Messages:        []portico.Message{portico.Text(portico.RoleUser, "What is the capital of France?")},
	MaxOutputTokens: 256,
	Identity:        portico.Identity{ClientKey: "alice"},
}

// answer is the model of every pipeline: it answers at once, with one
// Response for every call.
var answer portico.Model = portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
	return &tableResp, nil
})

// fresh answers at once with a Response of its own, as a provider adapter
// does: the parallel runs use it, since the layers stamp the answer they
// return (Route, Cost), and goroutines sharing one would race on it.
var fresh portico.Model = portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
	resp := tableResp
	return &resp, nil
})

var tableResp = portico.Response{Text: "Paris.", FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 12, OutputTokens: 3}}

func clientLimits() ratelimit.Limits {
	return ratelimit.Limits{Requests: 1e9, Tokens: 1e12, Period: time.Second}
}

// handBuilt is the chain a user composes by hand from the layers: a
// per-client limiter around a fallback group over two routes, each a
// breaker around a retry layer. No deadline, no validation, no tracing.
func handBuilt(tb testing.TB) portico.Model {
	client, err := ratelimit.New(ratelimit.Config{Limits: clientLimits(), Key: ratelimit.ByClient})
	if err != nil {
		tb.Fatal(err)
	}
	routes := make([]portico.Route, 2)
	for i, name := range []string{"primary", "secondary"} {
		brk := breaker.MustNew(breaker.Config{Name: name})
		r := retry.MustNew(retry.Config{Destination: name})
		routes[i] = portico.Route{Name: name, Model: brk.Wrap(r.Wrap(answer)), Health: brk}
	}
	return client.Wrap(fallback.MustNew(fallback.Config{Routes: routes}))
}

// preset is stack.New over two routes with client limits, validation (each
// route's default) and tracer tr, with the given Deadline.
func preset(tb testing.TB, deadline time.Duration, tr *trace.Tracer) portico.Model {
	return presetOver(tb, answer, deadline, tr)
}

// presetOver is preset with model m behind both routes.
func presetOver(tb testing.TB, m portico.Model, deadline time.Duration, tr *trace.Tracer) portico.Model {
	routes := []stack.Route{
		{Route: portico.Route{Name: "primary", Model: m}},
		{Route: portico.Route{Name: "secondary", Model: m}},
	}
	s, err := stack.New(stack.Config{Routes: routes, Client: &ratelimit.Config{Limits: clientLimits()}, Deadline: deadline, Tracer: tr})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func noopTracer(tb testing.TB) *trace.Tracer {
	tr, err := trace.New(trace.Config{TracerProvider: noop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

// sdkTracer records every span with the OpenTelemetry SDK (sampled, never
// exported), metrics to a no-op meter.
func sdkTracer(tb testing.TB) *trace.Tracer {
	tp := sdktrace.NewTracerProvider()
	tb.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr, err := trace.New(trace.Config{TracerProvider: tp, MeterProvider: metricnoop.NewMeterProvider(), Provider: "openai"})
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

// failsafeRoute is one route in failsafe-go: a circuit breaker around a
// retry policy, as Portico's routes.
func failsafeRoute() []failsafe.Policy[*portico.Response] {
	cb := fsbreaker.NewBuilder[*portico.Response]().WithFailureThresholdRatio(50, 100).WithDelay(openFor).Build()
	rp := fsretry.NewBuilder[*portico.Response]().WithMaxAttempts(attempts).WithBackoff(baseWait, maxWait).WithJitterFactor(0.5).Build()
	return []failsafe.Policy[*portico.Response]{cb, rp}
}

// failsafePipeline is failsafe-go v0.9.8's equivalent of the preset, outer
// policy first: a timeout (with withTimeout), a rate limiter that never
// binds, a fallback to the secondary route, then the primary's breaker and
// retry. The fallback calls the secondary through its own breaker and
// retry. Both routes call m.
func failsafePipeline(m portico.Model, withTimeout bool) func(ctx context.Context) (*portico.Response, error) {
	secondary := failsafe.With(failsafeRoute()...)
	fb := fsfallback.NewWithFunc(func(exec failsafe.Execution[*portico.Response]) (*portico.Response, error) {
		return secondary.WithContext(exec.Context()).Get(func() (*portico.Response, error) {
			return m.Generate(exec.Context(), tableReq)
		})
	})
	rl := fslimiter.NewBursty[*portico.Response](1<<30, time.Second)
	var policies []failsafe.Policy[*portico.Response]
	if withTimeout {
		policies = append(policies, fstimeout.New[*portico.Response](timeout))
	}
	policies = append(policies, rl, fb)
	policies = append(policies, failsafeRoute()...)
	ex := failsafe.With(policies...)
	call := func(exec failsafe.Execution[*portico.Response]) (*portico.Response, error) {
		return m.Generate(exec.Context(), tableReq)
	}
	return func(ctx context.Context) (*portico.Response, error) {
		return ex.WithContext(ctx).GetWithExecution(call)
	}
}

// BenchmarkTable is the table of bench/README.md: Portico's pipelines and
// their references on the happy path, the model answering at once. Each
// sub-benchmark reports ns/op, allocs/op and the locked thread's CPU time
// per call (cpu-ns/op), which the load of a shared machine inflates less;
// the parallel ones report ns/op of all goroutines together. Run it with
// bench/table.sh, which prints the ratios.
func BenchmarkTable(b *testing.B) {
	ctx := context.Background()
	pass := func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			return next.Generate(ctx, req)
		})
	}
	chain := portico.Chain(answer, pass, pass, pass, pass, pass, pass)
	fs4, fs5 := failsafePipeline(answer, false), failsafePipeline(answer, true)
	callerCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	models := []struct {
		name string
		call func() (*portico.Response, error)
	}{
		{"bare", func() (*portico.Response, error) { return answer.Generate(ctx, tableReq) }},
		{"chain6", func() (*portico.Response, error) { return chain.Generate(ctx, tableReq) }},
		{"handbuilt", generate(handBuilt(b), ctx)},
		{"preset/nodeadline", generate(preset(b, -1, noopTracer(b)), ctx)},
		{"preset/deadline", generate(preset(b, 0, noopTracer(b)), ctx)},
		{"preset/callerdeadline", generate(preset(b, -1, noopTracer(b)), callerCtx)},
		{"preset/otelsdk", generate(preset(b, 0, sdkTracer(b)), ctx)},
		{"failsafe/4policies", func() (*portico.Response, error) { return fs4(ctx) }},
		{"failsafe/5policies", func() (*portico.Response, error) { return fs5(ctx) }},
	}
	for _, m := range models {
		b.Run(m.name, func(b *testing.B) {
			if resp, err := m.call(); err != nil || resp.Text != tableResp.Text {
				b.Fatalf("call = %v, %v; want the answer", resp, err)
			}
			serial(b, func() {
				if _, err := m.call(); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	// In parallel, over a model that answers each call with a Response of
	// its own; serial/fresh is the preset over it on one goroutine, the
	// reference of the parallel preset.
	presetFresh := generate(presetOver(b, fresh, 0, noopTracer(b)), ctx)
	fs5Fresh := failsafePipeline(fresh, true)
	for _, p := range []struct {
		name string
		call func() (*portico.Response, error)
	}{
		{"preset/deadline/fresh", presetFresh},
		{"preset/deadline/parallel", presetFresh},
		{"failsafe/5policies/parallel", func() (*portico.Response, error) { return fs5Fresh(ctx) }},
	} {
		b.Run(p.name, func(b *testing.B) {
			if !strings.HasSuffix(p.name, "/parallel") {
				serial(b, func() { p.call() })
				return
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.call(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}

	// The single layers and their references.
	br := breaker.MustNew(breaker.Config{})
	guarded := br.Wrap(answer)
	b.Run("breaker", func(b *testing.B) { serial(b, func() { guarded.Generate(ctx, tableReq) }) })
	cb := gobreaker.NewCircuitBreaker[*portico.Response](gobreaker.Settings{Name: "bench"})
	b.Run("gobreaker", func(b *testing.B) {
		serial(b, func() {
			cb.Execute(func() (*portico.Response, error) { return answer.Generate(ctx, tableReq) })
		})
	})
	client, err := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Requests: 1e9, Period: time.Second}, Key: ratelimit.ByClient})
	if err != nil {
		b.Fatal(err)
	}
	limited := client.Wrap(answer)
	b.Run("ratelimit", func(b *testing.B) { serial(b, func() { limited.Generate(ctx, tableReq) }) })
	lim := rate.NewLimiter(1e9, 1e9)
	b.Run("rate/Allow", func(b *testing.B) {
		serial(b, func() {
			if lim.Allow() {
				answer.Generate(ctx, tableReq)
			}
		})
	})
	v := validate.MustNew(validate.Config{})
	sreq, sresp := schemaCall()
	b.Run("validate/Check", func(b *testing.B) {
		serial(b, func() {
			if err := v.Check(sreq, sresp); err != nil {
				b.Fatal(err)
			}
		})
	})
	raw := jsonschemaValidate(b)
	b.Run("jsonschema/decode+validate", func(b *testing.B) { serial(b, raw) })
}

func generate(m portico.Model, ctx context.Context) func() (*portico.Response, error) {
	return func() (*portico.Response, error) { return m.Generate(ctx, tableReq) }
}

// serial runs f b.N times on one locked thread and reports allocs/op and
// cpu-ns/op beside ns/op.
func serial(b *testing.B, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f() // warm: the first call of a layer may build caches (validate's schema)
	b.ReportAllocs()
	t0 := threadCPU()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(threadCPU()-t0)/float64(b.N), "cpu-ns/op")
}

// invoiceSchema has five properties; invoiceAnswer, about 300 bytes,
// conforms to it.
const (
	invoiceSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["id", "customer", "total", "currency", "items"],
  "properties": {
    "id": {"type": "string", "pattern": "^INV-[0-9]+$"},
    "customer": {"type": "string", "minLength": 1},
    "total": {"type": "number", "minimum": 0},
    "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "CHF"]},
    "items": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["sku", "qty", "price"],
        "properties": {
          "sku": {"type": "string"},
          "qty": {"type": "integer", "minimum": 1},
          "price": {"type": "number", "minimum": 0}
        }
      }
    }
  }
}`
	invoiceAnswer = `{"id":"INV-20260042","customer":"Officina Meccanica Rossi S.r.l., Via Roma 12, Torino","total":1234.56,"currency":"EUR","items":[{"sku":"BRK-001","qty":4,"price":120.5},{"sku":"FLT-220","qty":2,"price":35.25},{"sku":"OIL-5W30","qty":10,"price":56.3},{"sku":"LAB-HR","qty":3,"price":54.02}]}`
)

func schemaCall() (*portico.Request, *portico.Response) {
	req := &portico.Request{Schema: &portico.Schema{Name: "invoice", JSON: []byte(invoiceSchema)}}
	return req, &portico.Response{Text: invoiceAnswer, FinishReason: portico.FinishStop, Model: "m"}
}

// jsonschemaValidate returns santhosh-tekuri/jsonschema's own decode and
// validate of invoiceAnswer against invoiceSchema, compiled once: what
// validate.Check does besides its own checks.
func jsonschemaValidate(tb testing.TB) func() {
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(invoiceSchema))
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.AddResource("invoice.json", doc); err != nil {
		tb.Fatal(err)
	}
	s := c.MustCompile("invoice.json")
	return func() {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(invoiceAnswer))
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.Validate(v); err != nil {
			tb.Fatal(err)
		}
	}
}
