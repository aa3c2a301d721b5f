package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	openaisdk "github.com/openai/openai-go/v3/option"

	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/stack"
)

// poolKeys are the key pool's labels, which name its keys everywhere
// (routes, hops, breakers), and its weights.
var (
	poolKeys    = [3]string{"key-1", "key-2", "key-3"}
	poolWeights = [3]float64{2, 1, 1}
)

// poolStorm is the Retry-After of the storm key's 429s.
const poolStorm = time.Second

// poolPhase is what one phase of the key pool run saw, per key.
type poolPhase struct {
	calls, answers [3]int
	moved          int // calls a key's 429 moved on to another key
	skipped        int // keys skipped while cooling down
	failed         int // requests that failed
}

// runPool is the key pool part of -route: one model behind three API
// keys weighted 2:1:1 (stack.Pool), one fake OpenAI server per key,
// n requests in three phases, c at once. In the middle phase key-2's
// server answers every call 429 with retry-after-ms 1000: its requests
// move on to the other keys at once, and it is cooled down and skipped
// until its Retry-After (the calls already in flight when the storm
// began are its only calls). The last phase starts once the
// Retry-After has passed: key-2 takes its share again.
func runPool(ctx context.Context, n, c int) ([3]poolPhase, error) {
	var res [3]poolPhase
	var storm atomic.Bool
	var keys []stack.Key
	var counts [3]func() int
	for i, label := range poolKeys {
		key, srv, err := poolKey(i, label, &storm)
		if err != nil {
			return res, err
		}
		defer srv.Close()
		keys = append(keys, key)
		counts[i] = func() int { return srv.Count("m") }
	}
	s, index, err := poolStack(keys)
	if err != nil {
		return res, err
	}
	for p := range res {
		storm.Store(p == 1)
		runPoolPhase(ctx, &res[p], s, index, counts, n/3, c)
		if p == 1 {
			time.Sleep(poolStorm + 20*time.Millisecond) // the storm is over once key-2's Retry-After has passed
		}
	}
	return res, nil
}

// poolKey is key i of the pool, labelled label, and its fake server
// (for the caller to close): healthy, but key-2's answers every call 429
// while storm is set.
func poolKey(i int, label string, storm *atomic.Bool) (stack.Key, *fakeopenai.Server, error) {
	mc := fakeopenai.ModelConfig{Name: "m", Latency: 5 * time.Millisecond, OutputTokens: outputTokens}
	healthy, err := fakeopenai.New(fakeopenai.Config{Models: []fakeopenai.ModelConfig{mc}})
	if err != nil {
		return stack.Key{}, nil, err
	}
	mc.Faults = []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 429, Fraction: 1, RetryAfterMsHeader: poolStorm}}
	stormy, err := fakeopenai.New(fakeopenai.Config{Models: []fakeopenai.ModelConfig{mc}})
	if err != nil {
		return stack.Key{}, nil, err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i == 1 && storm.Load() {
			stormy.Handler().ServeHTTP(w, r)
			return
		}
		healthy.Handler().ServeHTTP(w, r)
	})
	srv, err := fakeopenai.StartPipe(fakeopenai.Config{Handler: h})
	if err != nil {
		return stack.Key{}, nil, err
	}
	secret := fmt.Sprintf("sk-fake-%d", i) // never printed: the label names the key
	m := openai.New(openai.Config{Model: "m"}, openaisdk.WithBaseURL(srv.BaseURL()), openaisdk.WithAPIKey(secret), openaisdk.WithHTTPClient(srv.Client()))
	return stack.Key{Label: label, Model: m, Weight: poolWeights[i]}, srv, nil
}

// poolStack is the stack over keys' pool, and each of its routes' index
// by name.
func poolStack(keys []stack.Key) (*stack.Stack, map[string]int, error) {
	r := routeOf(dial.OpenAI, &endpoint{}, nil)
	r.Name, r.Model = "", nil
	routes, g, err := stack.Pool("gpt", r, keys...)
	if err != nil {
		return nil, nil, err
	}
	s, err := stack.New(stack.Config{Routes: routes, Groups: []stack.Group{g}, Deadline: requestDeadline})
	if err != nil {
		return nil, nil, err
	}
	index := map[string]int{}
	for i, rt := range routes {
		index[rt.Name] = i
	}
	return s, index, nil
}

// runPoolPhase sends n requests through s, c at once, and counts in ph
// each key's calls (read from counts) and answers (its route's index in
// index), the hops moved on after an error or skipped cooling down, and
// the failures.
func runPoolPhase(ctx context.Context, ph *poolPhase, s *stack.Stack, index map[string]int, counts [3]func() int, n, c int) {
	var mu sync.Mutex
	var before [3]int
	for k := range counts {
		before[k] = counts[k]()
	}
	each(n, c, func() {
		resp, err := s.Generate(ctx, routeReq)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			ph.failed++
			return
		}
		ph.answers[index[resp.Route]]++
		for _, h := range resp.Hops {
			switch {
			case h.Err != nil:
				ph.moved++
			case h.Reason == "cooldown":
				ph.skipped++
			}
		}
	})
	for k := range counts {
		ph.calls[k] = counts[k]() - before[k]
	}
}

func printPool(out io.Writer, res [3]poolPhase, n int) {
	fmt.Fprintf(out, "key pool (stack.Pool) over %s, %s, %s weighted 2:1:1, one fake server per key; %s answers 429 (retry-after-ms %d) in the storm, %d requests a phase:\n",
		poolKeys[0], poolKeys[1], poolKeys[2], poolKeys[1], poolStorm.Milliseconds(), n/3)
	for p, name := range []string{"before", "storm", "after"} {
		ph := res[p]
		fmt.Fprintf(out, "  %-6s calls %d:%d:%d, answered %d:%d:%d, moved on after a 429 %d, key skipped cooling down %d, failed %d\n", name,
			ph.calls[0], ph.calls[1], ph.calls[2], ph.answers[0], ph.answers[1], ph.answers[2], ph.moved, ph.skipped, ph.failed)
	}
}
