package fallback

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

// TestGone: a request whose caller has gone calls no route, hedged or not:
// the group returns the context's error, NotSent, not an exhausted error
// listing routes skipped for want of time. Before, the first route was
// called with it unless the deadline had passed.
func TestGone(t *testing.T) {
	for name, hedged := range map[string]bool{"walk": false, "race": true} {
		t.Run(name, func(t *testing.T) {
			modeltest.RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
				cfg := Config{Routes: []portico.Route{
					{Name: "a", Model: base, Capabilities: suiteCaps},
					{Name: "b", Model: base, Capabilities: suiteCaps},
				}}
				if hedged {
					cfg.Hedge = hedge.MustNew(hedge.Config{Delay: 1})
				}
				return MustNew(cfg)
			})
		})
	}
}

// TestGoneLeavesNoHop: a request past its deadline is not an exhausted
// search: no hop, no event, no cooldown read.
func TestGoneLeavesNoHop(t *testing.T) {
	obs := &events{}
	ctx, cancel := context.WithTimeout(portico.ContextWithObserver(context.Background(), obs), -1)
	defer cancel()
	a := &fake{name: "a"}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{})}})
	_, err := g.Generate(ctx, simple)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrExhausted) || a.n() != 0 || len(obs.ev) != 0 {
		t.Errorf("Generate(past deadline) = %v, %d calls, events %v; want the context's error alone", err, a.n(), obs.ev)
	}
}
