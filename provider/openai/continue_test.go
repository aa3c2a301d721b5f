package openai_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// contModel is the model both fake servers of the continuation tests serve:
// 150 words at 100 tokens/s after a 300 ms TTFT, the same answer on each
// (one seed), so that a continuation on the second server can be checked
// against the answer the first would have given uncut.
func contModel(script ...fakeopenai.Fault) fakeopenai.ModelConfig {
	return fakeopenai.ModelConfig{Name: "m", TTFT: 300 * time.Millisecond, TokensPerSecond: 100, OutputTokens: 150, Script: script}
}

// contStack builds the stack of the continuation tests: route "a" on the
// first server, "b" on the second continuing as mode says (under prefill,
// its adapter sends continue_final_message, the vLLM dialect), each with
// the stack's default layers and retry's Timeouts.
func contStack(t *testing.T, a, b *openai.Model, mode portico.Continuation, to retry.Timeouts) *stack.Stack {
	t.Helper()
	one := breaker.Config{Trip: func(c breaker.Counts) string {
		if c.Failures > 0 {
			return "a failure"
		}
		return ""
	}}
	s, err := stack.New(stack.Config{Routes: []stack.Route{
		{Route: portico.Route{Name: "a", Model: a, Capabilities: portico.Capabilities{Continuation: portico.ContinuePrefill}}, Breaker: one, Retry: retry.Config{Timeouts: to}},
		{Route: portico.Route{Name: "b", Model: b, Capabilities: portico.Capabilities{Continuation: mode}}, Retry: retry.Config{Timeouts: to}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// contReq is the continuation tests' request, streamed into the returned
// chunks with their arrival times.
func contReq(start time.Time) (*portico.Request, *[]string, *[]time.Duration) {
	req := userReq("m", "tell me a long story")
	req.ContinueOnBreak = true
	var chunks []string
	var at []time.Duration
	req.OnChunk = func(c portico.Chunk) error {
		chunks = append(chunks, c.Text)
		at = append(at, time.Since(start))
		return nil
	}
	return req, &chunks, &at
}

// A stream cut after k chunks (the connection dropped) is continued on the
// other route, as a prefill or with the instruction: the caller's chunks
// join into the final text, which is the answer the first route would have
// given uncut; the hop says where it broke; the usage adds the broken
// attempt's estimate to the continuation's, whose input is the prompt plus
// the prefix (and the instruction). The figures of the continuation are
// logged: its TTFT after the break, and the input tokens billed again.
func TestContinueAfterCut(t *testing.T) {
	for _, mode := range []portico.Continuation{portico.ContinuePrefill, portico.ContinueInstruct} {
		for _, k := range []int{1, 10, 100} {
			t.Run(mode.String()+"/"+strconv.Itoa(k), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srvA, a := startPipe(t, fakeopenai.Config{Seed: 7, Models: []fakeopenai.ModelConfig{contModel(fakeopenai.Fault{Kind: fakeopenai.FaultDisconnect, AfterChunks: k})}})
					srvB, bare := startPipe(t, fakeopenai.Config{Seed: 7, Models: []fakeopenai.ModelConfig{contModel()}})
					b := bare
					if mode == portico.ContinuePrefill {
						b = adapter(srvB, openai.Config{Prefill: openai.PrefillContinueFinalMessage})
					}
					whole, err := bare.Generate(t.Context(), userReq("m", "tell me a long story")) // request 0 of b
					if err != nil {
						t.Fatal(err)
					}

					s := contStack(t, a, b, mode, retry.Timeouts{})
					start := time.Now()
					req, chunks, at := contReq(start)
					resp, err := s.Generate(t.Context(), req)
					if err != nil {
						t.Fatalf("Generate = %v", err)
					}
					if got := strings.Join(*chunks, ""); got != resp.Text || resp.Text != whole.Text {
						t.Fatalf("chunks join to %q,\nResponse.Text %q,\nwant both the uncut answer %q", got, resp.Text, whole.Text)
					}
					prefix := strings.Join(strings.Fields(whole.Text)[:k], " ")
					hops := resp.Hops
					if resp.Route != "b" || len(hops) != 1 || hops[0].Route != "a" || hops[0].Chunks != k || hops[0].Bytes != len(prefix) {
						t.Fatalf("Route %q, Hops %+v; want b after a, broken after %d chunks and %d bytes", resp.Route, hops, k, len(prefix))
					}
					// The break: a's last chunk at 300 ms + (k-1) * 10 ms. The
					// continuation's last chunk comes its TTFT and 150-k-1 token
					// gaps later.
					brk := 300*time.Millisecond + time.Duration(k-1)*10*time.Millisecond
					end := brk + 300*time.Millisecond + time.Duration(150-k-1)*10*time.Millisecond
					if (*at)[k-1] != brk || time.Since(start) != end || (*at)[len(*at)-1] != end {
						t.Errorf("break at %v, end at %v (last chunk %v); want %v and %v", (*at)[k-1], time.Since(start), (*at)[len(*at)-1], brk, end)
					}
					// The Seam holds nothing back here: the continuation's first
					// word departs from every tail of the prefix at once.
					ttft := (*at)[k] - brk
					if ttft != 300*time.Millisecond {
						t.Errorf("continuation TTFT %v, want its server's 300ms", ttft)
					}

					cont := srvB.Requests()[1]
					orig := whole.Usage.InputTokens
					again := k + 3 // the prefix's words and its message
					if mode == portico.ContinueInstruct {
						again += len(strings.Fields(portico.ContinueInstruction)) + 3
					}
					wantUsage := portico.Usage{
						InputTokens:  orig + again + portico.DefaultEstimator.EstimateInputTokens(req),
						OutputTokens: 150 - k + max(1, len(prefix)/4),
					}
					if resp.Usage != wantUsage {
						t.Errorf("Usage = %+v, want %+v: the continuation's (input %d = %d + %d again) and a's estimate", resp.Usage, wantUsage, orig+again, orig, again)
					}
					if got := strings.Contains(string(cont.Body), `"continue_final_message":true`); got != (mode == portico.ContinuePrefill) {
						t.Errorf("continuation body has continue_final_message: %v, want %v", got, mode == portico.ContinuePrefill)
					}
					if srvA.Count("m") != 1 || srvB.Count("m") != 2 {
						t.Errorf("requests: a %d, b %d; want one each (and b's uncut answer)", srvA.Count("m"), srvB.Count("m")-1)
					}
					t.Logf("%s k=%d: continuation TTFT %v after the break; input billed again %d tokens (prompt %d)", mode, k, ttft, again, orig)
				})
			})
		}
	}
}

// A stream that trickles below Timeouts.MinRate is ended by retry's floor at
// the end of the first window that brings too few tokens, counted against
// the route's breaker, and continued on the other route.
func TestSpeedFloorContinues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a: first token at 100 ms, then one every 800 ms (1.25 tokens/s).
		_, a := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", TTFT: 100 * time.Millisecond, TokensPerSecond: 1.25, OutputTokens: 50}}})
		_, b := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", TTFT: 100 * time.Millisecond, TokensPerSecond: 100, OutputTokens: 50}}})
		s := contStack(t, a, b, portico.ContinueInstruct, retry.Timeouts{MinRate: 5, RateWindow: 5 * time.Second})
		start := time.Now()
		req, chunks, at := contReq(start)
		resp, err := s.Generate(t.Context(), req)
		if err != nil {
			t.Fatalf("Generate = %v", err)
		}
		// The window from the first chunk (100 ms) to 5.1 s holds the 7
		// chunks of 100 ms, 900 ms, ..., 4.9 s: 7 tokens of the 25 that 5
		// tokens/s ask. The floor ends a at 5.1 s.
		h := resp.Hops
		if len(h) != 1 || h[0].Route != "a" || h[0].Chunks != 7 || !errors.Is(h[0].Err, retry.ErrSlowStream) {
			t.Fatalf("Hops = %+v, want a left after 7 chunks with ErrSlowStream", h)
		}
		if (*at)[6] != 4900*time.Millisecond || (*at)[7] < 5200*time.Millisecond {
			t.Errorf("7th chunk at %v, 8th at %v; want 4.9s, then b's after 5.1s + 100ms", (*at)[6], (*at)[7])
		}
		if got := strings.Join(*chunks, ""); got != resp.Text || len(strings.Fields(got)) != 50 || resp.Route != "b" {
			t.Errorf("chunks %q, Text %q from %q; want one answer of 50 words from b", got, resp.Text, resp.Route)
		}
		if st := s.Breaker("a").State(); st != breaker.Open {
			t.Errorf("a's breaker = %v, want open: the slow stream is a fault of the route", st)
		}
	})
}

