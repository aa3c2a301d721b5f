package anthropic_test

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/stack"
)

// presetOver serves models a and b over one in-memory fake and returns the
// preset with its defaults and the deadline over them, a first: a's share
// is 9/16 of the deadline (4.5 s of 8 s, 67.5 s of 2 min).
func presetOver(t *testing.T, deadline time.Duration, a fakeanthropic.ModelConfig) (*fakeanthropic.Server, *stack.Stack) {
	t.Helper()
	s, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{a, {Name: "b"}}})
	cfg := stack.Config{Deadline: deadline}
	for _, name := range []string{"a", "b"} {
		cfg.Routes = append(cfg.Routes, stack.Route{Route: portico.Route{Name: name, Model: m, ModelName: name, Capabilities: portico.Capabilities{Provider: "p"}}})
	}
	st, err := stack.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// TestPresetThinkingIsProgress: the preset with its defaults and an 8 s
// deadline over two routes, the primary's share 4.5 s. A primary that
// thinks for 5 s before its text (80 s under a 2 min deadline, past its
// 67.5 s share), streaming extended thinking as
// Anthropic documents it ("Streaming thinking", docs.anthropic.com
// build-with-claude/extended-thinking: message_start, a "thinking"
// content_block_start, thinking_delta events, a signature_delta,
// content_block_stop, then the text block at index 1), a thinking_delta
// every 250 ms, is live: the adapter reports each event as progress, the
// primary answers at 5 s with one HTTP request, the secondary is never
// called, and no thought reaches OnChunk. A primary that sends only ping
// events ("event: ping", data {"type": "ping"}, the keep-alive the
// Messages streaming docs list) for 5 s is not: each of five requests is
// cut at its share and answered by the secondary, the fifth cut opens the
// primary's breaker (the preset's rule for a cut shorter than FaultAfter),
// and the sixth is answered at once without a call to the primary.
func TestPresetThinkingIsProgress(t *testing.T) {
	for _, tc := range []struct{ deadline, think time.Duration }{{8 * time.Second, 5 * time.Second}, {2 * time.Minute, 80 * time.Second}} {
		t.Run("thinking "+tc.think.String()+" of "+tc.deadline.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, st := presetOver(t, tc.deadline, fakeanthropic.ModelConfig{Name: "a", TTFT: tc.think, ThinkEvery: 250 * time.Millisecond})
				req := userReq("", "hello")
				var streamed strings.Builder
				req.OnChunk = func(c portico.Chunk) error { streamed.WriteString(c.Text); return nil }
				t0 := time.Now()
				resp, err := st.Generate(t.Context(), req)
				took := time.Since(t0)
				if err != nil || resp.Route != "a" || resp.Text == "" || streamed.String() != resp.Text || strings.Contains(resp.Text, "Step") ||
					took != tc.think || s.Count("a") != 1 || s.Count("b") != 0 {
					t.Fatalf("Generate = %+v, %v after %v, streamed %q, requests a %d b %d; want a's text only, after %v, 1 request to a, none to b",
						resp, err, took, streamed.String(), s.Count("a"), s.Count("b"), tc.think)
				}
			})
		})
	}
	t.Run("pings", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, st := presetOver(t, 8*time.Second, fakeanthropic.ModelConfig{Name: "a", TTFT: 5 * time.Second, PingEvery: 250 * time.Millisecond})
			var took []time.Duration
			opened := -1
			for i := range 6 {
				req := userReq("", "hello")
				req.OnChunk = func(portico.Chunk) error { return nil }
				t0 := time.Now()
				resp, err := st.Generate(t.Context(), req)
				took = append(took, time.Since(t0))
				if err != nil || resp.Route != "b" {
					t.Fatalf("request %d: Generate = %+v, %v; want b's answer", i+1, resp, err)
				}
				if opened < 0 && st.Breaker("a").State() == breaker.Open {
					opened = i + 1
				}
			}
			cut := 4500 * time.Millisecond
			want := []time.Duration{cut, cut, cut, cut, cut, 0}
			t.Logf("latencies %v, primary saw %d requests, breaker open after request %d", took, s.Count("a"), opened)
			if !slices.Equal(took, want) || s.Count("a") != 5 || s.Count("b") != 6 || opened != 5 {
				t.Fatalf("latencies %v, requests a %d b %d, open after request %d; want %v, 5, 6, 5", took, s.Count("a"), s.Count("b"), opened, want)
			}
		})
	})
}
