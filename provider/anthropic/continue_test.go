package anthropic_test

import (
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/stack"
)

// A stream cut after k chunks on one Anthropic route is continued on
// another as a prefill, which the Messages API continues natively: the
// caller's chunks join into the final text, the answer the first route
// would have given uncut, and the continuation's input is the prompt plus
// the prefix (its words and its message's 3).
func TestContinueAfterCutAnthropic(t *testing.T) {
	model := func(script ...fakeanthropic.Fault) fakeanthropic.ModelConfig {
		return fakeanthropic.ModelConfig{Name: "m", TTFT: 300 * time.Millisecond, TokensPerSecond: 100, OutputTokens: 150, Script: script}
	}
	for _, k := range []int{1, 10, 100} {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, a := startPipe(t, fakeanthropic.Config{Seed: 7, Models: []fakeanthropic.ModelConfig{model(fakeanthropic.Fault{Kind: fakeanthropic.FaultDisconnect, AfterChunks: k})}})
				srvB, b := startPipe(t, fakeanthropic.Config{Seed: 7, Models: []fakeanthropic.ModelConfig{model()}})
				whole, err := b.Generate(t.Context(), userReq("m", "tell me a long story"))
				if err != nil {
					t.Fatal(err)
				}
				caps := portico.Capabilities{Continuation: portico.ContinuePrefill}
				s, err := stack.New(stack.Config{Routes: []stack.Route{
					{Route: portico.Route{Name: "a", Model: a, Capabilities: caps}},
					{Route: portico.Route{Name: "b", Model: b, Capabilities: caps}},
				}})
				if err != nil {
					t.Fatal(err)
				}
				req := userReq("m", "tell me a long story")
				req.ContinueOnBreak = true
				var chunks []string
				req.OnChunk = func(c portico.Chunk) error { chunks = append(chunks, c.Text); return nil }
				resp, err := s.Generate(t.Context(), req)
				if err != nil {
					t.Fatalf("Generate = %v", err)
				}
				if got := strings.Join(chunks, ""); got != resp.Text || resp.Text != whole.Text {
					t.Fatalf("chunks join to %q,\nText %q,\nwant both the uncut %q", got, resp.Text, whole.Text)
				}
				if h := resp.Hops; resp.Route != "b" || len(h) != 1 || h[0].Route != "a" || h[0].Chunks != k {
					t.Errorf("Route %q, Hops %+v; want b after a broke at %d chunks", resp.Route, h, k)
				}
				body := string(srvB.Requests()[1].Body)
				prefix := strings.Join(strings.Fields(whole.Text)[:k], " ")
				if !strings.Contains(body, `"role":"assistant"`) || !strings.Contains(body, prefix) {
					t.Errorf("continuation body %s, want the prefix as the assistant's message", body)
				}
			})
		})
	}
}
