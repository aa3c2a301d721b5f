package guard

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// A refusal is the request's: Permanent, NotSent, FaultRequest (no layer
// counts it against a route), naming the guardrail and the rule, never the
// prompt; the model is not called and later guardrails do not run.
func TestRefusalIsTheRequests(t *testing.T) {
	later := 0
	g := mustNew(t,
		Guardrail{Name: "size", Check: MaxBytes(1000)},
		Guardrail{Name: "deny", Check: Pattern("password", regexp.MustCompile(`(?i)password`))},
		Guardrail{Name: "later", Check: func(context.Context, *portico.Request) error { later++; return nil }},
	)
	calls := 0
	_, err := g.Wrap(counting(&calls)).Generate(context.Background(), ask(secret))
	if f, c := portico.FaultOf(err); f != portico.FaultRequest || c != portico.Permanent {
		t.Fatalf("FaultOf = %v, %v, want request, permanent (err %v)", f, c, err)
	}
	if !portico.NothingSent(err) || !errors.Is(err, ErrRefused) {
		t.Errorf("NothingSent = %v, errors.Is(ErrRefused) = %v, want true, true", portico.NothingSent(err), errors.Is(err, ErrRefused))
	}
	var rf *Refusal
	if !errors.As(err, &rf) || *rf != (Refusal{Guardrail: "deny", Rule: "password"}) {
		t.Errorf("Refusal = %+v, want {deny password}", rf)
	}
	const want = `portico: permanent: guard: refused by guardrail "deny" rule "password"`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if calls != 0 || later != 0 {
		t.Errorf("model calls, later checks = %d, %d, want 0, 0", calls, later)
	}
	_, err = g.Wrap(counting(&calls)).Generate(context.Background(), ask(strings.Repeat("x", 1001)))
	if !errors.As(err, &rf) || *rf != (Refusal{Guardrail: "size", Rule: "max_bytes"}) {
		t.Errorf("a 1001-byte request: Refusal = %+v, want {size max_bytes}", rf)
	}
	if _, err := g.Wrap(counting(&calls)).Generate(context.Background(), ask("hello")); err != nil || calls != 1 || later != 1 {
		t.Errorf("a clean request: err %v, model calls %d, later checks %d, want nil, 1, 1", err, calls, later)
	}
}

// Each failure of a checker (an error, a timeout of a remote
// call that does not answer), injected in turn, follows its guardrail's
// policy: fail open sends the request, fail closed refuses it, Rejected
// and NotSent (FaultLocal: neither the request's nor the route's), with a
// CheckError naming the guardrail and the kind, never the prompt nor the
// checker's own message.
func TestCheckerFaultsFollowPolicy(t *testing.T) {
	faults := []struct {
		kind  string
		check Check
	}{
		{"error", func(_ context.Context, r *portico.Request) error {
			return errors.New("moderation: 500 for " + r.Messages[0].Content[0].Text)
		}},
		{"timeout", func(ctx context.Context, _ *portico.Request) error { <-ctx.Done(); return ctx.Err() }},
	}
	for _, f := range faults {
		for _, open := range []bool{true, false} {
			name := f.kind + "/fail_closed"
			if open {
				name = f.kind + "/fail_open"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var ev events
					ctx := portico.ContextWithObserver(context.Background(), &ev)
					g := mustNew(t, Guardrail{Name: "moderation", Check: f.check, FailOpen: open, Timeout: 2 * time.Second})
					calls, start := 0, time.Now()
					resp, err := g.Wrap(counting(&calls)).Generate(ctx, ask(secret))
					took := time.Since(start)
					wantTook := time.Duration(0)
					if f.kind == "timeout" {
						wantTook = 2 * time.Second
					}
					if took != wantTook {
						t.Errorf("took %v, want %v", took, wantTook)
					}
					wantReason := "fail_closed:" + f.kind
					if open {
						wantReason = "fail_open:" + f.kind
						if err != nil || resp.Text != "ok" || calls != 1 {
							t.Fatalf("fail open: err %v, model calls %d, want an answer, 1 call", err, calls)
						}
					} else {
						if fl, c := portico.FaultOf(err); fl != portico.FaultLocal || c != portico.Rejected || !portico.NothingSent(err) {
							t.Fatalf("FaultOf = %v, %v, NothingSent %v, want local, rejected, true (err %v)", fl, c, portico.NothingSent(err), err)
						}
						var ce *CheckError
						if !errors.As(err, &ce) || ce.Guardrail != "moderation" || ce.Kind != f.kind || !errors.Is(err, ErrCheckFailed) {
							t.Errorf("CheckError = %+v, want moderation, %s", ce, f.kind)
						}
						want := `portico: rejected: guard: check of guardrail "moderation" failed: ` + f.kind
						if err.Error() != want {
							t.Errorf("error = %q, want %q", err, want)
						}
						if calls != 0 {
							t.Errorf("model calls = %d, want 0", calls)
						}
					}
					if len(ev) != 1 || ev[0].Kind != portico.EventGuard || ev[0].Route != "moderation" || ev[0].Reason != wantReason {
						t.Errorf("events = %+v, want one guard event of moderation, %s", ev, wantReason)
					}
				})
			})
		}
	}
}

