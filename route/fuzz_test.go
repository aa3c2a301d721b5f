package route

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
)

// FuzzHeuristicScore checks the one-pass keyword scan against a plain search
// for each keyword, and that scores stay in (0, 1).
func FuzzHeuristicScore(f *testing.F) {
	for _, s := range []string{"", "Prove it STEP BY STEP?", "pprove derivederive ```x```", "optimiZe the algorithm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var found [len(heuristicKeywords)]bool
		got := countKeywords(s, &found, len(heuristicKeywords))
		low := strings.Map(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, s)
		want := 0
		for _, kw := range heuristicKeywords {
			if strings.Contains(low, kw) {
				want++
			}
		}
		if got != want {
			t.Errorf("countKeywords(%q) = %d, want %d", s, got, want)
		}
		if sc := HeuristicScore(userReq(s)); !(sc > 0 && sc < 1) {
			t.Errorf("HeuristicScore(%q) = %v, want in (0, 1)", s, sc)
		}
		// Blocks of the prompt end in increasing order at its length.
		bs := hashPrompt(userReq(s), 7, nil)
		prev := 0
		for _, b := range bs {
			if b.end <= prev || b.end-prev > 7 {
				t.Fatalf("block ends %v not increasing by at most 7", bs)
			}
			prev = b.end
		}
		if prev != len(s) {
			t.Errorf("last block end = %d, want %d", prev, len(s))
		}
	})
}

// FuzzPrefixIndex drives the prefix-aware picker with prompts made of a few
// shared blocks (agent-like: common prefixes, growing tails) against small
// indexes, and checks after every pick that each replica's index stays within
// MaxBlocks, that its LRU list and map agree, and that presence along every
// prompt's chain is monotone, so the binary search in longest equals a
// linear scan.
func FuzzPrefixIndex(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 1, 2, 4, 0, 1, 5, 255, 0, 1, 2, 3, 4})
	f.Add([]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 255, 255, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const maxBlocks = 5
		rs, hs := replicas(3)
		b := mustBalancer(t, rs, PrefixAware{BlockBytes: 4, BytesPerToken: 1, Window: time.Minute, MaxBlocks: maxBlocks, RebalanceFactor: 1.5})
		p := b.picker.(*prefixPicker)
		t0 := windowStart(time.Minute)
		var prompt []byte
		var held []PickResult
		for k, op := range ops {
			switch {
			case op == 255: // start a new prompt
				prompt = prompt[:0]
				continue
			case op >= 200: // toggle a replica's health, end a held call
				hs[int(op)%3].down.Store(!hs[int(op)%3].down.Load())
				if len(held) > 0 {
					held[0].Done(DoneInfo{Usage: portico.Usage{OutputTokens: int(op)}})
					held = held[1:]
				}
				continue
			}
			prompt = append(prompt, "abcdefgh"[op%8], "abcdefgh"[op%8], "abcdefgh"[op/8%8], 'x')
			pr, err := b.Pick(PickInfo{Request: userReq(string(prompt)), Now: t0.Add(time.Duration(k) * 7 * time.Second)})
			if err != nil {
				if !errors.Is(err, ErrNoRoute) {
					t.Fatalf("Pick: %v", err)
				}
				continue
			}
			held = append(held, pr)
			bs := hashPrompt(userReq(string(prompt)), 4, nil)
			p.mu.Lock()
			for g := range p.state {
				x := &p.state[g].index
				if x.len() > maxBlocks || len(x.nodes) > maxBlocks {
					t.Fatalf("replica %d index: %d blocks in %d nodes, want <= %d", g, x.len(), len(x.nodes), maxBlocks)
				}
				n := 0
				for i := x.head; i >= 0; i = x.nodes[i].next {
					if j, ok := x.m[x.nodes[i].hash]; !ok || j != i {
						t.Fatalf("replica %d: list node %d not in the map", g, i)
					}
					n++
				}
				if n != x.len() {
					t.Fatalf("replica %d: list of %d nodes, map of %d", g, n, x.len())
				}
				linear := 0
				for linear < len(bs) && x.has(bs[linear].hash, 0) {
					linear++
				}
				for k := linear; k < len(bs); k++ {
					if x.has(bs[k].hash, 0) {
						t.Fatalf("replica %d holds block %d of the prompt but not block %d: presence not monotone", g, k, linear)
					}
				}
				if got := x.longest(bs, 0); got != linear {
					t.Fatalf("replica %d: longest = %d, linear scan %d", g, got, linear)
				}
			}
			p.mu.Unlock()
		}
		for _, pr := range held {
			pr.Done(DoneInfo{})
		}
	})
}
