package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// reasoningItems returns the reasoning items of a request body's input,
// as sent.
func reasoningItems(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var b struct{ Input []map[string]any }
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, it := range b.Input {
		if it["type"] == "reasoning" {
			out = append(out, it)
		}
	}
	return out
}

// The Done-when loop: three turns of a tool-use conversation with
// reasoning, through stack.New over a Responses route, statelessly. Each
// answer's reasoning item comes back as a Thought of ResponsesDialect with
// its summary and encrypted content; the application appends
// Response.Message() and the tool's result; and each request body the
// fake received carries every earlier turn's reasoning item, its
// encrypted content byte for byte, before that turn's function call, with
// store false and include ["reasoning.encrypted_content"]. The fake
// refuses an encrypted content it did not issue, so a changed one fails
// the turn.
func TestResponsesReasoningToolLoop(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv, m := startResponses(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ToolCalls: true}}}, openai.ResponsesConfig{})
		st, err := stack.New(stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "responses", Model: m, ModelName: "m",
			Capabilities: portico.Capabilities{Provider: "openai", Tools: true, Reasoning: true}}}}})
		if err != nil {
			t.Fatal(err)
		}
		msgs := []portico.Message{portico.Text(portico.RoleUser, "weather in Paris?")}
		var sent []portico.Thought // every turn's reasoning, in order
		var reasoning []string     // streamed reasoning chunks
		for turn := 1; turn <= 3; turn++ {
			req := &portico.Request{Model: "m", Messages: msgs, Reasoning: &portico.Reasoning{Effort: portico.EffortLow, Stream: true},
				Tools: []portico.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}}
			if stream {
				req.OnChunk = func(c portico.Chunk) error { reasoning = append(reasoning, c.Reasoning); return nil }
			}
			resp, err := st.Generate(context.Background(), req)
			if err != nil {
				t.Fatalf("stream %v turn %d: Generate: %v", stream, turn, err)
			}
			if len(resp.Thoughts) != 1 || resp.Thoughts[0].Dialect != openai.ResponsesDialect || resp.Thoughts[0].Kind != "reasoning" ||
				resp.Thoughts[0].Text != "step 1. " || !strings.HasPrefix(resp.Thoughts[0].Signature, "fakeenc_") || !strings.HasPrefix(resp.Thoughts[0].ID, "rs_") {
				t.Fatalf("stream %v turn %d: Thoughts = %+v, want one summarized, encrypted reasoning item", stream, turn, resp.Thoughts)
			}
			if resp.Usage.ReasoningTokens != 2 {
				t.Errorf("turn %d: Usage = %+v, want 2 reasoning tokens", turn, resp.Usage)
			}
			wantCalls := turn < 3
			if (len(resp.ToolCalls) == 1) != wantCalls {
				t.Fatalf("turn %d: ToolCalls = %+v, want a call: %v", turn, resp.ToolCalls, wantCalls)
			}
			reqs := srv.Requests()
			body := reqs[len(reqs)-1].Body
			items := reasoningItems(t, body)
			if len(items) != len(sent) {
				t.Fatalf("turn %d: body sent %d reasoning items, want %d: %s", turn, len(items), len(sent), body)
			}
			for i, it := range items {
				if it["id"] != sent[i].ID || it["encrypted_content"] != sent[i].Signature {
					t.Errorf("turn %d: reasoning item %d = %v, want id %s and its encrypted content", turn, i, it, sent[i].ID)
				}
			}
			var b struct {
				Store   bool
				Include []string
			}
			_ = json.Unmarshal(body, &b)
			if b.Store || len(b.Include) != 1 || b.Include[0] != "reasoning.encrypted_content" {
				t.Errorf("turn %d: body store %v include %v, want false [reasoning.encrypted_content]", turn, b.Store, b.Include)
			}
			sent = append(sent, resp.Thoughts...)
			msgs = append(msgs, resp.Message())
			if wantCalls {
				msgs = append(msgs, portico.Message{Role: portico.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: []portico.Part{{Text: "sunny"}}})
				if turn == 1 {
					msgs = append(msgs, portico.Text(portico.RoleUser, "and in Rome?"))
				}
			}
		}
		if stream && strings.Join(reasoning, "") != "step 1. step 1. step 1. " {
			t.Errorf("streamed reasoning = %q, want each turn's summary", strings.Join(reasoning, ""))
		}
	}
}

