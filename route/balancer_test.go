package route

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// replicas returns n fake replicas named r0..r(n-1), each with a switchable
// Health.
func replicas(n int) ([]portico.Route, []*switchHealth) {
	rs := make([]portico.Route, n)
	hs := make([]*switchHealth, n)
	for i := range rs {
		hs[i] = &switchHealth{}
		rs[i] = portico.Route{Name: fmt.Sprintf("r%d", i), Model: answer("ok", portico.Usage{InputTokens: 1, OutputTokens: 10}, nil), Health: hs[i]}
	}
	return rs, hs
}

func mustBalancer(t testing.TB, rs []portico.Route, s Strategy) *Balancer {
	t.Helper()
	b, err := NewBalancer(BalancerConfig{Replicas: rs, Strategy: s})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// picks places calls and returns the chosen indexes; done says whether each
// call ends at once (true) or stays in flight.
func picks(t *testing.T, b *Balancer, infos []PickInfo, done bool) []int {
	t.Helper()
	var got []int
	for _, in := range infos {
		pr, err := b.Pick(in)
		if err != nil {
			t.Fatalf("Pick: %v", err)
		}
		if done {
			pr.Done(DoneInfo{})
		}
		got = append(got, pr.Index)
	}
	return got
}

func repeat(info PickInfo, n int) []PickInfo {
	s := make([]PickInfo, n)
	for i := range s {
		s[i] = info
	}
	return s
}

func TestRoundRobin(t *testing.T) {
	rs, hs := replicas(4)
	hs[1].down.Store(true)
	b := mustBalancer(t, rs, nil) // nil Strategy is RoundRobin
	got := picks(t, b, repeat(PickInfo{Request: userReq("x")}, 6), true)
	if want := []int{0, 2, 2, 3, 0, 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("round robin with r1 down = %v, want %v", got, want)
	}
	for _, h := range hs {
		h.down.Store(true)
	}
	if _, err := b.Pick(PickInfo{Request: userReq("x")}); !errors.Is(err, ErrNoRoute) || portico.ClassOf(err) != portico.Rejected {
		t.Errorf("Pick with every replica down = %v, want Rejected wrapping ErrNoRoute", err)
	}
}

func TestLeastInFlight(t *testing.T) {
	rs, _ := replicas(2)
	var b *Balancer
	for _, seed := range []uint64{1, 0} { // seeded and the runtime's generator
		b = mustBalancer(t, rs, LeastInFlight{Seed: seed})
		b.replicas[0].setInFlight(2)
		if got := picks(t, b, repeat(PickInfo{Request: userReq("x")}, 8), true); fmt.Sprint(got) != "[1 1 1 1 1 1 1 1]" {
			t.Errorf("seed %d, two replicas, r0 with 2 in flight: picks %v, want all 1", seed, got)
		}
	}
	// Three replicas, r2 down, r0 busier than r1: the pair (0,1) gives 1, the
	// pairs with r2 give the other one; r2 never.
	rs, hs := replicas(3)
	hs[2].down.Store(true)
	b = mustBalancer(t, rs, LeastInFlight{Seed: 1})
	b.replicas[0].setInFlight(5)
	b.replicas[1].setInFlight(1)
	count := [3]int{}
	for _, i := range picks(t, b, repeat(PickInfo{Request: userReq("x")}, 300), true) {
		count[i]++
	}
	// Pairs are uniform: (0,1) and (1,2) give 1 (2/3), (0,2) gives 0 (1/3).
	if count[2] != 0 || count[0] < 60 || count[0] > 140 {
		t.Errorf("pick counts with r2 down = %v, want none on r2 and about 100 on r0", count)
	}
	// Same seed, same sequence.
	b2 := mustBalancer(t, rs, LeastInFlight{Seed: 1})
	b2.replicas[0].setInFlight(5)
	b2.replicas[1].setInFlight(1)
	b3 := mustBalancer(t, rs, LeastInFlight{Seed: 1})
	b3.replicas[0].setInFlight(5)
	b3.replicas[1].setInFlight(1)
	if x, y := picks(t, b2, repeat(PickInfo{Request: userReq("x")}, 50), true), picks(t, b3, repeat(PickInfo{Request: userReq("x")}, 50), true); fmt.Sprint(x) != fmt.Sprint(y) {
		t.Errorf("same seed gave different picks:\n%v\n%v", x, y)
	}
	// Both drawn down: the scan finds the only available replica.
	rs, hs = replicas(3)
	hs[0].down.Store(true)
	hs[1].down.Store(true)
	b = mustBalancer(t, rs, LeastInFlight{})
	if got := picks(t, b, repeat(PickInfo{Request: userReq("x")}, 10), true); fmt.Sprint(got) != "[2 2 2 2 2 2 2 2 2 2]" {
		t.Errorf("only r2 up: picks %v, want all 2", got)
	}
	hs[2].down.Store(true)
	if _, err := b.Pick(PickInfo{Request: userReq("x")}); !errors.Is(err, ErrNoRoute) {
		t.Errorf("Pick with every replica down = %v, want ErrNoRoute", err)
	}
}

func TestAffinity(t *testing.T) {
	rs, hs := replicas(3)
	b := mustBalancer(t, rs, Affinity{ShortTokens: 10, MaxSessions: 2})
	p := b.picker.(*affinityPicker)
	short := PickInfo{Request: userReq("x"), InputTokens: 10}
	long := func(id string) PickInfo {
		r := userReq("x")
		r.Identity.SessionID = id
		return PickInfo{Request: r, InputTokens: 11}
	}
	// Short calls held in flight go to the least used: 0, 1, 2, then 0 again
	// (fewest in flight, then fewest picks, then lowest index).
	held := picks(t, b, repeat(short, 4), false)
	if fmt.Sprint(held) != "[0 1 2 0]" {
		t.Errorf("short calls held in flight = %v, want [0 1 2 0]", held)
	}
	// In flight now [2 1 1], picks [2 1 1]: session A's first long call goes to
	// r1, and stays there though r1 gets busier.
	if got := picks(t, b, []PickInfo{long("A"), long("A"), long("A")}, false); fmt.Sprint(got) != "[1 1 1]" {
		t.Errorf("session A long calls = %v, want [1 1 1]", got)
	}
	// Session B starts on the least used (r2); a short call of session A does
	// not stick: in flight [2 4 2], picks [2 4 2], so the lowest index, r0.
	if got := picks(t, b, []PickInfo{long("B")}, false); fmt.Sprint(got) != "[2]" {
		t.Errorf("session B = %v, want [2]", got)
	}
	shortA := long("A")
	shortA.InputTokens = 5
	if got := picks(t, b, []PickInfo{shortA}, false); fmt.Sprint(got) != "[0]" {
		t.Errorf("short call of session A = %v, want [0] (least used, not A's replica)", got)
	}
	// A's replica down: A moves to the least used and stays.
	hs[1].down.Store(true)
	if got := picks(t, b, []PickInfo{long("A"), long("A")}, false); fmt.Sprint(got) != "[2 2]" {
		t.Errorf("session A with r1 down = %v, want [2 2]", got)
	}
	hs[1].down.Store(false)
	// Bounded map: a third session evicts the least recently used (B).
	picks(t, b, []PickInfo{long("C")}, false)
	if n := p.len(); n != 2 {
		t.Errorf("sessions remembered = %d, want 2 (MaxSessions)", n)
	}
	if got := picks(t, b, []PickInfo{long("A")}, false); fmt.Sprint(got) != "[2]" {
		t.Errorf("session A after C = %v, want [2] (A was used more recently than B)", got)
	}
	// A long call without a session is treated as short.
	want := leastUsed(b.replicas)
	if pr, err := b.Pick(PickInfo{Request: userReq("x"), InputTokens: 99}); err != nil || pr.Index != want {
		t.Errorf("long call without session = %d, %v, want the least used %d", pr.Index, err, want)
	}
}

func TestPrefixAware(t *testing.T) {
	rs, hs := replicas(3)
	b := mustBalancer(t, rs, PrefixAware{BlockBytes: 4, BytesPerToken: 1, Window: time.Minute, RebalanceFactor: 2})
	t0 := windowStart(time.Minute)
	at := func(text string, d time.Duration) PickInfo { return PickInfo{Request: userReq(text), Now: t0.Add(d)} }
	place := func(info PickInfo) PickResult {
		t.Helper()
		pr, err := b.Pick(info)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	// Nothing cached: explore, C_g = 0 + 12 everywhere, the first wins.
	p1 := place(at("aaaabbbbcccc", 0))
	if p1.Index != 0 {
		t.Fatalf("first call = %d, want 0", p1.Index)
	}
	// Same prompt: all 12 bytes cached on r0 > 0 missing: exploit r0 (in
	// flight 1+1 is not above 2*(0+1)).
	p2 := place(at("aaaabbbbcccc", time.Second))
	if p2.Index != 0 {
		t.Errorf("repeat call = %d, want 0 (exploit)", p2.Index)
	}
	// A sibling sharing 8 of 12 bytes would exploit r0, but r0 has 2 in
	// flight: 3 > 2*(0+1), so it rebalances to the least loaded, r1.
	if got := place(at("aaaabbbbdddd", 2*time.Second)).Index; got != 1 {
		t.Errorf("sibling with r0 busy = %d, want 1 (rebalance)", got)
	}
	p1.Done(DoneInfo{})
	p2.Done(DoneInfo{})
	// A prompt sharing 4 of 16 bytes with r0 and r1: explore, C_g = Q_g +
	// miss_g with Q the tokens each replica missed so far: r0 12+12, r1 12+12,
	// r2 0+16: r2.
	if got := place(at("aaaaxxxxyyyyzzzz", 3*time.Second)).Index; got != 2 {
		t.Errorf("mostly new prompt = %d, want 2 (explore the least C)", got)
	}
	// The sibling again: r1 holds all of it now, r0 8 bytes: exploit r1.
	if got := place(at("aaaabbbbdddd", 4*time.Second)).Index; got != 1 {
		t.Errorf("sibling again = %d, want 1 (longest cached prefix)", got)
	}
	// r1 down: r0 still holds 8 of 12 bytes: exploit r0.
	hs[1].down.Store(true)
	if got := place(at("aaaabbbbdddd", 5*time.Second)).Index; got != 0 {
		t.Errorf("sibling with r1 down = %d, want 0", got)
	}
	hs[1].down.Store(false)
	// After the window H every index forgets its blocks: a new call leaves
	// only its own 2 blocks indexed.
	place(at("qqqqrrrr", 2*time.Minute))
	p := b.picker.(*prefixPicker)
	p.mu.Lock()
	total := 0
	for i := range p.state {
		total += p.state[i].index.len()
	}
	p.mu.Unlock()
	if total != 2 {
		t.Errorf("blocks indexed after the window = %d, want 2", total)
	}
}

func TestBlockIndex(t *testing.T) {
	x := newBlockIndex(4, 1<<62)
	for i := range 10 {
		x.touch(uint64(i), 1, int64(i), 0)
	}
	if x.len() != 4 {
		t.Fatalf("len after 10 touches = %d, want 4 (MaxBlocks)", x.len())
	}
	for i := range 10 {
		if got, want := x.has(uint64(i), 0), i >= 6; got != want {
			t.Errorf("has(%d) = %v, want %v (LRU keeps the last 4)", i, got, want)
		}
	}
	x.touch(6, 1, 20, 0) // refresh: 7 is now the oldest
	x.touch(10, 1, 21, 0)
	if x.has(7, 0) || !x.has(6, 0) {
		t.Error("after refreshing 6 and adding 10, want 7 evicted and 6 kept")
	}
	if x.has(8, 9) || !x.has(6, 9) {
		t.Error("has with cutoff 9: want 8 (sent at 8) stale and 6 (sent at 20) fresh")
	}
	x.expire(20)
	if x.len() != 2 {
		t.Errorf("len after expire(20) = %d, want 2", x.len())
	}
	// Reuse of freed nodes keeps the arena at MaxBlocks.
	for i := range 100 {
		x.touch(uint64(100+i), 1, 30, 0)
	}
	if len(x.nodes) > 4 {
		t.Errorf("node arena = %d, want <= 4", len(x.nodes))
	}
	// evictionCost: 2 oldest blocks, bytes 1, uses 1.
	if got := x.evictionCost(2, nil, 30); got != 2 {
		t.Errorf("evictionCost(2) = %v, want 2", got)
	}
	// Use counts slide with the window H (here 100 ns): 5 sends in epoch 0
	// weigh 5 then, 3.75 a quarter into epoch 1 (the part of epoch 0 still in
	// the window), 2+3.75 after 2 more sends in epoch 1, and 0 two epochs on.
	w := newBlockIndex(4, 100)
	for range 5 {
		w.touch(7, 1, 10, 0)
	}
	for _, c := range []struct {
		now   int64
		touch bool
		want  float64
	}{{50, false, 5}, {125, false, 3.75}, {125, true, 3.75 + 1}, {125, true, 3.75 + 2}, {250, false, 0.5 * 2}, {300, false, 0}} {
		if c.touch {
			w.touch(7, 1, c.now, c.now/100)
		}
		if got := w.evictionCost(1, nil, c.now); got != c.want {
			t.Errorf("evictionCost at %d (touched %v) = %v, want %v", c.now, c.touch, got, c.want)
		}
	}
	// longest over a chain.
	bs := []block{{hash: 1000}, {hash: 1001}, {hash: 1002}}
	y := newBlockIndex(10, 1<<62)
	y.touch(1001, 1, 5, 0)
	y.touch(1000, 1, 5, 0)
	if got := y.longest(bs, 0); got != 2 {
		t.Errorf("longest = %d, want 2", got)
	}
	if got := y.longest(bs, 6); got != 0 {
		t.Errorf("longest with cutoff after the sends = %d, want 0", got)
	}
}

func TestHashPrompt(t *testing.T) {
	a := hashPrompt(userReq("0123456789"), 4, nil)
	b := hashPrompt(userReq("01234567xx"), 4, nil)
	if len(a) != 3 || a[2].end != 10 || a[0].end != 4 {
		t.Fatalf("blocks of 10 bytes by 4 = %+v, want 3 ending at 4, 8, 10", a)
	}
	if a[0] != b[0] || a[1] != b[1] || a[2] == b[2] {
		t.Error("prompts sharing 8 bytes: want the first two block hashes equal and the third different")
	}
	sys := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleSystem, "0123")}}
	if c := hashPrompt(sys, 4, nil); c[0].hash == a[0].hash {
		t.Error("same text under another role hashes the same; want the role in the chain")
	}
}

