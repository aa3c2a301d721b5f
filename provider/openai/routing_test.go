package openai_test

import (
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/route"
	"github.com/portico-llm/portico/stack"
)

// These tests run package route's routers as the preset builds them
// (stack.Config.Kind), each route with its limiter, breaker, retry and
// validate, over this adapter and fakeopenai in memory: seed 000's
// cascade figures and seed 002's prefix-aware placement, through
// stack.New.

// TestPresetCascadeSeed000 is route's TestCascadeSeed000 through the
// preset: a weak step priced c1 = 1 a request (8 output tokens at 1/8)
// whose answer is accepted with probability u1 = 0.8 (the scorer draws
// from the package test's generator, PCG(0, 1), in the same order), a
// strong one priced c2 = 10. E[C] = c1 + (1-u1) c2 = 3 a request: 30
// strong-call units per 100 against 100 all strong. The realised mean
// over 10,000 requests is the package test's, 3.048 (30.48 per 100),
// within 4 standard errors (0.16) of E[C].
func TestPresetCascadeSeed000(t *testing.T) {
	const n = 10000
	sw, weak := provider(t, "cheap", fakeopenai.ModelConfig{Name: "weak", OutputTokens: 8})
	ss, strong := provider(t, "dear", fakeopenai.ModelConfig{Name: "strong", OutputTokens: 8})
	weak[0].Capabilities.OutputPrice, strong[0].Capabilities.OutputPrice = 1.0/8, 10.0/8
	rng := rand.New(rand.NewPCG(0, 1))
	accept := func(*portico.Request, *portico.Response) float64 {
		if rng.Float64() < 0.8 {
			return 1
		}
		return 0
	}
	s := preset(t, stack.Config{Kind: stack.Cascade{Steps: []route.Step{{Accept: accept, Threshold: 0.5}, {}}}}, weak, strong)
	total, rejected := 0.0, 0
	for range n {
		resp, err := s.Generate(t.Context(), userReq("", "q"))
		if err != nil {
			t.Fatal(err)
		}
		total += resp.Cost
		if resp.Route == "strong" {
			rejected++
			if resp.Cost != 11 || len(resp.Hops) != 1 || !errors.Is(resp.Hops[0].Err, route.ErrNotAccepted) {
				t.Fatalf("escalated answer: Cost %v, hops %+v; want 11 after weak's answer not accepted", resp.Cost, resp.Hops)
			}
		} else if resp.Cost != 1 {
			t.Fatalf("weak's answer costs %v, want 1", resp.Cost)
		}
	}
	mean := total / n
	t.Logf("seed 000 through the preset: cascade %.2f strong-call units per 100 requests (E[C] = %.4f a request, seed 3); weak called %d, strong %d",
		100*mean/10, mean, sw.Count("weak"), ss.Count("strong"))
	if math.Abs(mean-3.048) > 1e-9 || sw.Count("weak") != n || ss.Count("strong") != rejected {
		t.Errorf("mean cost %.4f a request, weak called %d, strong %d for %d rejected; want 3.048 (30.48 per 100), %d, %d", mean, sw.Count("weak"), ss.Count("strong"), rejected, n, rejected)
	}
	if se := 10 * math.Sqrt(0.8*0.2/n); math.Abs(mean-3) > 4*se {
		t.Errorf("mean cascade cost %.4f, want 3 ± %.2f (4 standard errors)", mean, 4*se)
	}
}

// TestPresetWeightedSplit: Kind Weighted{7, 3} over two providers sends
// 70% of 1,000 requests to the first, within the binomial bound (700 ±
// 65.2); each provider serves what the split sent it.
func TestPresetWeightedSplit(t *testing.T) {
	const n = 1000
	sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a"})
	sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
	s := preset(t, stack.Config{Kind: stack.Weighted{7, 3}}, a, b)
	by := map[string]int{}
	for range n {
		resp, err := s.Generate(t.Context(), userReq("", "hello"))
		if err != nil {
			t.Fatal(err)
		}
		by[resp.Route]++
	}
	t.Logf("Weighted{7, 3} through the preset: a %d, b %d of %d (bound 700 ± %.1f)", by["a"], by["b"], n, binom.Bound(n, 0.7))
	if !binom.Within(by["a"], n, 0.7) || sa.Count("a") != by["a"] || sb.Count("b") != by["b"] {
		t.Errorf("answers %v, calls a %d b %d; want 700 ± %.1f by a, one call per answer", by, sa.Count("a"), sb.Count("b"), binom.Bound(n, 0.7))
	}
}

// prefixCache is a replica's prompt cache for fakeopenai's Handler: an
// LRU of the hashes of the prompt's prefixes at every 256 bytes (of the
// request's messages, role and raw content), room for capBlocks. It
// answers "ok" with usage.prompt_tokens_details.cached_tokens the tokens
// of the cached leading blocks (4 bytes a token), then caches the prompt.
// It shares nothing with the picker's index but the idea.
type prefixCache struct {
	mu        sync.Mutex
	capBlocks int
	lru       list.List // of uint64, front = most recent
	m         map[uint64]*list.Element
}