// A checker's panic is a bug no policy hides: it passes through to the
// caller unchanged, fail open or closed, the model not called, as panics
// pass through every layer.
func TestCheckerPanicPassesThrough(t *testing.T) {
	for _, open := range []bool{true, false} {
		g := mustNew(t, Guardrail{Name: "moderation", FailOpen: open, Check: func(context.Context, *portico.Request) error { panic("checker bug") }})
		calls := 0
		func() {
			defer func() {
				if p := recover(); p != "checker bug" {
					t.Errorf("FailOpen %v: recovered %v, want the checker's panic", open, p)
				}
			}()
			_, _ = g.Wrap(counting(&calls)).Generate(context.Background(), ask(secret))
		}()
		if calls != 0 {
			t.Errorf("FailOpen %v: model calls = %d, want 0", open, calls)
		}
	}
}

// A caller gone during a check ends the call with its own error, whatever
// the policy: not a checker's failure.
func TestCallerGoneDuringCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		g := mustNew(t, Guardrail{Name: "moderation", FailOpen: true, Timeout: time.Minute,
			Check: func(ctx context.Context, _ *portico.Request) error { <-ctx.Done(); return ctx.Err() }})
		calls := 0
		_, err := g.Wrap(counting(&calls)).Generate(ctx, ask("hi"))
		if f, c := portico.FaultOf(err); f != portico.FaultCaller || c != portico.Deadline || !portico.NothingSent(err) || calls != 0 {
			t.Errorf("FaultOf = %v, %v, NothingSent %v, calls %d, want caller, deadline, true, 0 (err %v)", f, c, portico.NothingSent(err), calls, err)
		}
	})
}

func TestNewRefusesMistakes(t *testing.T) {
	ok := func(context.Context, *portico.Request) error { return nil }
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "guard: no Config.Guardrails"},
		{Config{Guardrails: []Guardrail{{Check: ok}}}, "guard: Config.Guardrails[0] needs a Name and a Check"},
		{Config{Guardrails: []Guardrail{{Name: "a"}}}, "guard: Config.Guardrails[0] needs a Name and a Check"},
		{Config{Guardrails: []Guardrail{{Name: "a", Check: ok, Timeout: -1}}}, `guard: Config.Guardrails[0] ("a") has a negative Timeout`},
		{Config{Guardrails: []Guardrail{{Name: "a", Check: ok}, {Name: "a", Check: ok}}}, `guard: two guardrails named "a"`},
	} {
		if _, err := New(c.cfg); err == nil || err.Error() != c.want {
			t.Errorf("New(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}
