package openai_test

import (
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/stack"
)

// TestPresetCutsAHungPrimary: the preset with its defaults over two
// providers, through the OpenAI SDK: a primary whose server takes every
// request and never writes a byte back (FaultStallBeforeHeaders), and a
// healthy secondary answering in 30 ms. Twenty requests one after the
// other, at deadlines of 1 s, 10 s, 2 min and 10 min, plain and streamed: all are
// answered by the secondary, the first five after the primary's share
// (9/16 of the deadline), the others in 30 ms; the hung server sees five
// calls, and the primary's breaker is open after the fifth request. Before
// a short share's cut counted (portico.ErrUnanswered) the server saw all
// 20 at 1 s and 10 s, each request waiting its share.
func TestPresetCutsAHungPrimary(t *testing.T) {
	for _, c := range []struct {
		deadline, share time.Duration
	}{{time.Second, 562500 * time.Microsecond}, {10 * time.Second, 5625 * time.Millisecond}, {2 * time.Minute, 67500 * time.Millisecond}, {10 * time.Minute, 337500 * time.Millisecond}} {
		for _, stream := range []bool{false, true} {
			name := c.deadline.String()
			if stream {
				name += " streamed"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a", Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStallBeforeHeaders, Fraction: 1}}})
					sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b", Latency: 30 * time.Millisecond})
					s := preset(t, stack.Config{Deadline: c.deadline}, a, b)
					var took []time.Duration
					answered, opened := 0, -1
					for i := range 20 {
						req := userReq("", "hello")
						if stream {
							req.OnChunk = func(portico.Chunk) error { return nil }
						}
						t0 := time.Now()
						resp, err := s.Generate(t.Context(), req)
						took = append(took, time.Since(t0))
						if err == nil && resp.Route == "b" {
							answered++
						}
						if opened < 0 && s.Breaker("a").State() == breaker.Open {
							opened = i + 1
						}
					}
					sorted := slices.Sorted(slices.Values(took))
					p50, most := sorted[len(sorted)/2], sorted[len(sorted)-1]
					t.Logf("deadline %v: %d of 20 answered, latency p50 %v max %v, hung server saw %d calls, breaker open after request %d",
						c.deadline, answered, p50, most, sa.Count("a"), opened)
					if want := c.share + 30*time.Millisecond; answered != 20 || p50 != 30*time.Millisecond || most != want || sa.Count("a") != 5 || sb.Count("b") != 20 || opened != 5 {
						t.Errorf("%d answered, p50 %v, max %v, hung server %d calls, secondary %d, open after request %d; want 20, 30ms, %v, 5, 20, 5",
							answered, p50, most, sa.Count("a"), sb.Count("b"), opened, want)
					}
				})
			})
		}
	}
}

// TestPresetKeepsAThinkingStream: a reasoning model's stream that sends
// its role delta after 3 s, then nothing for 5 s while it thinks, then its
// text, under the preset's defaults with a 10 s deadline and a second
// provider: the role delta is progress (the adapter reports every event
// that reaches no OnChunk, adapt.Alive), and the primary's share
// (5.625 s) bounds each gap between signs of progress, not the time to
// the text, so the primary answers whole at 8 s. Before, only text
// counted: the share cut the thinking model at 5.625 s and the secondary
// answered. (Silent for longer than its share, after its role delta or
// not, a stream is cut: stack's TestPresetCutsAStreamThatFallsSilent.)
func TestPresetKeepsAThinkingStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		think := func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			send := func(e string) {
				_, _ = w.Write([]byte("data: " + e + "\n\n"))
				w.(http.Flusher).Flush()
			}
			for _, e := range []struct {
				after time.Duration
				delta string
			}{{3 * time.Second, `{"role":"assistant","content":""}`}, {5 * time.Second, `{"content":"thought"}`}} {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(e.after):
				}
				send(delta(e.delta))
			}
			send(finish("stop"))
			send("[DONE]")
		}
		_, a := startPipe(t, fakeopenai.Config{Handler: http.HandlerFunc(think)})
		sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b"})
		ra := stack.Route{Route: portico.Route{Name: "a", Model: a, ModelName: "m", Capabilities: portico.Capabilities{Provider: "p1"}}}
		s := preset(t, stack.Config{Deadline: 10 * time.Second}, []stack.Route{ra}, b)
		req := userReq("", "hello")
		var got string
		req.OnChunk = func(c portico.Chunk) error { got += c.Text; return nil }
		t0 := time.Now()
		resp, err := s.Generate(t.Context(), req)
		if err != nil || resp.Route != "a" || resp.Text != "thought" || got != "thought" || time.Since(t0) != 8*time.Second || sb.Count("b") != 0 {
			t.Fatalf("Generate = %+v, %v after %v, %q streamed, %d calls to b; want a's whole answer after 8s, b not called", resp, err, time.Since(t0), got, sb.Count("b"))
		}
	})
}