func TestBalancerConcurrent(t *testing.T) {
	for _, s := range []Strategy{RoundRobin{}, LeastInFlight{Seed: 3}, LeastInFlight{}, Affinity{ShortTokens: 8, MaxSessions: 4}, PrefixAware{BlockBytes: 8, MaxBlocks: 16}} {
		rs, hs := replicas(4)
		b := mustBalancer(t, rs, s)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 200 {
					req := userReq(fmt.Sprintf("session prompt %d with a growing tail %d", g, i))
					req.Identity.SessionID = fmt.Sprint(g)
					hs[(g+i)%3].down.Store(i%7 == 0) // r3 stays up
					resp, err := b.Generate(context.Background(), req)
					if err != nil {
						t.Errorf("%T: %v", s, err)
						return
					}
					if resp.Route == "" {
						t.Errorf("%T: empty Route", s)
					}
				}
			})
		}
		wg.Wait()
		total := uint64(0)
		for _, r := range b.Replicas() {
			if r.InFlight() != 0 {
				t.Errorf("%T: replica %d in flight %d after all calls, want 0", s, r.Index, r.InFlight())
			}
			total += r.Picks()
		}
		if total != 1600 {
			t.Errorf("%T: picks = %d, want 1600", s, total)
		}
		switch p := b.picker.(type) {
		case *affinityPicker:
			if n := p.len(); n > 4 {
				t.Errorf("sessions remembered = %d, want <= 4 (MaxSessions)", n)
			}
		case *prefixPicker:
			for i := range p.state {
				if n := p.state[i].index.len(); n > 16 || len(p.state[i].index.nodes) > 16 {
					t.Errorf("replica %d index holds %d blocks in %d nodes, want <= 16 (MaxBlocks)", i, n, len(p.state[i].index.nodes))
				}
			}
		}
	}
}

