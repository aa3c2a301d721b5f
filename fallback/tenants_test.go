package fallback

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/rank"
)

// tenantKey is the context key of the id of the request a context was
// made for: a route that sees another id was called under another
// request's context.
type tenantKey struct{}

// act is what one route does with a request of a mode.
type act struct {
	wait   time.Duration  // before its answer, error or panic (a context ending first ends it)
	deaf   bool           // answers after wait even when its context ended
	err    *portico.Error // fails with a copy of it
	panic  bool
	stream bool // delivers two chunks, the second 1 ms after the first
	broken bool // streams the first chunk, then fails
}

// stall is a route that answers after its context ended.
var stall = act{wait: 10 * time.Second}

// modes are the behaviours of routes a, b and c (and of a hedged single
// Model: its first attempt as a, its hedge as b), with how a request of
// the mode differs.
var modes = []struct {
	name    string
	a, b, c act
	edit    func(*portico.Request)
	// racy: an attempt ends as its hedge falls due, so the hedge may or
	// may not be sent (and then lose): the request's hops, events and
	// tokens are checked without it.
	racy bool
}{
	{name: "fast", a: act{wait: ms}},
	{name: "hedge wins", a: stall, b: act{wait: ms}},
	{name: "third wins", a: stall, b: stall, c: act{wait: ms}},
	{name: "fails over", a: act{wait: ms, err: &portico.Error{Class: portico.Transient, Reason: "503"}}, b: act{wait: ms}},
	{name: "billed failure", a: act{wait: ms, err: &portico.Error{Class: portico.Transient, Reason: "cut", Usage: &portico.Usage{OutputTokens: 7}}}, b: act{wait: 2 * ms}},
	{name: "loser billed", a: act{wait: 102 * ms, deaf: true}, b: act{wait: ms}},
	{name: "all fail", a: act{wait: ms, err: &portico.Error{Class: portico.Transient, Reason: "503"}},
		b: act{wait: ms, err: &portico.Error{Class: portico.RateLimited, Reason: "429"}}, c: act{wait: ms, err: &portico.Error{Class: portico.Transient, Reason: "502"}}},
	{name: "permanent", a: act{wait: ms, err: &portico.Error{Class: portico.Permanent, Reason: "400"}}},
	{name: "panics", a: act{wait: ms, panic: true}},
	{name: "panics after the hedge", a: act{wait: 150 * ms, panic: true}, b: stall},
	{name: "hedge panics", a: stall, b: act{wait: ms, panic: true}},
	{name: "stream", a: act{wait: ms, stream: true}},
	{name: "stream hedged", a: act{wait: 10 * time.Second, stream: true}, b: act{wait: ms, stream: true}},
	{name: "stream breaks", a: act{wait: ms, broken: true, err: &portico.Error{Class: portico.Ambiguous, Reason: "reset"}}},
	{name: "wrong", edit: func(r *portico.Request) { r.MaxOutputTokens = -1 }},
	{name: "max cost", a: act{wait: 200 * ms}, b: act{wait: ms},
		edit: func(r *portico.Request) { r.Contract = &portico.Contract{MaxCost: 25} }},
	{name: "deadline", a: stall, b: stall, c: stall,
		edit: func(r *portico.Request) { r.Contract = &portico.Contract{Deadline: 500 * ms} }},
	{name: "deadline, hedge wins", a: stall, b: act{wait: ms},
		edit: func(r *portico.Request) { r.Contract = &portico.Contract{Deadline: 5 * time.Second} }},
	{name: "not hedged", a: act{wait: 300 * ms}, b: act{wait: ms},
		edit: func(r *portico.Request) { r.NoAmbiguousRetry = true }},
	{name: "continues", a: act{wait: ms, broken: true, err: &portico.Error{Class: portico.Ambiguous, Reason: "reset"}}, b: act{wait: ms, stream: true},
		edit: func(r *portico.Request) { r.ContinueOnBreak = true }},
	{name: "ends as its hedge fires", a: act{wait: 100 * ms}, b: act{wait: ms}, racy: true},
	{name: "next ends as its hedge fires", a: act{wait: ms, err: &portico.Error{Class: portico.Transient, Reason: "503"}}, b: act{wait: 100 * ms}, c: act{wait: ms}, racy: true},
}

