package stack

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/throttle"
)

// TestRecipeReordered: a route's Order rearranges the layers New built.
// With Recipe the throttle sits inside retry and counts each attempt of a
// call answered at its third (two 503s first): 3 requests, 1 accept. An
// Order that moves it outside retry counts the call once: 1 request, 1
// accept. The answer is the same.
func TestRecipeReordered(t *testing.T) {
	throttleOutsideRetry := func(l Layers) []portico.Middleware {
		return []portico.Middleware{l.Unserved, l.Hedge, l.Limiter, l.Breaker, l.Throttle,
			l.Retry, l.Attempt, l.Validate, l.NotServed}
	}
	for _, c := range []struct {
		name              string
		order             func(Layers) []portico.Middleware
		requests, accepts int
	}{
		{"Recipe", nil, 3, 1},
		{"throttle outside retry", throttleOutsideRetry, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				down := modeltest.Fail(modeltest.StatusError(503))
				f := modeltest.NewFake(down, down, modeltest.Answer("fine"))
				r := route("a", f)
				r.Throttle = &throttle.Config{}
				r.Order = c.order
				s, err := New(Config{Routes: []Route{r}})
				if err != nil {
					t.Fatal(err)
				}
				resp, err := s.Generate(context.Background(), hello)
				if err != nil || resp.Text != "fine" || f.Count() != 3 {
					t.Fatalf("Generate = %+v, %v after %d calls; want fine after 3", resp, err, f.Count())
				}
				if _, n, acc := s.Throttle("a").Probability(); n != c.requests || acc != c.accepts {
					t.Errorf("throttle counted %d requests, %d accepts; want %d, %d", n, acc, c.requests, c.accepts)
				}
			})
		})
	}
}

// TestOrderChecked: New fails when a route's Order leaves out or repeats
// a layer New built, the route's own middleware included; an Order that
// moves a layer keeps them all, and the route's middleware runs.
func TestOrderChecked(t *testing.T) {
	withoutMiddleware := func(l Layers) []portico.Middleware { // ExampleRecipe's Order before
		return []portico.Middleware{l.Unserved, l.Hedge, l.Limiter, l.Breaker, l.Throttle,
			l.Retry, l.Attempt, l.Validate, l.NotServed}
	}
	moved := func(l Layers) []portico.Middleware { // ExampleRecipe's Order
		breaker, throttle := l.Breaker, l.Throttle
		l.Breaker = func(m portico.Model) portico.Model { return portico.Chain(m, breaker, throttle) }
		l.Throttle = nil
		return Recipe(l)
	}
	twice := func(l Layers) []portico.Middleware { return append(Recipe(l), l.Retry) }
	for _, c := range []struct {
		name  string
		order func(Layers) []portico.Middleware
		err   string
	}{
		{"middleware left out", withoutMiddleware, `stack: route "a": layer Middleware[0] left out by Order`},
		{"retry twice", twice, `stack: route "a": layer Retry listed 2 times by Order`},
		{"throttle moved", moved, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ran := 0
				r := route("a", modeltest.NewFake(modeltest.Answer("fine")))
				r.Throttle = &throttle.Config{}
				r.Middleware = []portico.Middleware{func(next portico.Model) portico.Model {
					return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
						ran++
						return next.Generate(ctx, req)
					})
				}}
				r.Order = c.order
				s, err := New(Config{Routes: []Route{r}})
				if c.err != "" {
					if err == nil || err.Error() != c.err {
						t.Fatalf("New = %v, want %q", err, c.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if resp, err := s.Generate(context.Background(), hello); err != nil || resp.Text != "fine" || ran != 1 {
					t.Errorf("Generate = %+v, %v, the route's middleware ran %d times; want fine and 1", resp, err, ran)
				}
			})
		})
	}
}

// TestRecipeOrder: Recipe lists a route's layers in the documented
// order, outermost first, the route's own Middleware before them and its
// ModelMiddleware after.
func TestRecipeOrder(t *testing.T) {
	var got []string
	mark := func(name string) portico.Middleware {
		return func(next portico.Model) portico.Model {
			return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
				got = append(got, name)
				return next.Generate(ctx, req)
			})
		}
	}
	l := Layers{Middleware: []portico.Middleware{mark("middleware")}, Unserved: mark("unserved"), Hedge: mark("hedge"),
		Limiter: mark("limiter"), Breaker: mark("breaker"), Retry: mark("retry"), Attempt: mark("attempt"),
		Validate: mark("validate"), Throttle: mark("throttle"), NotServed: mark("not served"),
		ModelMiddleware: []portico.Middleware{mark("model middleware")}}
	if _, err := portico.Chain(modeltest.NewFake(), Recipe(l)...).Generate(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	want := []string{"middleware", "unserved", "hedge", "limiter", "breaker", "retry", "attempt", "validate", "throttle", "not served", "model middleware"}
	if len(got) != len(want) {
		t.Fatalf("Recipe's layers ran %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Recipe's layers ran %q, want %q", got, want)
		}
	}
}

// TestSkip: a Skip set leaves its layers out, and names them.
func TestSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			skip                     Skip
			name                     string
			breaker, retry, validate bool
		}{
			{0, "none", true, true, true},
			{SkipBreaker, "breaker", false, true, true},
			{SkipRetry | SkipValidate, "retry|validate", true, false, false},
			{SkipBreaker | SkipRetry | SkipValidate, "breaker|retry|validate", false, false, false},
		} {
			// An answer validate refuses (no text) tells whether validate
			// is there.
			r := route("a", modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{FinishReason: portico.FinishStop}}))
			r.Skip = c.skip
			s, err := New(Config{Routes: []Route{r}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Generate(context.Background(), hello)
			if got := c.skip.String(); got != c.name {
				t.Errorf("Skip(%d).String() = %q, want %q", c.skip, got, c.name)
			}
			if (s.Breaker("a") != nil) != c.breaker || (s.Retrier("a") != nil) != c.retry || (err != nil) != c.validate {
				t.Errorf("Skip %v: breaker %v, retrier %v, answer refused %v (%v); want %v, %v, %v",
					c.skip, s.Breaker("a") != nil, s.Retrier("a") != nil, err != nil, err, c.breaker, c.retry, c.validate)
			}
		}
	})
}

// TestGroupHedgeInOnePlace: the group's hedging is Config.Hedge; a
// Hedger in Config.Fallback.Hedge is refused at construction.
func TestGroupHedgeInOnePlace(t *testing.T) {
	h, err := hedge.New(hedge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Routes: []Route{route("a", modeltest.NewFake()), route("b", modeltest.NewFake())},
		Fallback: fallback.Config{Hedge: h}})
	if want := "stack: Config.Fallback.Hedge is set: configure the group's hedging in Config.Hedge"; err == nil || err.Error() != want {
		t.Errorf("New with Fallback.Hedge = %v, want %q", err, want)
	}
	if errors.Unwrap(err) != nil {
		t.Errorf("New's error wraps %v, want nothing", errors.Unwrap(err))
	}
}