func TestBalancerAllocs(t *testing.T) {
	req := userReq("hello")
	for _, s := range []Strategy{RoundRobin{}, LeastInFlight{}, LeastInFlight{Seed: 1}, Affinity{}} {
		rs, _ := replicas(8)
		b := mustBalancer(t, rs, s)
		if allocs := testing.AllocsPerRun(200, func() {
			pr, _ := b.Pick(PickInfo{Request: req})
			pr.Done(DoneInfo{})
		}); allocs != 0 {
			t.Errorf("%T Pick+Done allocs = %v, want 0", s, allocs)
		}
	}
	// Generate adds nothing to what the replica's Model allocates (here
	// nothing: it returns a shared Response), on success and on error.
	shared := &portico.Response{Text: "ok"}
	for _, m := range []portico.Model{
		portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return shared, nil }),
		portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return nil, errPanic }),
	} {
		b := mustBalancer(t, []portico.Route{{Name: "a", Model: m}, {Name: "b", Model: m}}, RoundRobin{})
		r, _ := NewRouter(RouterConfig{Routes: []portico.Route{{Name: "a", Model: m}}})
		if allocs := testing.AllocsPerRun(200, func() { b.Generate(context.Background(), req) }); allocs != 0 {
			t.Errorf("Balancer.Generate allocs = %v, want 0", allocs)
		}
		if allocs := testing.AllocsPerRun(200, func() { r.Generate(context.Background(), req) }); allocs != 0 {
			t.Errorf("Router.Generate allocs = %v, want 0", allocs)
		}
	}
	if _, err := NewBalancer(BalancerConfig{}); err == nil {
		t.Error("NewBalancer(no replicas) = nil error, want one")
	}
	if _, err := NewBalancer(BalancerConfig{Replicas: []portico.Route{{Name: "x"}}}); err == nil {
		t.Error("NewBalancer(nil Model) = nil error, want one")
	}
}

