package modeltest

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// RunGone checks the rule every layer of Portico that spends keeps for a
// request whose caller has gone ([portico.Gone]): given a context already
// canceled, and one already past its deadline, Generate of wrap(base)
// returns a nil Response and an error that matches the context's error
// (errors.Is), of class Canceled or Deadline, with NotSent set, without
// calling base and without time passing. Each case runs in its own
// testing/synctest bubble, over a base that would answer. Run it beside
// [Run] for a limiter, a breaker, a retry layer, a router: a middleware
// that only passes calls through need not keep it.
func RunGone(t *testing.T, wrap func(t *testing.T, base portico.Model) portico.Model) {
	t.Helper()
	for _, c := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
		want error
		cls  portico.Class
	}{
		{"Canceled", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}, context.Canceled, portico.Canceled},
		{"DeadlinePassed", func(t *testing.T) context.Context {
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Millisecond))
			t.Cleanup(cancel)
			return ctx
		}, context.DeadlineExceeded, portico.Deadline},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for _, stream := range []bool{false, true} {
					var onChunk func(portico.Chunk) error
					if stream {
						onChunk = func(portico.Chunk) error { return nil }
					}
					base := NewFake(Answer("too late"))
					m := wrap(t, base)
					start := time.Now()
					resp, err := m.Generate(c.ctx(t), suiteRequest(onChunk))
					if !exclusive(t, resp, err) {
						continue
					}
					if !errors.Is(err, c.want) || portico.ClassOf(err) != c.cls {
						t.Errorf("Generate(%s ctx, stream %v) = %v (class %v), want an error matching %v, class %v",
							c.name, stream, err, portico.ClassOf(err), c.want, c.cls)
					}
					if pe := (*portico.Error)(nil); !errors.As(err, &pe) || !pe.NotSent {
						t.Errorf("Generate(%s ctx, stream %v) = %v, want NotSent set", c.name, stream, err)
					}
					if n := base.Count(); n != 0 {
						t.Errorf("Generate(%s ctx, stream %v): base called %d times, want 0", c.name, stream, n)
					}
					if d := time.Since(start); d != 0 {
						t.Errorf("Generate(%s ctx, stream %v) took %v of virtual time, want 0", c.name, stream, d)
					}
				}
			})
		})
	}
}