func (c *prefixCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var sb strings.Builder
	for _, m := range body.Messages {
		sb.WriteString(m.Role)
		sb.WriteByte(0)
		sb.Write(m.Content)
		sb.WriteByte(1)
	}
	s := sb.String()
	in := (len(s) + 3) / 4
	hit := c.lookup(s)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`, in, in+1, min(hit*256/4, in))
}

// lookup returns how many leading blocks of s are cached, and caches s.
func (c *prefixCache) lookup(s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[uint64]*list.Element)
	}
	h := fnv.New64a()
	var hashes []uint64
	for k := 0; k+256 <= len(s); k += 256 {
		h.Write([]byte(s[k : k+256]))
		hashes = append(hashes, h.Sum64())
	}
	hit := 0
	for _, x := range hashes {
		if _, ok := c.m[x]; !ok {
			break
		}
		hit++
	}
	for k := len(hashes) - 1; k >= 0; k-- {
		if e, ok := c.m[hashes[k]]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		if c.lru.Len() >= c.capBlocks {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.m, old.Value.(uint64))
		}
		c.m[hashes[k]] = c.lru.PushFront(hashes[k])
	}
	return hit
}

// agentHitRatio runs an agent workload through a preset balancing over 4
// replicas with strategy st, each an adapter over a fakeopenai whose
// Handler is a prefixCache, and returns the share of input tokens the
// replicas had cached. The workload (seeded): 24 programs with a shared
// 3,000-byte system prompt and a task of 500 to 3,000 bytes, each making
// 4 to 9 calls whose prompt grows by the answer and a tool result of 1,000
// to 4,000 bytes; the next call is drawn among the programs with calls
// left.
func agentHitRatio(t *testing.T, st route.Strategy) float64 {
	t.Helper()
	var routes []stack.Route
	for i := range 4 {
		_, m := startPipe(t, fakeopenai.Config{Handler: &prefixCache{capBlocks: 1500}})
		routes = append(routes, stack.Route{Route: portico.Route{Name: fmt.Sprintf("r%d", i), Model: m, ModelName: "m"}})
	}
	s := preset(t, stack.Config{Kind: stack.Balance{Strategy: st}}, routes)
	rng := rand.New(rand.NewPCG(2026, 12))
	text := func(n int) string {
		const words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
		var b strings.Builder
		for b.Len() < n {
			i := rng.IntN(len(words) - 10)
			b.WriteString(words[i : i+8])
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		return b.String()[:n]
	}
	type program struct {
		msgs  []portico.Message
		calls int
		id    string
	}
	system := portico.Text(portico.RoleSystem, "You are a coding agent. "+text(3000))
	var ps []*program
	for i := range 24 {
		ps = append(ps, &program{id: fmt.Sprint(i), calls: 4 + rng.IntN(6),
			msgs: []portico.Message{system, portico.Text(portico.RoleUser, text(500+rng.IntN(2500)))}})
	}
	var in, cached float64
	for len(ps) > 0 {
		k := rng.IntN(len(ps))
		p := ps[k]
		req := &portico.Request{Messages: p.msgs, Identity: portico.Identity{SessionID: p.id}}
		resp, err := s.Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		in += float64(resp.Usage.InputTokens)
		cached += float64(resp.Usage.CachedInputTokens)
		if p.calls--; p.calls == 0 {
			ps = append(ps[:k], ps[k+1:]...)
			continue
		}
		p.msgs = append(p.msgs[:len(p.msgs):len(p.msgs)], portico.Text(portico.RoleAssistant, resp.Text), portico.Text(portico.RoleTool, text(1000+rng.IntN(3000))))
	}
	return cached / in
}

// TestPresetPrefixAwareHits reproduces seed 002's point through the
// preset: over four replicas whose engines cache prompt prefixes,
// Preble's E2 (route.PrefixAware) and Autellix's affinity find the
// programs' prefixes cached far more often than round robin, which
// scatters each program's calls: at least 0.2 more of the input tokens,
// as route's TestSimulation asserts of the package. The workload is
// sequential and seeded: the figures are 0.484, 0.747 and 0.788, pinned
// within 0.02 (the hashed blocks are the adapter's JSON, whose shape may
// change).
func TestPresetPrefixAwareHits(t *testing.T) {
	rr := agentHitRatio(t, route.RoundRobin{})
	aff := agentHitRatio(t, route.Affinity{})
	e2 := agentHitRatio(t, route.PrefixAware{MaxBlocks: 1500})
	t.Logf("hit ratio through the preset: round robin %.3f, affinity %.3f, prefix-aware (E2) %.3f", rr, aff, e2)
	if e2-rr < 0.2 || aff-rr < 0.2 {
		t.Errorf("hit ratio: E2 %.3f, affinity %.3f, round robin %.3f; want E2 and affinity at least 0.2 above round robin", e2, aff, rr)
	}
	for _, c := range []struct{ got, want float64 }{{rr, 0.484}, {aff, 0.747}, {e2, 0.788}} {
		if math.Abs(c.got-c.want) > 0.02 {
			t.Errorf("hit ratio %.4f, want %.3f ± 0.02", c.got, c.want)
		}
	}
}