// Bad PrefixAware settings are a configuration error that NewBalancer
// returns (it used to panic inside NewPicker, despite returning an error);
// only NewPicker called directly, outside a Balancer, still panics.
func TestPrefixAwareSettings(t *testing.T) {
	rs, _ := replicas(2)
	if _, err := NewBalancer(BalancerConfig{Replicas: rs, Strategy: PrefixAware{RebalanceFactor: 1, MaxBlocks: math.MaxInt32}}); err != nil {
		t.Errorf("NewBalancer(PrefixAware at the edges of its ranges) = %v, want no error", err)
	}
	for _, s := range []PrefixAware{{BlockBytes: -1}, {RebalanceFactor: 0.5}, {Window: -time.Second}, {BytesPerToken: math.NaN()},
		{DecodeWeight: math.Inf(1)}, {RebalanceFactor: math.NaN()}, {MaxBlocks: 1 << 31}, {BlockBytes: 1 << 40}} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("NewBalancer(%+v) panicked: %v, want an error", s, r)
				}
			}()
			b, err := NewBalancer(BalancerConfig{Replicas: rs, Strategy: s})
			if b != nil || err == nil || !strings.HasPrefix(err.Error(), "route:") {
				t.Errorf("NewBalancer(%+v) = %v, %v; want nil and an error starting route:", s, b, err)
			}
			if verr := s.Validate(); verr == nil || err == nil || verr.Error() != err.Error() {
				t.Errorf("PrefixAware(%+v).Validate() = %v, want NewBalancer's error %v", s, verr, err)
			}
		}()
		func() {
			defer func() {
				if r, _ := recover().(string); r == "" || r[:6] != "route:" {
					t.Errorf("NewPicker(%+v) panic = %q, want a message starting route:", s, r)
				}
			}()
			s.NewPicker(nil)
		}()
	}
}

