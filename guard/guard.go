package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/rules"
)

// Check is a guardrail's test of a request, made before it is sent: nil
// passes it, an error made by [Deny] (a [*Refusal] in its tree) refuses
// it, and any other error is the checker's own failure, which the
// guardrail's policy decides (Guardrail.FailOpen). It must not modify
// req, must be safe for concurrent use, and must return when ctx is done.
type Check func(ctx context.Context, req *portico.Request) error

// Guardrail is one named check and its policy for its own failures.
type Guardrail struct {
	// Name names the guardrail in errors and events: an identifier
	// ("pii", "moderation"), never content. Required, unique in a Config.
	Name string
	// Check is the test. Required.
	Check Check
	// FailOpen lets a request go on when Check fails (an error other than
	// a refusal, or Timeout passed); false, the zero value, refuses it
	// (fail closed): Rejected, with a [*CheckError]. A Check's panic is
	// no failure a policy decides: it passes through to the caller.
	FailOpen bool
	// Timeout is the longest Check may run: its context ends then, and a
	// Check still running is a failure ("timeout"). Zero means none but
	// the caller's context's; negative is an error.
	Timeout time.Duration
}

// Config configures [Guards].
type Config struct {
	// Guardrails run in order, each after the previous passed. At least
	// one is required.
	Guardrails []Guardrail
}

// Guards runs a Config's guardrails before the calls it wraps; safe for
// concurrent use.
type Guards struct {
	rails []Guardrail
}

// New returns the Guards cfg describes. It fails when cfg has no
// guardrail, or one has no Name or no Check, a negative Timeout, or a
// Name another has.
func New(cfg Config) (*Guards, error) {
	if len(cfg.Guardrails) == 0 {
		return nil, errors.New("guard: no Config.Guardrails")
	}
	seen := make(map[string]bool, len(cfg.Guardrails))
	for i, g := range cfg.Guardrails {
		if err := rules.First(
			rules.If(g.Name == "" || g.Check == nil, fmt.Sprintf("guard: Config.Guardrails[%d] needs a Name and a Check", i)),
			rules.If(g.Timeout < 0, fmt.Sprintf("guard: Config.Guardrails[%d] (%q) has a negative Timeout", i, g.Name)),
			rules.If(seen[g.Name], fmt.Sprintf("guard: two guardrails named %q", g.Name)),
		); err != nil {
			return nil, err
		}
		seen[g.Name] = true
	}
	return &Guards{rails: append([]Guardrail(nil), cfg.Guardrails...)}, nil
}

// Wrap returns next behind the guardrails: a request every check passed
// (or whose failed check fails open) is sent to next; any other ends
// with the error the package documentation describes, next not called.
func (g *Guards) Wrap(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if err := g.Check(ctx, req); err != nil {
			return nil, err
		}
		return next.Generate(ctx, req)
	})
}

// Check runs the guardrails on req, as Wrap does before sending it: nil
// when req may go on, else the classified error Wrap returns.
func (g *Guards) Check(ctx context.Context, req *portico.Request) error {
	for i := range g.rails {
		r := &g.rails[i]
		if err := portico.Gone(ctx); err != nil {
			return err
		}
		kind, err := run(ctx, r, req)
		if err := portico.Gone(ctx); err != nil {
			return err // the caller's, whatever the check said
		}
		if err := verdict(ctx, r, kind, err); err != nil {
			return err
		}
	}
	return nil
}

// verdict observes what r's check said (run's kind and err) and returns
// the error that ends the request, or nil when it may go on: a refusal is
// Permanent, a failed check Rejected unless r fails open.
func verdict(ctx context.Context, r *Guardrail, kind string, err error) error {
	switch {
	case kind == "":
		portico.Observe(ctx, portico.Event{Kind: portico.EventGuard, Route: r.Name, Reason: "pass"})
		return nil
	case kind == refused:
		var rf *Refusal
		errors.As(err, &rf)
		ref := &Refusal{Guardrail: r.Name, Rule: rf.Rule}
		portico.Observe(ctx, portico.Event{Kind: portico.EventGuard, Route: r.Name, Class: portico.Permanent, Reason: "refused"})
		return &portico.Error{Class: portico.Permanent, NotSent: true, Err: ref}
	case r.FailOpen:
		portico.Observe(ctx, portico.Event{Kind: portico.EventGuard, Route: r.Name, Reason: "fail_open:" + kind})
		return nil
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventGuard, Route: r.Name, Class: portico.Rejected, Reason: "fail_closed:" + kind})
	return &portico.Error{Class: portico.Rejected, NotSent: true, Err: &CheckError{Guardrail: r.Name, Kind: kind, cause: err}}
}

// refused is run's kind of a refusal.
const refused = "refused"

// run runs r's check on req: kind "" when it passed, refused when it
// refused (err holds the *Refusal), else how the checker failed ("error",
// "timeout") and its error. A panic of the check passes through.
func run(ctx context.Context, r *Guardrail, req *portico.Request) (kind string, err error) {
	cctx := ctx
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeoutCause(ctx, r.Timeout, errTimeout)
		defer cancel()
	}
	err = r.Check(cctx, req)
	var rf *Refusal
	switch {
	case errors.As(err, &rf):
		return refused, err
	case context.Cause(cctx) == errTimeout: // nil while cctx is not done
		return "timeout", errors.Join(err, errTimeout)
	case err != nil:
		return "error", err
	}
	return "", nil
}

var errTimeout = errors.New("guard: check timed out")
