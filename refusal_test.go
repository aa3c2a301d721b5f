package portico_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/route"
	"github.com/portico-llm/portico/throttle"
	"github.com/portico-llm/portico/validate"
)

// downStore is a ratelimit.Store that is never reachable.
type downStore struct{}

var errDown = errors.New("store down")

func (downStore) Take(context.Context, string, *ratelimit.Limits, int) (time.Duration, string, error) {
	return 0, "", errDown
}

func (downStore) Settle(context.Context, string, *ratelimit.Limits, int, *portico.RateLimit, time.Duration) error {
	return errDown
}

// hang is a Model that answers when its context ends, with its error.
var hang = portico.ModelFunc(func(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
	<-ctx.Done()
	return nil, portico.FromContext(ctx)
})

func hello(client string) *portico.Request {
	return &portico.Request{Model: "m", MaxOutputTokens: 16, Identity: portico.Identity{ClientKey: client},
		Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}}
}

// second returns the error of m's second call with req, the first having
// spent what m allows.
func second(m portico.Model, req *portico.Request) error {
	m.Generate(context.Background(), req)
	_, err := m.Generate(context.Background(), req)
	return err
}

// TestRefusals walks the errors every layer makes when it refuses a call,
// and those it makes for other failures: each says who refused
// (portico.RefuserOf: the tenant's limit, the route's, a breaker, a
// cooldown, the throttle, the retry budget, or nobody), is of its class,
// matches its package's sentinel, and says each thing once
// (modeltest.Repeated). The messages used to repeat themselves
// ("overloaded: ratelimit: overloaded", "breaker open: breaker: open",
// "rate_limited ...: ratelimit: rate limited"), and a tenant's limit and a
// route's refused alike.
func TestRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type refusal struct {
			name  string
			err   error
			class portico.Class
			by    portico.Refuser
			is    error // a sentinel it matches; nil for none
		}
		var rows []refusal
		add := func(name string, err error, class portico.Class, by portico.Refuser, is error) {
			rows = append(rows, refusal{name, err, class, by, is})
		}
		ok := modeltest.NewFake(modeltest.Answer("fine"))
		hour := ratelimit.Limits{Requests: 1, Period: time.Hour}
		limiter := func(cfg ratelimit.Config) portico.Model {
			l, err := ratelimit.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return l.Wrap(ok)
		}

		// ratelimit
		add("client limit", second(limiter(ratelimit.Config{Limits: hour}), hello("a")), portico.RateLimited, portico.ClientLimit, ratelimit.ErrLimited)
		add("route limit", second(limiter(ratelimit.Config{Limits: hour, RefusedBy: portico.RouteLimit}), hello("a")), portico.RateLimited, portico.RouteLimit, ratelimit.ErrLimited)
		busy, err := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: 1}, RefusedBy: portico.RouteLimit})
		if err != nil {
			t.Fatal(err)
		}
		held, release := context.WithCancel(t.Context())
		go busy.Wrap(hang).Generate(held, hello("a"))
		synctest.Wait()
		_, err = busy.Wrap(hang).Generate(t.Context(), hello("a"))
		add("in-flight cap", err, portico.Rejected, portico.RouteLimit, ratelimit.ErrOverloaded)
		release()
		_, err = limiter(ratelimit.Config{Limits: ratelimit.Limits{Tokens: 100}}).Generate(t.Context(), &portico.Request{MaxOutputTokens: 500})
		add("over capacity", err, portico.Incompatible, portico.ClientLimit, ratelimit.ErrOverCapacity)
		_, err = limiter(ratelimit.Config{Limits: ratelimit.Limits{Tokens: 100}, DefaultMaxTokens: ratelimit.RequireMaxTokens}).Generate(t.Context(), &portico.Request{})
		add("cannot be priced", err, portico.Permanent, portico.NotRefused, ratelimit.ErrBadRequest)
		_, err = limiter(ratelimit.Config{Limits: hour, Shared: ratelimit.Shared{Store: downStore{}}}).Generate(t.Context(), hello("a"))
		add("store unavailable", err, portico.Rejected, portico.ClientLimit, ratelimit.ErrStoreUnavailable)

		// breaker
		failing := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		cooldowns, _ := fallback.NewMemoryCooldowns(0)
		brk := breaker.MustNew(breaker.Config{Name: "r", Trip: breaker.ConsecutiveFailures(1), OpenFor: time.Second, Shared: cooldowns})
		add("breaker open", second(brk.Wrap(failing), hello("a")), portico.Rejected, portico.CircuitBreaker, breaker.ErrOpen)
		_, err = breaker.MustNew(breaker.Config{Name: "r", Shared: cooldowns}).Wrap(ok).Generate(t.Context(), hello("a"))
		add("breaker open elsewhere", err, portico.Rejected, portico.CircuitBreaker, breaker.ErrOpen)
		time.Sleep(time.Second)
		probe, endProbe := context.WithCancel(t.Context())
		go brk.Wrap(hang).Generate(probe, hello("a"))
		synctest.Wait()
		_, err = brk.Wrap(ok).Generate(t.Context(), hello("a"))
		add("breaker probes busy", err, portico.Rejected, portico.CircuitBreaker, breaker.ErrOpen)
		endProbe()

		// retry
		immediate := retry.Backoff{Schedule: retry.Immediate}
		_, err = retry.MustNew(retry.Config{Backoff: immediate}).Wrap(failing).Generate(t.Context(), hello("a"))
		add("attempts exhausted", err, portico.Transient, portico.NotRefused, retry.ErrAttemptsExhausted)
		budget := retry.MustNew(retry.Config{Backoff: immediate, MaxAttempts: 2, Budget: retry.Budget{NoRefill: true, Burst: 1}}).Wrap(failing)
		add("retry budget", second(budget, hello("a")), portico.Transient, portico.RetryBudget, retry.ErrBudgetExhausted)
		limited := modeltest.NewFake(modeltest.Fail(modeltest.RateLimitError(time.Hour)))
		_, err = retry.MustNew(retry.Config{}).Wrap(limited).Generate(t.Context(), hello("a"))
		add("retry-after too long", err, portico.RateLimited, portico.NotRefused, retry.ErrRetryAfterTooLong)
		short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		_, err = retry.MustNew(retry.Config{MinAttemptTime: time.Second}).Wrap(ok).Generate(short, hello("a"))
		cancel()
		add("no time left", err, portico.Deadline, portico.NotRefused, retry.ErrNoTimeLeft)
		_, err = retry.MustNew(retry.Config{MaxAttempts: 1, Timeouts: retry.Timeouts{Attempt: time.Second}}).Wrap(hang).Generate(t.Context(), hello("a"))
		add("attempt timeout", err, portico.Ambiguous, portico.NotRefused, retry.ErrAttemptTimeout)

		// throttle
		th := throttle.MustNew(throttle.Config{MaxRejection: 1, MinRequests: -1, Rand: func() float64 { return 0 }})
		for range 4 {
			th.Wrap(failing).Generate(t.Context(), hello("a"))
		}
		_, err = th.Wrap(failing).Generate(t.Context(), hello("a"))
		add("throttle", err, portico.Rejected, portico.Throttle, throttle.ErrThrottled)

		// fallback
		rt := func(name string, m portico.Model, h portico.Health) portico.Route {
			return portico.Route{Name: name, Model: m, Health: h}
		}
		cooling := fallback.MustNew(fallback.Config{Routes: []portico.Route{rt("a", limited, nil), rt("b", limited, nil)}})
		add("every route cooling down", second(cooling, hello("a")), portico.RateLimited, portico.Cooldown, fallback.ErrExhausted)
		open := breaker.MustNew(breaker.Config{Trip: breaker.ConsecutiveFailures(1)})
		open.Wrap(failing).Generate(t.Context(), hello("a"))
		_, err = fallback.MustNew(fallback.Config{Routes: []portico.Route{rt("a", ok, open), rt("b", ok, open)}}).Generate(t.Context(), hello("a"))
		add("every route unavailable", err, portico.Rejected, portico.CircuitBreaker, fallback.ErrExhausted)
		routeLimited := func() portico.Model {
			return limiter(ratelimit.Config{Limits: hour, Key: ratelimit.ByModel, RefusedBy: portico.RouteLimit})
		}
		accounts := fallback.MustNew(fallback.Config{Routes: []portico.Route{rt("a", routeLimited(), nil), rt("b", routeLimited(), nil)}})
		accounts.Generate(t.Context(), hello("a"))
		add("every route's limit", second(accounts, hello("b")), portico.RateLimited, portico.RouteLimit, fallback.ErrExhausted)
		wrong := &portico.Error{Class: portico.Permanent, Status: 400, Reason: "invalid parameter"}
		stopped := fallback.MustNew(fallback.Config{Routes: []portico.Route{rt("a", failing, nil), rt("b", modeltest.NewFake(modeltest.Fail(wrong)), nil)}})
		_, err = stopped.Generate(t.Context(), hello("a"))
		add("stopped", err, portico.Permanent, portico.NotRefused, nil)

		// route
		r, err := route.NewRouter(route.RouterConfig{Routes: []portico.Route{rt("a", ok, open)}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Generate(t.Context(), hello("a"))
		add("router, no route available", err, portico.Rejected, portico.CircuitBreaker, route.ErrNoRoute)
		bal, err := route.NewBalancer(route.BalancerConfig{Replicas: []portico.Route{rt("r0", ok, open)}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bal.Generate(t.Context(), hello("a"))
		add("balancer, no replica", err, portico.Rejected, portico.CircuitBreaker, route.ErrNoRoute)

		spent := func() portico.Model {
			return limiter(ratelimit.Config{Limits: hour, Key: ratelimit.ByModel, RefusedBy: portico.RouteLimit})
		}
		steps, err := route.NewCascade(route.CascadeConfig{Steps: []route.Step{{Route: rt("small", spent(), nil)}, {Route: rt("large", spent(), nil)}}})
		if err != nil {
			t.Fatal(err)
		}
		steps.Generate(t.Context(), hello("a"))
		add("cascade, every step's limit", second(steps, hello("a")), portico.RateLimited, portico.RouteLimit, route.ErrExhausted)

		// effect
		runner, err := effect.New(effect.Config{})
		if err != nil {
			t.Fatal(err)
		}
		key, _ := effect.NewKey("op", "charge", json.RawMessage(`{}`))
		_, err = runner.Do(t.Context(), key, func(context.Context) ([]byte, error) { return nil, modeltest.TimeoutError() })
		add("effect unknown", err, portico.Ambiguous, portico.NotRefused, effect.ErrUnknown)
		key2, _ := effect.NewKey("op", "refund", json.RawMessage(`{}`))
		runner.Do(t.Context(), key2, func(context.Context) ([]byte, error) { return nil, wrong })
		_, err = runner.Do(t.Context(), key2, func(context.Context) ([]byte, error) { return nil, nil })
		add("effect failed earlier", err, portico.Permanent, portico.NotRefused, effect.ErrFailed)
		_, err = runner.Do(t.Context(), "", func(context.Context) ([]byte, error) { return nil, nil })
		add("effect empty key", err, portico.Permanent, portico.NotRefused, effect.ErrKey)

		// validate
		schema := &portico.Schema{Name: "s", JSON: json.RawMessage(`{"type":"object","required":["a"]}`)}
		_, err = validate.MustNew(validate.Config{}).Wrap(modeltest.NewFake(modeltest.Answer(`{"b":1}`))).
			Generate(t.Context(), &portico.Request{Schema: schema, Messages: hello("a").Messages})
		add("validate", err, portico.InvalidResponse, portico.NotRefused, portico.ErrAnswerRefused)

		// the core's own
		dead, kill := context.WithCancel(t.Context())
		kill()
		add("gone", portico.Gone(dead), portico.Canceled, portico.NotRefused, context.Canceled)
		add("from context", portico.FromContext(dead), portico.Canceled, portico.NotRefused, context.Canceled)
		add("nil request", portico.ErrNilRequest, portico.Permanent, portico.NotRefused, nil)
		add("nil response", portico.ErrNilResponse, portico.InvalidResponse, portico.NotRefused, nil)
		malformed := &portico.Error{Class: portico.InvalidResponse, Status: 200, Model: "m", Reason: "malformed response",
			Err: portico.Join(portico.ErrMalformed, errors.New("openai: SDK error (text withheld)"))}
		add("malformed", malformed, portico.InvalidResponse, portico.NotRefused, portico.ErrMalformed)

		for _, r := range rows {
			if r.err == nil {
				t.Errorf("%s: no error", r.name)
				continue
			}
			t.Logf("%-26s %v", r.name, r.err)
			if got := portico.ClassOf(r.err); got != r.class {
				t.Errorf("%s: class %v, want %v (%v)", r.name, got, r.class, r.err)
			}
			if got := portico.RefuserOf(r.err); got != r.by {
				t.Errorf("%s: RefuserOf = %q, want %q (%v)", r.name, got, r.by, r.err)
			}
			if r.is != nil && !errors.Is(r.err, r.is) {
				t.Errorf("%s: %v does not match %v", r.name, r.err, r.is)
			}
			if part := modeltest.Repeated(r.err); part != "" {
				t.Errorf("%s: %q says %q twice", r.name, r.err, part)
			}
		}
	})
}
