package fallback

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
)

// TestNoRouteCalledMessage: when every route was filtered out, none called,
// the message says no route can serve the request and lists each route with
// the need it does not meet; it does not claim that routes "failed". The class
// and errors.Is are as for any exhausted group. Once a route was called, the
// wording is the usual one.
func TestNoRouteCalledMessage(t *testing.T) {
	caps := portico.Capabilities{Schema: portico.SchemaJSONObject}
	req := &portico.Request{Messages: simple.Messages, Contract: &portico.Contract{SchemaID: "invoice"}}
	fits := portico.Capabilities{Schema: portico.SchemaStrict}
	unavailable := route(&fake{name: "s"}, fits)
	unavailable.Health = down{}
	for _, tc := range []struct {
		routes []portico.Route
		class  portico.Class
		want   string // err.Error()
		inner  string // the *Exhausted's Error()
	}{
		{
			[]portico.Route{route(&fake{name: "r"}, caps)},
			portico.Incompatible,
			"portico: incompatible: fallback: no route can serve the request: r (schema)",
			"fallback: no route can serve the request: r (schema)",
		},
		{
			[]portico.Route{route(&fake{name: "r"}, caps), unavailable},
			portico.Rejected,
			"portico: rejected by breaker: fallback: no route can serve the request: r (schema), s (unavailable)",
			"fallback: no route can serve the request: r (schema), s (unavailable)",
		},
		{
			[]portico.Route{route(&fake{name: "a", err: perr(portico.Transient)}, fits), route(&fake{name: "r"}, caps)},
			portico.Transient,
			"portico: transient: fallback: every route failed: a (transient), r (schema)",
			"fallback: every route failed: a (transient), r (schema)",
		},
	} {
		g := MustNew(Config{Routes: tc.routes})
		_, err := g.Generate(context.Background(), req)
		var ex *Exhausted
		if portico.ClassOf(err) != tc.class || !errors.Is(err, ErrExhausted) || !errors.As(err, &ex) {
			t.Errorf("Generate = %v; want an exhausted %v error", err, tc.class)
			continue
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("err.Error() = %q, want %q", got, tc.want)
		}
		if got := ex.Error(); got != tc.inner {
			t.Errorf("Exhausted.Error() = %q, want %q", got, tc.inner)
		}
	}
}

// TestMustNew: MustNew, named like retry.MustNew and validate.MustNew, panics
// with New's error on a bad Config and returns a working Group otherwise.
func TestMustNew(t *testing.T) {
	if g := MustNew(Config{Routes: []portico.Route{route(&fake{name: "a"}, portico.Capabilities{})}}); g == nil || len(g.Routes()) != 1 {
		t.Fatalf("MustNew(one route) = %v, want a Group of one route", g)
	}
	defer func() {
		err, ok := recover().(error)
		if !ok || !strings.HasPrefix(err.Error(), "fallback: ") {
			t.Errorf("MustNew(Config{}) panicked with %v, want New's error", err)
		}
	}()
	MustNew(Config{})
}