// tenantModel is route name's Model under modes: it answers name:id (id
// from the request's text), billed len(id) output tokens, after checking
// that its context is the request's.
type tenantModel struct{ name string }

func (m tenantModel) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	id, mode, _ := strings.Cut(req.Messages[0].Content[0].Text, " ")
	if got, _ := ctx.Value(tenantKey{}).(string); got != id {
		return nil, &portico.Error{Class: portico.Permanent, Reason: "context of " + got + " in " + id}
	}
	var md = modes[0]
	for _, x := range modes {
		if x.name == mode {
			md = x
		}
	}
	st, name := md.a, m.name
	switch {
	case m.name == "w" && req.Hedge:
		st = md.b
	case m.name == "b":
		st = md.b
	case m.name == "c":
		st = md.c
	}
	if st == (act{}) {
		st = stall
	}
	sleep := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			if st.deaf {
				<-t.C
				return nil
			}
			return portico.FromContext(ctx)
		}
	}
	if err := sleep(st.wait); err != nil {
		return nil, err
	}
	if st.panic {
		panic("panic " + name + " " + id)
	}
	text := name + ":" + id
	if (st.stream || st.broken) && req.OnChunk != nil {
		if err := req.OnChunk(portico.Chunk{Text: name + ":"}); err != nil {
			return nil, err
		}
		if st.broken {
			e := *st.err
			return nil, &e
		}
		if err := sleep(ms); err != nil {
			return nil, err
		}
		if err := req.OnChunk(portico.Chunk{Text: id}); err != nil {
			return nil, err
		}
	}
	if st.err != nil {
		e := *st.err
		return nil, &e
	}
	return &portico.Response{Text: text, FinishReason: portico.FinishStop, Usage: portico.Usage{OutputTokens: len(id)}}, nil
}

// outcome is all a caller sees of one request.
type outcome struct {
	Text, Route, Hops, Err, Panic, Chunks string
	Cost                                  float64
	Took                                  time.Duration
	Events                                []string
	Tokens                                []string
}

// tenants are the callers of a shared Hedger: two groups (one in Routes
// order, one ranked by a Policy) and a hedged single Model.
type tenants struct {
	models [3]portico.Model
	groups [2]*Group
	budget *modeltest.Budget
}

func newTenants() *tenants {
	caps := func(price float64) portico.Capabilities {
		return portico.Capabilities{OutputPrice: price, ContextWindow: 1000}
	}
	rt := func(name string, price float64) portico.Route {
		return portico.Route{Name: name, Model: tenantModel{name}, Capabilities: caps(price)}
	}
	tn := &tenants{budget: &modeltest.Budget{Tokens: -1}}
	h := hedge.MustNew(hedge.Config{Delay: 100 * ms, MaxInFlight: 3, Budget: tn.budget})
	tn.groups[0] = MustNew(Config{Routes: []portico.Route{rt("a", 1), rt("b", 2), rt("c", 3)}, Hedge: h})
	// Ranked by cost, the same order as the first group's.
	tn.groups[1] = MustNew(Config{Routes: []portico.Route{rt("c", 3), rt("b", 2), rt("a", 1)}, Policy: rank.ByCost, Hedge: h})
	tn.models = [3]portico.Model{tn.groups[0], tn.groups[1], h.Wrap(tenantModel{"w"})}
	return tn
}