// A request that does not opt in keeps the rule: once a chunk reached the
// caller the cut is the call's error, and no other route is called.
func TestNoContinuationWithoutOptIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, a := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{contModel(fakeopenai.Fault{Kind: fakeopenai.FaultDisconnect, AfterChunks: 10})}})
		srvB, b := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{contModel()}})
		s := contStack(t, a, b, portico.ContinuePrefill, retry.Timeouts{})
		req, chunks, _ := contReq(time.Now())
		req.ContinueOnBreak = false
		_, err := s.Generate(t.Context(), req)
		if portico.ClassOf(err) != portico.Ambiguous || len(*chunks) != 10 || srvB.Count("m") != 0 {
			t.Errorf("Generate = %v after %d chunks, b called %d times; want the cut (ambiguous) after 10, b never", err, len(*chunks), srvB.Count("m"))
		}
	})
}

// adapter is a Model with cfg over srv, a server startPipe started.
func adapter(srv *fakeopenai.Server, cfg openai.Config) *openai.Model {
	return openai.New(cfg, option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(srv.Client()))
}

// Each prefill dialect asks the server to continue a trailing assistant
// message its own way, which the fake honors as vLLM, DeepSeek and
// llama.cpp do: the answer is then the rest of the one it would give.
func TestPrefillDialects(t *testing.T) {
	for _, tt := range []struct {
		name      string
		prefill   openai.Prefill
		server    bool // the server continues a trailing assistant message unasked (llama.cpp)
		body      string
		continues bool
	}{
		{"as is to OpenAI", openai.PrefillAsIs, false, "", false},
		{"as is to llama.cpp", openai.PrefillAsIs, true, "", true},
		{"continue_final_message", openai.PrefillContinueFinalMessage, false, `"add_generation_prompt":false`, true},
		{"prefix flag", openai.PrefillPrefixFlag, false, `"prefix":true`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mc := fakeopenai.ModelConfig{Name: "m", OutputTokens: 6, Prefill: tt.server}
				srv, plain := startPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{mc}})
				whole, err := plain.Generate(t.Context(), userReq("m", "q"))
				if err != nil {
					t.Fatal(err)
				}
				words := strings.Fields(whole.Text)
				req := userReq("m", "q")
				req.Messages = append(req.Messages, portico.Text(portico.RoleAssistant, strings.Join(words[:2], " ")))
				resp, err := adapter(srv, openai.Config{Prefill: tt.prefill}).Generate(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				body := string(srv.Requests()[1].Body)
				if tt.body != "" && !strings.Contains(body, tt.body) || tt.body == "" && (strings.Contains(body, "prefix") || strings.Contains(body, "continue_final")) {
					t.Errorf("body %s, want %q in it and no other prefill field", body, tt.body)
				}
				if cont := resp.Text == " "+strings.Join(words[2:], " "); cont != tt.continues {
					t.Errorf("answer %q (whole %q): continued %v, want %v", resp.Text, whole.Text, cont, tt.continues)
				}
			})
		})
	}
}