// A reasoning item is sent back right before the items of the answer that
// made it, and only a Thought of ResponsesDialect: another provider's
// block is left out, as is an item without encrypted content when nothing
// is stored. With Store, an item goes back by its id alone.
func TestResponsesThoughtsSentBack(t *testing.T) {
	thoughts := []portico.Thought{
		{Dialect: "anthropic", Kind: "thinking", Text: "x", Signature: "sig"},
		{Dialect: openai.ResponsesDialect, Kind: "reasoning", ID: "rs_1", Text: "sum", Signature: "enc"},
		{Dialect: openai.ResponsesDialect, Kind: "reasoning", ID: "rs_2"},
	}
	msgs := []portico.Message{portico.Text(portico.RoleUser, "q"),
		{Role: portico.RoleAssistant, Thoughts: thoughts, Content: []portico.Part{{Text: "a"}}},
		portico.Text(portico.RoleUser, "q2")}
	for _, c := range []struct {
		store bool
		want  string
	}{
		{false, `[{"content":"q","role":"user"},{"encrypted_content":"enc","id":"rs_1","summary":[{"text":"sum","type":"summary_text"}],"type":"reasoning"},{"content":"a","role":"assistant"},{"content":"q2","role":"user"}]`},
		{true, `[{"content":"q","role":"user"},{"encrypted_content":"enc","id":"rs_1","summary":[{"text":"sum","type":"summary_text"}],"type":"reasoning"},{"id":"rs_2","summary":[],"type":"reasoning"},{"content":"a","role":"assistant"},{"content":"q2","role":"user"}]`},
	} {
		s, m := startResponses(t, fakeopenai.Config{Handler: okHandler()}, openai.ResponsesConfig{Store: c.store})
		if _, err := m.Generate(context.Background(), &portico.Request{Model: "m", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		input, _ := json.Marshal(lastBody(t, s)["input"])
		if string(input) != c.want {
			t.Errorf("Store %v: input = %s\nwant %s", c.store, input, c.want)
		}
	}
}

// An error event after response.created, before any text, is an error
// like any before the first chunk: through stack.New the request is
// retried and falls back to the next route when every attempt fails that
// way, and the caller sees only the answer's chunks. After a chunk
// reached the caller it is neither (no ContinueOnBreak): one call.
func TestResponsesFallsBackAfterCreated(t *testing.T) {
	cases := []struct {
		fault fakeopenai.Fault
		route string // the route that answers, "" for none
	}{
		{fakeopenai.Fault{Kind: fakeopenai.FaultStreamError}, "b"},
		{fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, Event: "error", Code: "server_error"}, "b"},
		{fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, AfterChunks: 2}, ""},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) { fallsBack(t, c.fault, c.route) })
	}
}