// call sends request i (tenant i%5, mode i%len(modes), model i%3) and
// returns what its caller sees, tokens aside.
func (tn *tenants) call(i int) (o outcome) {
	md := modes[i%len(modes)]
	id := fmt.Sprintf("t%d-%d%s", i%5, i, strings.Repeat("x", i%4))
	req := &portico.Request{Model: "m", MaxOutputTokens: 10,
		Messages: []portico.Message{portico.Text(portico.RoleUser, id+" "+md.name)},
		Identity: portico.Identity{ClientKey: fmt.Sprintf("tenant-%d", i%5)}}
	if md.racy {
		req.Identity.ClientKey = "racy"
	}
	if md.edit != nil {
		md.edit(req)
	}
	var chunks strings.Builder
	if strings.HasPrefix(md.name, "stream") || md.name == "continues" {
		req.OnChunk = func(c portico.Chunk) error { chunks.WriteString(c.Text); return nil }
	}
	obs := &events{}
	ctx := portico.ContextWithObserver(context.WithValue(context.Background(), tenantKey{}, id), obs)
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			o.Panic = fmt.Sprint(p)
		}
		o.Took, o.Chunks = time.Since(start), chunks.String()
		obs.mu.Lock()
		for _, e := range obs.ev {
			o.Events = append(o.Events, fmt.Sprintf("%v %s %s %d %v", e.Kind, e.Route, e.Reason, e.Attempt, e.Delay))
		}
		obs.mu.Unlock()
	}()
	resp, err := tn.models[i%3].Generate(ctx, req)
	if err != nil {
		o.Err = portico.ClassOf(err).String() + ": " + err.Error()
	}
	if resp != nil {
		o.Text, o.Route, o.Hops, o.Cost = resp.Text, resp.Route, hops(resp.Hops), resp.Cost
	}
	return o
}

// unraced is hops without a hedge lost to a winner other than route.
func unraced(hs, route string) string {
	var kept []string
	for _, h := range strings.Split(hs, ", ") {
		if h != "" && !(strings.HasSuffix(h, " (hedge lost)") && !strings.HasPrefix(h, route+" ")) {
			kept = append(kept, h)
		}
	}
	return strings.Join(kept, ", ")
}

// TestTenantsShareAHedger: requests of every kind (answers, hedges that win
// or lose, failures, billed losers, panics before and after a hedge and
// in one, streams, a request wrong on any route, MaxCost, deadlines, ones
// not hedged, continued streams), of five tenants, through two groups and
// a hedged Model sharing one Hedger, run at once and then one after the
// other; each sees exactly what it sees alone: its text,
// route, hops, cost, error, panic, chunks, duration and events (read from
// its own context), and the hedge tokens taken are those taken alone.
func TestTenantsShareAHedger(t *testing.T) {
	const n = 6 * 3 * 23 // every mode on every model, several times
	want := make([]outcome, n)
	var wantTokens []string
	for i := range n {
		synctest.Test(t, func(t *testing.T) {
			tn := newTenants()
			want[i] = tn.call(i)
			want[i].Tokens = tn.budget.Taken()
			if !modes[i%len(modes)].racy {
				wantTokens = append(wantTokens, want[i].Tokens...)
			}
		})
	}
	check := func(t *testing.T, i int, got outcome) {
		t.Helper()
		got.Tokens = want[i].Tokens // checked in all, below
		w := want[i]
		if modes[i%len(modes)].racy {
			got.Hops, w.Hops = unraced(got.Hops, got.Route), unraced(w.Hops, w.Route)
			got.Events, w.Events = nil, nil
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("request %d (%s on model %d):\n got %+v\nwant %+v", i, modes[i%len(modes)].name, i%3, got, w)
		}
	}
	for _, seq := range []bool{false, true} {
		t.Run(fmt.Sprintf("sequential=%v", seq), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tn := newTenants()
				got := make([]outcome, n)
				if seq {
					for i := range n {
						got[i] = tn.call(i)
					}
				} else {
					var wg sync.WaitGroup
					for i := range n {
						wg.Go(func() { got[i] = tn.call(i) })
					}
					wg.Wait()
				}
				for i := range n {
					check(t, i, got[i])
				}
				tokens := slices.DeleteFunc(tn.budget.Taken(), func(s string) bool { return strings.HasSuffix(s, "/racy") })
				slices.Sort(tokens)
				ref := slices.Clone(wantTokens)
				slices.Sort(ref)
				if !slices.Equal(tokens, ref) {
					t.Errorf("hedge tokens taken:\n%q\nwant\n%q", tokens, ref)
				}
			})
		})
	}
}
