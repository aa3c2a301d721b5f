package route

import (
	"container/heap"
	"container/list"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
)

// simReplica is a fake replica that models its engine's prefix cache: an LRU of
// the hashes of the flattened prompt's prefixes at every simBlock bytes, with
// room for capBlocks of them. Its Generate reports how many input tokens hit
// the cache (Usage.CachedInputTokens) and caches the prompt. It shares no code
// with the picker's index (different flattening, hash and block boundaries).
type simReplica struct {
	capBlocks int
	lru       list.List // of uint64, front = most recent
	m         map[uint64]*list.Element
	outTokens int // the answer's length, set by the simulation before the call
}

const simBlock = 256

func newSimReplica(capBlocks int) *simReplica {
	return &simReplica{capBlocks: capBlocks, m: make(map[uint64]*list.Element)}
}

func flatten(req *portico.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(string(m.Role))
		b.WriteByte(0)
		for _, p := range m.Content {
			b.WriteString(p.Text)
		}
		b.WriteByte(1)
	}
	return b.String()
}

func (r *simReplica) Generate(_ context.Context, req *portico.Request) (*portico.Response, error) {
	s := flatten(req)
	h := fnv.New64a()
	var hashes []uint64
	for k := 0; k+simBlock <= len(s); k += simBlock {
		h.Write([]byte(s[k : k+simBlock]))
		hashes = append(hashes, h.Sum64())
	}
	hit := 0
	for _, x := range hashes {
		if _, ok := r.m[x]; !ok {
			break
		}
		hit++
	}
	for k := len(hashes) - 1; k >= 0; k-- { // deepest first, so prefixes stay longest
		x := hashes[k]
		if e, ok := r.m[x]; ok {
			r.lru.MoveToFront(e)
			continue
		}
		if r.lru.Len() >= r.capBlocks {
			old := r.lru.Back()
			r.lru.Remove(old)
			delete(r.m, old.Value.(uint64))
		}
		r.m[x] = r.lru.PushFront(x)
	}
	in := (len(s) + 3) / 4
	return &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Usage: portico.Usage{
		InputTokens: in, OutputTokens: r.outTokens, CachedInputTokens: min(hit*simBlock/4, in)}}, nil
}

// simProgram is an agent program: its prompt grows call by call.
type simProgram struct {
	id    string
	msgs  []portico.Message
	calls int // calls left
	hot   bool
}

type simEvent struct {
	at   time.Duration
	kind int // 0 call arrives, 1 call ends
	prog *simProgram
	done func(DoneInfo)
	out  int
	seq  int
}

type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() any     { o := *q; x := o[len(o)-1]; *q = o[:len(o)-1]; return x }

type simResult struct {
	name           string
	hitRatio       float64 // cached input tokens / input tokens, all calls
	loadRatio      float64 // max/min replica work over the whole run
	burstLoadRatio float64 // max/min replica work placed during the hot-prefix burst
	burstLoad      []float64
	burstHitRatio  float64
	perReplica     []float64
}

const (
	simReplicas   = 8
	simPrograms   = 64
	simCacheBlk   = 1500 // per replica cache, blocks of 256 bytes (~96k tokens)
	simWindow     = 60 * time.Second
	simBurstStart = 120 * time.Second
	simBurstLen   = 5 * time.Second
	simBurstCalls = 400
)

func simText(rng *rand.Rand, n int) string {
	const words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega "
	var b strings.Builder
	for b.Len() < n {
		i := rng.IntN(len(words) - 10)
		b.WriteString(words[i : i+8])
		b.WriteByte(byte('a' + rng.IntN(26)))
	}
	return b.String()[:n]
}

