package openai_test

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/stack"
)

// TestPresetReasoningIsProgress: the preset with its defaults and an 8 s
// deadline over two routes, the primary's share 4.5 s (9/16). A primary
// that reasons for 5 s before its text (80 s under a 2 min deadline, past
// its 67.5 s share), a chunk whose delta carries only
// reasoning every 250 ms (the OpenAI-compatible shape: "reasoning_content"
// as DeepSeek's API documents for deepseek-reasoner, "reasoning" as
// OpenRouter's and Ollama's), is live: the adapter reports each as
// progress, the primary answers at 5 s with one HTTP request, the
// secondary is never called, and no reasoning reaches OnChunk. A primary
// that sends only SSE comments (": keep-alive") for 5 s is not: each of
// five requests is cut at its share and answered by the secondary, the
// fifth cut opens the primary's breaker (the preset's rule for a cut
// shorter than FaultAfter: a run of five with no answer between), and the
// sixth is answered at once without a call to the primary.
func TestPresetReasoningIsProgress(t *testing.T) {
	for _, tc := range []struct {
		field           string
		deadline, think time.Duration
	}{{"reasoning_content", 8 * time.Second, 5 * time.Second}, {"reasoning", 8 * time.Second, 5 * time.Second}, {"reasoning_content", 2 * time.Minute, 80 * time.Second}} {
		t.Run(tc.field+" "+tc.think.String()+" of "+tc.deadline.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rs := provider(t, "p", fakeopenai.ModelConfig{Name: "a", TTFT: tc.think, ThinkEvery: 250 * time.Millisecond, ReasoningField: tc.field},
					fakeopenai.ModelConfig{Name: "b"})
				st := preset(t, stack.Config{Deadline: tc.deadline}, rs)
				req := userReq("", "hello")
				var streamed strings.Builder
				req.OnChunk = func(c portico.Chunk) error { streamed.WriteString(c.Text); return nil }
				t0 := time.Now()
				resp, err := st.Generate(t.Context(), req)
				took := time.Since(t0)
				if err != nil || resp.Route != "a" || resp.Text == "" || streamed.String() != resp.Text || strings.Contains(resp.Text, "step") ||
					took != tc.think || s.Count("a") != 1 || s.Count("b") != 0 {
					t.Fatalf("Generate = %+v, %v after %v, streamed %q, requests a %d b %d; want a's text only, after %v, 1 request to a, none to b",
						resp, err, took, streamed.String(), s.Count("a"), s.Count("b"), tc.think)
				}
			})
		})
	}
	t.Run("keep-alive comments", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, rs := provider(t, "p", fakeopenai.ModelConfig{Name: "a", TTFT: 5 * time.Second, KeepAliveEvery: 250 * time.Millisecond},
				fakeopenai.ModelConfig{Name: "b"})
			st := preset(t, stack.Config{Deadline: 8 * time.Second}, rs)
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
			want := []time.Duration{4500 * time.Millisecond, 4500 * time.Millisecond, 4500 * time.Millisecond, 4500 * time.Millisecond, 4500 * time.Millisecond, 0}
			t.Logf("latencies %v, primary saw %d requests, breaker open after request %d", took, s.Count("a"), opened)
			if !slices.Equal(took, want) || s.Count("a") != 5 || s.Count("b") != 6 || opened != 5 {
				t.Fatalf("latencies %v, requests a %d b %d, open after request %d; want %v, 5, 6, 5", took, s.Count("a"), s.Count("b"), opened, want)
			}
		})
	})
}