// fallsBack runs one case of TestResponsesFallsBackAfterCreated: route a
// always fails with fault, route b answers.
func fallsBack(t *testing.T, fault fakeopenai.Fault, route string) {
	fault.Fraction = 1
	sa, a := startResponsesPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 4, Faults: []fakeopenai.Fault{fault}}}}, openai.ResponsesConfig{})
	sb, b := startResponsesPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 4}}}, openai.ResponsesConfig{})
	st, err := stack.New(stack.Config{Routes: []stack.Route{
		{Route: portico.Route{Name: "a", Model: a, ModelName: "m", Capabilities: portico.Capabilities{Provider: "p1"}}},
		{Route: portico.Route{Name: "b", Model: b, ModelName: "m", Capabilities: portico.Capabilities{Provider: "p2"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	resp, err := st.Generate(t.Context(), streamed(userReq("m", "hello"), &chunks))
	switch {
	case route == "" && (err == nil || len(chunks) != 2 || sa.Count("m") != 1 || sb.Count("m") != 0):
		t.Errorf("fault %+v: Generate = %v, %v, %d chunks, %d calls to a, %d to b; want the error after 2 chunks, one call to a", fault, resp, err, len(chunks), sa.Count("m"), sb.Count("m"))
	case route != "" && (err != nil || resp.Route != route || len(chunks) != 4 || strings.Join(chunks, "") != resp.Text || !same(hops(resp), "a:transient")):
		t.Errorf("fault %+v: Generate = %v, %v, chunks %q; want b's 4 chunks after a's transient errors", fault, resp, err, chunks)
	}
	t.Logf("fault %v event %q after %d chunks: %d calls to a, %d to b", fault.Kind, fault.Event, fault.AfterChunks, sa.Count("m"), sb.Count("m"))
}

// startResponsesPipe serves cfg in memory, for a synctest bubble, and
// returns a Responses model pointed at it.
func startResponsesPipe(t *testing.T, cfg fakeopenai.Config, rc openai.ResponsesConfig) (*fakeopenai.Server, *openai.Responses) {
	t.Helper()
	s, err := fakeopenai.StartPipe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, openai.NewResponses(rc, option.WithBaseURL(s.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(s.Client()))
}

// bodyOf decodes the last request body s received.
func bodyOf(t *testing.T, s *fakeopenai.Server) (raw []byte, body struct {
	PreviousResponseID string           `json:"previous_response_id"`
	Store              bool             `json:"store"`
	Input              []map[string]any `json:"input"`
}) {
	t.Helper()
	reqs := s.Requests()
	raw = reqs[len(reqs)-1].Body
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	return raw, body
}

// types lists the type of each input item ("message" for a message
// without one).
func types(items []map[string]any) []string {
	var out []string
	for _, it := range items {
		typ, _ := it["type"].(string)
		if typ == "" {
			typ = "message"
		}
		out = append(out, typ)
	}
	return out
}

// With Store, the route that holds the state uses it: the answer names
// the stored response in a Thought of the route's account, and the next
// turn sends previous_response_id with only the messages after that
// answer. When the route fails, the group's next route, of another
// account, holds none of it: it leaves the Thoughts out (reasoning and
// stored response alike) and is sent the whole conversation, so the
// loop goes on. Three turns through stack.New in virtual time.
func TestResponsesStoredState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 500, Fraction: 1}
		sa, a := startResponsesPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ToolCalls: true, Script: []fakeopenai.Fault{{}, {}}, Faults: []fakeopenai.Fault{fail}}}},
			openai.ResponsesConfig{Store: true, Account: "a"})
		sb, b := startResponsesPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ToolCalls: true}}}, openai.ResponsesConfig{Account: "b"})
		if a.Dialect() != "openai-responses:a" || b.Dialect() != "openai-responses:b" {
			t.Fatalf("dialects %q %q, want openai-responses:a and :b", a.Dialect(), b.Dialect())
		}
		st, err := stack.New(stack.Config{Routes: []stack.Route{
			{Route: portico.Route{Name: "a", Model: a, ModelName: "m", Capabilities: portico.Capabilities{Provider: "openai-a", Tools: true, Reasoning: true}}},
			{Route: portico.Route{Name: "b", Model: b, ModelName: "m", Capabilities: portico.Capabilities{Provider: "openai-b", Tools: true, Reasoning: true}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		msgs := []portico.Message{portico.Text(portico.RoleUser, "weather in Paris?")}
		tools := []portico.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}
		var ids []string
		for turn := 1; turn <= 3; turn++ {
			resp, err := st.Generate(t.Context(), &portico.Request{Model: "m", Messages: msgs, Tools: tools, Reasoning: &portico.Reasoning{Effort: portico.EffortLow}})
			if err != nil {
				t.Fatalf("turn %d: %v", turn, err)
			}
			switch turn {
			case 1, 2:
				raw, body := bodyOf(t, sa)
				last := resp.Thoughts[len(resp.Thoughts)-1]
				if resp.Route != "a" || last.Kind != "response" || last.ID != resp.ID || last.Dialect != "openai-responses:a" || !body.Store {
					t.Fatalf("turn %d: route %s, Thoughts %+v, store %v; want a's answer naming its stored response %s", turn, resp.Route, resp.Thoughts, body.Store, resp.ID)
				}
				wantPrev, wantTypes := "", []string{"message"}
				if turn == 2 {
					wantPrev, wantTypes = ids[0], []string{"function_call_output", "message"}
				}
				if body.PreviousResponseID != wantPrev || !slices.Equal(types(body.Input), wantTypes) {
					t.Errorf("turn %d: body previous_response_id %q input %v, want %q %v: %s", turn, body.PreviousResponseID, types(body.Input), wantPrev, wantTypes, raw)
				}
			case 3:
				raw, body := bodyOf(t, sb)
				want := []string{"message", "function_call", "function_call_output", "message", "function_call", "function_call_output"}
				if resp.Route != "b" || body.PreviousResponseID != "" || body.Store || !slices.Equal(types(body.Input), want) {
					t.Errorf("turn 3: route %s, body previous_response_id %q store %v input %v, want b sent the whole conversation %v without a's Thoughts: %s", resp.Route, body.PreviousResponseID, body.Store, types(body.Input), want, raw)
				}
				if resp.Text == "" || len(resp.Thoughts) != 1 || resp.Thoughts[0].Dialect != "openai-responses:b" {
					t.Errorf("turn 3: %q, Thoughts %+v, want b's text and its one reasoning Thought", resp.Text, resp.Thoughts)
				}
			}
			ids = append(ids, resp.ID)
			msgs = append(msgs, resp.Message())
			if len(resp.ToolCalls) > 0 {
				msgs = append(msgs, portico.Message{Role: portico.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: []portico.Part{{Text: "sunny"}}})
				if turn == 1 {
					msgs = append(msgs, portico.Text(portico.RoleUser, "and in Rome?"))
				}
			}
		}
	})
}

// The figure over the Responses API: a stream that sends a
// response.reasoning_summary_text.delta every 250 ms for 5 s, then text,
// through stack.New with a 2 s first-chunk and a 1 s chunk-gap timeout
// (response.created comes at once: the gap is what the deltas keep
// open), answers after 5 s with
// exactly one HTTP request, the 20 steps on its Thought and, asked for the
// reasoning stream, in Chunk.Reasoning before the text.
func TestResponsesReasoningStreamOneRequest(t *testing.T) {
	for _, show := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			s, m := startResponsesPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", TTFT: 5 * time.Second, ThinkEvery: 250 * time.Millisecond}}}, openai.ResponsesConfig{})
			st, err := stack.New(stack.Config{Routes: []stack.Route{{
				Route: portico.Route{Name: "r", Model: m, ModelName: "m", Capabilities: portico.Capabilities{Reasoning: true}},
				Retry: retry.Config{Timeouts: retry.Timeouts{FirstChunk: 2 * time.Second, ChunkGap: time.Second}},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			var text, reasoning strings.Builder
			req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}, Reasoning: &portico.Reasoning{Effort: portico.EffortLow, Stream: show}}
			req.OnChunk = func(c portico.Chunk) error {
				if c.Reasoning != "" && text.Len() > 0 {
					t.Errorf("reasoning chunk %q after text", c.Reasoning)
				}
				text.WriteString(c.Text)
				reasoning.WriteString(c.Reasoning)
				return nil
			}
			t0 := time.Now()
			resp, err := st.Generate(t.Context(), req)
			took := time.Since(t0)
			if err != nil || took != 5*time.Second || s.Count("m") != 1 || text.String() != resp.Text || resp.Text == "" {
				t.Fatalf("Generate = %+v, %v after %v, %d requests; want the answer after 5s, 1 request", resp, err, took, s.Count("m"))
			}
			steps := resp.Thoughts[0].Text
			if !strings.HasPrefix(steps, "step 1. step 2. ") || !strings.HasSuffix(steps, "step 20. ") {
				t.Errorf("Thought text %q, want 20 steps", steps)
			}
			if want := map[bool]string{false: "", true: steps}[show]; reasoning.String() != want {
				t.Errorf("Reasoning.Stream %v: reasoning chunks %q, want %q", show, reasoning.String(), want)
			}
			t.Logf("Reasoning.Stream %v: answered after %v with %d request(s)", show, took, s.Count("m"))
		})
	}
}

// A Responses stream that sends only keep-alive comments for 5 s is as
// silent as a hung one: the 2 s first-chunk timeout cuts each of 3
// attempts.
func TestResponsesKeepAlivesTimeOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, m := startResponsesPipe(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", TTFT: 5 * time.Second, KeepAliveEvery: 250 * time.Millisecond}}}, openai.ResponsesConfig{})
		st, err := stack.New(stack.Config{Routes: []stack.Route{{
			Route: portico.Route{Name: "r", Model: m, ModelName: "m"},
			Retry: retry.Config{Timeouts: retry.Timeouts{FirstChunk: 2 * time.Second}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		var chunks []string
		resp, err := st.Generate(t.Context(), streamed(userReq("m", "hello"), &chunks))
		if !errors.Is(err, retry.ErrFirstChunkTimeout) || s.Count("m") != 3 || resp != nil {
			t.Errorf("Generate = %v, %v after %d requests; want ErrFirstChunkTimeout after 3", resp, err, s.Count("m"))
		}
	})
}