// simulate runs the agent workload through a Balancer with strategy s.
func simulate(t *testing.T, name string, s Strategy) simResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(2026, 11))
	reps := make([]*simReplica, simReplicas)
	routes := make([]portico.Route, simReplicas)
	for i := range reps {
		reps[i] = newSimReplica(simCacheBlk)
		routes[i] = portico.Route{Name: fmt.Sprintf("r%d", i), Model: reps[i]}
	}
	b, err := NewBalancer(BalancerConfig{Replicas: routes, Strategy: s})
	if err != nil {
		t.Fatal(err)
	}
	system := portico.Text(portico.RoleSystem, "You are a coding agent. "+simText(rng, 3000))
	hotDoc := simText(rng, 9000)
	q := &simQueue{}
	seq := 0
	push := func(e *simEvent) { seq++; e.seq = seq; heap.Push(q, e) }
	for i := range simPrograms {
		p := &simProgram{id: fmt.Sprintf("prog-%d", i), calls: 4 + rng.IntN(14),
			msgs: []portico.Message{system, portico.Text(portico.RoleUser, simText(rng, 500+rng.IntN(2500)))}}
		push(&simEvent{at: time.Duration(rng.Float64() * float64(100*time.Second)), prog: p})
	}
	for i := range simBurstCalls {
		p := &simProgram{id: fmt.Sprintf("hot-%d", i), calls: 1, hot: true,
			msgs: []portico.Message{system, portico.Text(portico.RoleUser, hotDoc), portico.Text(portico.RoleUser, simText(rng, 200))}}
		push(&simEvent{at: simBurstStart + time.Duration(i)*simBurstLen/simBurstCalls, prog: p})
	}
	type placed struct {
		at      time.Duration
		replica int
		work    float64
	}
	var log []placed
	var in, cached, hotIn, hotCached float64
	epoch := windowStart(simWindow)
	for q.Len() > 0 {
		e := heap.Pop(q).(*simEvent)
		if e.kind == 1 {
			e.done(DoneInfo{Usage: portico.Usage{OutputTokens: e.out}})
			p := e.prog
			if p.calls > 0 {
				pause := time.Duration(rng.ExpFloat64() * float64(time.Second))
				push(&simEvent{at: e.at + pause, prog: p})
			}
			continue
		}
		p := e.prog
		req := &portico.Request{Messages: p.msgs, Identity: portico.Identity{SessionID: p.id}}
		pr, err := b.Pick(PickInfo{Request: req, Now: epoch.Add(e.at)})
		if err != nil {
			t.Fatal(err)
		}
		out := 50
		if !p.hot {
			out = 100 + rng.IntN(300)
		}
		reps[pr.Index].outTokens = out
		resp, err := reps[pr.Index].Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		u := resp.Usage
		miss := float64(u.InputTokens - u.CachedInputTokens)
		in += float64(u.InputTokens)
		cached += float64(u.CachedInputTokens)
		if p.hot {
			hotIn += float64(u.InputTokens)
			hotCached += float64(u.CachedInputTokens)
		}
		work := miss + float64(out)
		log = append(log, placed{e.at, pr.Index, work})
		// Service time: 20 ms + 0.05 ms per prefilled token + 10 ms per output token.
		dur := 20*time.Millisecond + time.Duration(miss*50)*time.Microsecond + time.Duration(out)*10*time.Millisecond
		p.calls--
		if p.calls > 0 {
			// The next call's prompt: this one + the answer + a tool result.
			p.msgs = append(p.msgs[:len(p.msgs):len(p.msgs)],
				portico.Text(portico.RoleAssistant, simText(rng, out*4)),
				portico.Text(portico.RoleTool, simText(rng, 500+rng.IntN(3000))))
		}
		push(&simEvent{at: e.at + dur, kind: 1, prog: p, done: pr.Done, out: out})
	}
	ratio := func(from, to time.Duration) (float64, []float64) {
		w := make([]float64, simReplicas)
		for _, l := range log {
			if l.at >= from && l.at < to {
				w[l.replica] += l.work
			}
		}
		lo, hi := w[0], w[0]
		for _, x := range w {
			lo, hi = min(lo, x), max(hi, x)
		}
		return hi / max(lo, 1), w
	}
	r := simResult{name: name, hitRatio: cached / in, burstHitRatio: hotCached / hotIn}
	r.loadRatio, r.perReplica = ratio(0, time.Hour)
	end := simBurstStart + simBurstLen
	r.burstLoadRatio, r.burstLoad = ratio(simBurstStart, end)
	for _, rep := range b.Replicas() {
		if rep.InFlight() != 0 {
			t.Fatalf("%s: replica %d ends with %d in flight, want 0", name, rep.Index, rep.InFlight())
		}
	}
	return r
}

// TestSimulation reproduces seed 002's point on fakes: prefix-cache-aware and
// affinity placement beat round robin and least-in-flight on cache hit ratio by
// a wide margin, and the prefix-aware rebalancing keeps a hot-prefix burst
// within the rebalance factor of load.
func TestSimulation(t *testing.T) {
	strategies := []struct {
		name string
		s    Strategy
	}{
		{"round-robin", RoundRobin{}},
		{"least-in-flight", LeastInFlight{Seed: 7}},
		{"affinity", Affinity{}},
		{"prefix-aware", PrefixAware{Window: simWindow, MaxBlocks: simCacheBlk}},
		{"prefix-no-rebal", PrefixAware{Window: simWindow, MaxBlocks: simCacheBlk, RebalanceFactor: 1e9}},
	}
	res := map[string]simResult{}
	t.Logf("%-16s %9s %10s %12s %14s", "strategy", "hit ratio", "hot hits", "max/min load", "burst max/min")
	for _, s := range strategies {
		r := simulate(t, s.name, s.s)
		res[s.name] = r
		t.Logf("%-16s %9.3f %10.3f %12.2f %14.2f  burst work per replica %.0f", r.name, r.hitRatio, r.burstHitRatio, r.loadRatio, r.burstLoadRatio, r.burstLoad)
	}
	rr, lif := res["round-robin"], res["least-in-flight"]
	for _, smart := range []string{"affinity", "prefix-aware"} {
		for _, dumb := range []simResult{rr, lif} {
			if got := res[smart].hitRatio - dumb.hitRatio; got < 0.2 {
				t.Errorf("hit ratio %s - %s = %.3f, want >= 0.2", smart, dumb.name, got)
			}
		}
	}
	if got := res["prefix-aware"].burstLoadRatio; got > 2 {
		t.Errorf("prefix-aware max/min load during the burst = %.2f, want <= 2 (the rebalance factor)", got)
	}
	// The ablation shows why the rebalance is there: without it the hot prefix
	// herds the burst onto one replica.
	if got := res["prefix-no-rebal"].burstLoadRatio; got < 10 {
		t.Errorf("prefix-aware without rebalance: max/min load during the burst = %.2f, want >= 10 (herding)", got)
	}
}
