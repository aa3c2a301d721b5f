package portico

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

type recorder struct{ events []Event }

func (r *recorder) Observe(_ context.Context, e Event) { r.events = append(r.events, e) }

func TestObserve(t *testing.T) {
	Observe(context.Background(), Event{Kind: EventRetry}) // no observer: nothing happens
	r := &recorder{}
	if ObserverFromContext(context.Background()) != nil {
		t.Errorf("ObserverFromContext(empty) != nil")
	}
	ctx := ContextWithObserver(context.Background(), r)
	if ObserverFromContext(ctx) != Observer(r) {
		t.Errorf("ObserverFromContext = %v, want the installed recorder", ObserverFromContext(ctx))
	}
	Observe(ctx, Event{Kind: EventRetry, Attempt: 1, Class: Transient})
	if len(r.events) != 1 || r.events[0].Attempt != 1 || r.events[0].Class != Transient {
		t.Errorf("events = %+v, want one retry of attempt 1", r.events)
	}
}

func TestAttemptContext(t *testing.T) {
	if got := AttemptFromContext(context.Background()); got != (Attempt{}) {
		t.Errorf("AttemptFromContext(empty) = %+v, want zero", got)
	}
	ctx := ContextWithAttempt(context.Background(), Attempt{Index: 2, ID: "a2"})
	if got := AttemptFromContext(ctx); got != (Attempt{Index: 2, ID: "a2"}) {
		t.Errorf("AttemptFromContext = %+v, want {2 a2}", got)
	}
}

func TestChainSkipsNilAndPanicsOnNilModel(t *testing.T) {
	var order []string
	mw := func(name string) Middleware {
		return func(next Model) Model {
			return ModelFunc(func(ctx context.Context, r *Request) (*Response, error) {
				order = append(order, name)
				return next.Generate(ctx, r)
			})
		}
	}
	base := ModelFunc(func(context.Context, *Request) (*Response, error) { return &Response{}, nil })
	Chain(base, mw("a"), nil, mw("b")).Generate(context.Background(), &Request{})
	if len(order) != 2 || order[0] != "a" || order[1] != "b" {
		t.Errorf("order = %v, want [a b]", order)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Chain(nil) did not panic")
		}
	}()
	Chain(nil)
}

func TestCloneIsIndependent(t *testing.T) {
	r := &Request{Model: "a", MaxOutputTokens: 5}
	c := r.Clone()
	c.Model, c.MaxOutputTokens = "b", 6
	if r.Model != "a" || r.MaxOutputTokens != 5 {
		t.Errorf("Clone changed the original: %+v", r)
	}
	if (*Request)(nil).Clone() != nil {
		t.Errorf("nil.Clone() != nil")
	}
	var nilHealth Route
	if !nilHealth.Available() {
		t.Errorf("Route without Health not available")
	}
}

func BenchmarkChain6(b *testing.B) {
	pass := func(next Model) Model {
		return ModelFunc(func(ctx context.Context, r *Request) (*Response, error) { return next.Generate(ctx, r) })
	}
	resp := &Response{Text: "ok"}
	base := ModelFunc(func(context.Context, *Request) (*Response, error) { return resp, nil })
	m := Chain(base, pass, pass, pass, pass, pass, pass)
	req := &Request{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Generate(ctx, req)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestProgressChains(t *testing.T) {
	Progress(context.Background(), Chunk{Text: "x"}) // nothing installed: nothing happens
	var outer, inner string
	ctx := ContextWithProgress(context.Background(), func(c Chunk) { outer += c.Text })
	ctx = ContextWithProgress(ctx, func(c Chunk) { inner += c.Text })
	Progress(ctx, Chunk{Text: "a"})
	Progress(ctx, Chunk{Text: "b"})
	if outer != "ab" || inner != "ab" {
		t.Errorf("progress seen by outer %q, inner %q; want the held chunks ab and ab", outer, inner)
	}
}
