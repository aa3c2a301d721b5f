package portico

import (
	"errors"
	"slices"
	"testing"
)

func TestStamp(t *testing.T) {
	r := Route{Name: "b", Capabilities: Capabilities{InputPrice: 1, OutputPrice: 2}}
	inner := []Hop{{Route: "x", Reason: "transient"}}
	outer := []Hop{{Route: "a", Reason: "unavailable"}}
	tests := []struct {
		name     string
		resp     Response
		hops     []Hop
		billed   float64
		wantCost float64
		wantHops []string
	}{
		{"priced by the route", Response{Usage: Usage{InputTokens: 3, OutputTokens: 2}}, nil, 0, 7, nil},
		{"inner cost kept", Response{Usage: Usage{InputTokens: 3, OutputTokens: 2}, Cost: 42}, nil, 0, 42, nil},
		{"billed added", Response{Usage: Usage{InputTokens: 3, OutputTokens: 2}}, outer, 0.5, 7.5, []string{"a"}},
		{"inner hops follow", Response{Hops: inner, Cost: 42}, outer, 1, 43, []string{"a", "x"}},
		{"inner hops alone", Response{Hops: inner}, nil, 0, 0, []string{"x"}},
	}
	for _, tc := range tests {
		resp := tc.resp
		got := r.Stamp(&resp, slices.Clone(tc.hops), tc.billed)
		var hops []string
		for _, h := range got.Hops {
			hops = append(hops, h.Route)
		}
		if got != &resp || got.Route != "b" || got.Cost != tc.wantCost || !slices.Equal(hops, tc.wantHops) {
			t.Errorf("%s: Stamp = Route %q Cost %v Hops %v; want b, %v, %v", tc.name, got.Route, got.Cost, hops, tc.wantCost, tc.wantHops)
		}
	}
	resp := Response{Usage: Usage{InputTokens: 1}}
	if n := testing.AllocsPerRun(100, func() { resp.Cost = 0; r.Stamp(&resp, nil, 0) }); n != 0 {
		t.Errorf("Stamp allocs = %v, want 0", n)
	}
}

// gate records what a StreamWatch asks it and answers from a script.
type gate struct {
	delivered []bool
	pass      []bool
	err       error
}

func (g *gate) GateChunk(c Chunk, delivered bool) (bool, error) {
	g.delivered = append(g.delivered, delivered)
	if g.err != nil && c.Text == "refuse" {
		return false, g.err
	}
	p := g.pass[0]
	g.pass = g.pass[1:]
	return p, nil
}

func TestStreamWatch(t *testing.T) {
	var got []string
	errCaller := errors.New("caller")
	req := &Request{Model: "m", OnChunk: func(c Chunk) error {
		got = append(got, c.Text)
		if c.Text == "bad" {
			return errCaller
		}
		return nil
	}}

	var idle StreamWatch
	if r := idle.Watch(&Request{}, nil); r.OnChunk != nil || idle.Delivered() || idle.CallerFailed() {
		t.Fatalf("Watch of a request that does not stream = %+v, Delivered %v, CallerFailed %v; want it unchanged, false, false", r, idle.Delivered(), idle.CallerFailed())
	}

	var w StreamWatch
	g := &gate{pass: []bool{false, true, true}, err: errors.New("refused")}
	r := w.Watch(req, g)
	if r == req || r.Model != "m" {
		t.Fatal("Watch returned the caller's request, want a copy")
	}
	steps := []struct {
		text          string
		err           error
		delivered     bool
		failed        bool
		gateDelivered bool
	}{
		{"held", nil, false, false, false},
		{"a", nil, true, false, false},
		{"refuse", g.err, true, false, true},
		{"bad", errCaller, true, true, true},
	}
	for _, s := range steps {
		if err := r.OnChunk(Chunk{Text: s.text}); err != s.err {
			t.Errorf("OnChunk(%q) = %v, want %v", s.text, err, s.err)
		}
		if w.Delivered() != s.delivered || w.CallerFailed() != s.failed {
			t.Errorf("after %q: Delivered %v CallerFailed %v, want %v %v", s.text, w.Delivered(), w.CallerFailed(), s.delivered, s.failed)
		}
		if d := g.delivered[len(g.delivered)-1]; d != s.gateDelivered {
			t.Errorf("gate saw delivered = %v for %q, want %v", d, s.text, s.gateDelivered)
		}
	}
	if !slices.Equal(got, []string{"a", "bad"}) {
		t.Errorf("caller got %v, want [a bad]", got)
	}

	var p StreamWatch
	pr := p.Watch(&Request{OnChunk: func(Chunk) error { panic("boom") }}, nil)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the caller's panic did not go on")
			}
		}()
		pr.OnChunk(Chunk{Text: "x"})
	}()
	if !p.Delivered() || !p.CallerFailed() {
		t.Errorf("after a panicking OnChunk: Delivered %v CallerFailed %v, want true true", p.Delivered(), p.CallerFailed())
	}
}

// firstGate counts the chunks it judges and ungates its watch at the first.
type firstGate struct {
	StreamWatch
	judged int
}

func (g *firstGate) GateChunk(Chunk, bool) (bool, error) {
	g.judged++
	g.Ungate()
	return true, nil
}

// TestStreamWatchUngate: a gate that ungates at the first chunk judges that
// one alone; every chunk still reaches the caller, and the watch still
// reports what it saw.
func TestStreamWatchUngate(t *testing.T) {
	var got []string
	g := &firstGate{}
	r := g.Watch(&Request{OnChunk: func(c Chunk) error {
		got = append(got, c.Text)
		return nil
	}}, g)
	for _, s := range []string{"a", "b", "c"} {
		if err := r.OnChunk(Chunk{Text: s}); err != nil {
			t.Fatalf("OnChunk(%q) = %v", s, err)
		}
	}
	if g.judged != 1 || !slices.Equal(got, []string{"a", "b", "c"}) || !g.Delivered() || g.CallerFailed() {
		t.Errorf("gate judged %d chunks, caller got %v, Delivered %v, CallerFailed %v; want 1, [a b c], true, false",
			g.judged, got, g.Delivered(), g.CallerFailed())
	}
}