// TestPrefixAwareCostTerms pins each term of E2's explore cost C_g = Q_g + E_g
// + R_g with a pick that the term alone decides: without it the tie would go
// to r0 (the lowest index), or the other term would win.
func TestPrefixAwareCostTerms(t *testing.T) {
	t0 := windowStart(time.Minute)
	newB := func(max int) *Balancer {
		rs, _ := replicas(2)
		return mustBalancer(t, rs, PrefixAware{BlockBytes: 4, BytesPerToken: 1, Window: time.Minute, MaxBlocks: max, RebalanceFactor: 100})
	}
	// place picks text at t0+sec and ends the call at once with out output tokens.
	place := func(b *Balancer, text string, sec int, out int) int {
		t.Helper()
		pr, err := b.Pick(PickInfo{Request: userReq(text), Now: t0.Add(time.Duration(sec) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		pr.Done(DoneInfo{Usage: portico.Usage{OutputTokens: out}})
		return pr.Index
	}
	steps := func(name string, b *Balancer, texts []string, outs []int, want []int) {
		t.Helper()
		var got []int
		for k, s := range texts {
			got = append(got, place(b, s, k, outs[k]))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: picks %v, want %v", name, got, want)
		}
	}
	// Q's decode part: r0 and r1 each missed 8 prefill tokens, but r0's calls
	// answer 100 tokens and r1's 10: C = 8+100+8 = 116 against 8+10+8 = 26.
	// Without DecodeWeight*outAvg the tie would go to r0.
	steps("decode load", newB(0),
		[]string{"aaaabbbb", "ccccdddd", "eeeeffff"}, []int{100, 10, 0}, []int{0, 1, 1})
	// R, the replica's own prefill: r0 has load 12 and holds 8 of the 24
	// bytes (not more than half: explore), r1 has load 8 and holds nothing. C
	// = 12+16 = 28 on r0 against 8+24 = 32 on r1: the cached part wins over
	// the lighter load.
	steps("own prefill", newB(0),
		[]string{"aaaabbbbcccc", "xxxxyyyy", "aaaabbbbzzzzwwwwvvvvuuuu"}, []int{0, 0, 0}, []int{0, 1, 0})
	// E, the evictions: indexes of 4 blocks. r0 holds one 4-block prompt sent
	// by its one call; r1 two 2-block prompts of two calls; both missed 16
	// tokens. A new 4-block prompt would evict 4 blocks on either: on r0
	// blocks every call used (16 bytes * 1 use / 1 call = 16), on r1 blocks
	// half its calls used (16 * 1 / 2 = 8). C = 16+8+16 = 40 on r1 against
	// 16+16+16 = 48 on r0. (Steps 2 and 3: r0 costs 16+8+8 = 32, with 8 for
	// evicting 2 of its blocks, against 8 then 16 on r1.)
	steps("evictions", newB(4),
		[]string{"aaaabbbbccccdddd", "iiiijjjj", "kkkkllll", "mmmmnnnnooooqqqq"}, []int{0, 0, 0, 0}, []int{0, 1, 1, 1})
	// Control for the eviction case: with room for every block (no eviction)
	// Q and R tie, and the tie goes to r0.
	steps("no evictions", newB(100),
		[]string{"aaaabbbbccccdddd", "iiiijjjj", "kkkkllll", "mmmmnnnnooooqqqq"}, []int{0, 0, 0, 0}, []int{0, 1, 1, 0})
}

func TestFastmod(t *testing.T) {
	as := []uint32{0, 1, 2, 7, 255, 1 << 16, 1<<31 - 1, 1 << 31, 1<<32 - 2, 1<<32 - 1}
	for x := uint32(12345); len(as) < 2000; x = x*1664525 + 1013904223 {
		as = append(as, x)
	}
	for n := uint64(1); n <= 300; n++ {
		m := ^uint64(0)/n + 1
		for _, a := range as {
			if got, want := fastmod(a, m, n), uint64(a)%n; got != want {
				t.Fatalf("fastmod(%d, n=%d) = %d, want %d", a, n, got, want)
			}
		}
	}
}

// A call whose cached prefix sits at the LRU end of a full index evicts other
// prompts' blocks, not its own prefix: the prefix keeps its use counts, the
// eviction cost E_g is priced on the blocks really evicted, and the index
// ends with the prompt's block 0 most recent.
func TestPrefixAwareKeepsOwnPrefix(t *testing.T) {
	rs, _ := replicas(1)
	b := mustBalancer(t, rs, PrefixAware{BlockBytes: 4, BytesPerToken: 1, Window: time.Minute, MaxBlocks: 4})
	p := b.picker.(*prefixPicker)
	t0 := windowStart(time.Minute)
	for k, s := range []string{"aaaabbbb", "eeeeffff", "eeeeffff"} {
		pr, err := b.Pick(PickInfo{Request: userReq(s), Now: t0.Add(time.Duration(k) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		pr.Done(DoneInfo{})
	}
	// Index, most recent first: e f (2 uses each), a b (1 use each).
	P := hashPrompt(userReq("aaaabbbbgggghhhh"), 4, nil)
	x := &p.state[0].index
	// Two new blocks evict two others: e and f would cost 4*2 each; a and
	// b, the call's own prefix, are passed over.
	if got := x.evictionCost(2, P[:2], int64(mono.Of(t0.Add(3*time.Second)))); got != 16 {
		t.Errorf("evictionCost(2, keep the prefix a b) = %v, want 16 (e and f: 4 bytes * 2 uses each)", got)
	}
	if got := x.evictionCost(2, nil, int64(mono.Of(t0.Add(3*time.Second)))); got != 8 {
		t.Errorf("evictionCost(2, keep nothing) = %v, want 8 (a and b: 4 bytes * 1 use each)", got)
	}
	if _, err := b.Pick(PickInfo{Request: userReq("aaaabbbbgggghhhh"), Now: t0.Add(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	var order []uint64
	var uses []int32
	for i := x.head; i >= 0; i = x.nodes[i].next {
		order = append(order, x.nodes[i].hash)
		uses = append(uses, x.nodes[i].uses)
	}
	want := []uint64{P[0].hash, P[1].hash, P[2].hash, P[3].hash}
	if fmt.Sprint(order) != fmt.Sprint(want) || fmt.Sprint(uses) != "[2 2 1 1]" {
		t.Errorf("index after the call = %v uses %v, want the prompt's 4 blocks in order %v with uses [2 2 1 1]", order, uses, want)
	}
}

// TestFloorDiv: the prefix picker's epochs and load buckets are as wide on
// either side of 0, where a reading of mono.Now falls inside a synctest
// bubble: a truncating division would make the bucket around 0 twice as
// wide.
func TestFloorDiv(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{9, 10, 0}, {10, 10, 1}, {0, 10, 0}, {-1, 10, -1}, {-10, 10, -1}, {-11, 10, -2},
	} {
		if got := floorDiv(c.a, c.b); got != c.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// windowStart is a fixed time at which a reading of the picker's clock
// (internal/mono, whose origin is the process's start) begins a window of
// w: with a fixed wall time instead, a test's calls a few seconds apart
// straddled a window's boundary in one process start of twenty.
func windowStart(w time.Duration) time.Time {
	t := time.Unix(1_800_000_000, 0)
	r := mono.Of(t) % w
	if r < 0 {
		r += w
	}
	return t.Add(-r)
}
