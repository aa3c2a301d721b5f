package stack

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
)

// TestOneRouteFits: a request the route's Capabilities cannot serve (tools
// on a route without them, an input longer than its window) is refused
// without a call, with one route as with two. One route used to be called
// directly, unfiltered: the stack sent what the group would have refused.
func TestOneRouteFits(t *testing.T) {
	tools := hello.Clone()
	tools.Tools = []portico.Tool{{Name: "lookup", Parameters: []byte(`{"type":"object"}`)}}
	long := hello.Clone()
	long.Messages = []portico.Message{portico.Text(portico.RoleUser, strings.Repeat("word ", 4000))}
	caps := portico.Capabilities{ContextWindow: 1000}
	for _, c := range []struct {
		name, need string
		req        *portico.Request
	}{
		{"tools", "tools", tools},
		{"over-long prompt", "context window", long},
	} {
		for _, n := range []int{1, 2} {
			fakes := []*modeltest.Fake{modeltest.NewFake(modeltest.Answer("a")), modeltest.NewFake(modeltest.Answer("b"))}
			var routes []Route
			var want []portico.Hop
			for i, name := range []string{"a", "b"}[:n] {
				rt := route(name, fakes[i])
				rt.Capabilities = caps
				routes = append(routes, rt)
				want = append(want, portico.Hop{Route: name, Reason: c.need})
			}
			s, err := New(Config{Routes: routes})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := s.Generate(context.Background(), c.req)
			var pe *portico.Error
			var ex *fallback.Exhausted
			if resp != nil || !errors.As(err, &pe) || pe.Class != portico.Incompatible || !pe.NotSent ||
				!errors.As(err, &ex) || !reflect.DeepEqual(ex.Hops, want) || !errors.Is(err, fallback.ErrExhausted) {
				t.Errorf("%s, %d routes: Generate = %v, %v; want Incompatible, NotSent, hops %v", c.name, n, resp, err, want)
			}
			if got := fakes[0].Count() + fakes[1].Count(); got != 0 {
				t.Errorf("%s, %d routes: %d calls, want 0", c.name, n, got)
			}
		}
	}
	// What fits is still served by the one route.
	f := modeltest.NewFake(modeltest.Answer("ok"))
	rt := route("a", f)
	rt.Capabilities = portico.Capabilities{ContextWindow: 1000, Tools: true}
	s, err := New(Config{Routes: []Route{rt}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := s.Generate(context.Background(), tools); err != nil || resp.Text != "ok" || f.Count() != 1 {
		t.Errorf("fitting request = %+v, %v (%d calls); want ok, 1 call", resp, err, f.Count())
	}
}
