package anthropic_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/stack"
)

// TestPromptCacheThroughThePreset: a 100,000-token system prompt marked
// as a breakpoint is written to the fake's prompt cache on the first call
// (cache_control on the system block, in the body the fake received),
// read on the next, and written again once its lifetime is over: 5
// minutes for Cache5m, an hour for Cache1h. Usage and Response.Cost
// follow, priced as the bill (Claude Sonnet 4.5, $3 input, $3.75 and $6
// writes, $0.30 reads, $15 output per million).
func TestPromptCacheThroughThePreset(t *testing.T) {
	system := strings.Repeat("w ", 100_000)
	for _, tc := range []struct {
		ttl     portico.CacheTTL
		control string  // the system block's cache_control as sent
		write   float64 // the bill of a call that writes
	}{
		{portico.Cache5m, `"cache_control":{"type":"ephemeral"}`, 0.3765},
		{portico.Cache1h, `"cache_control":{"ttl":"1h","type":"ephemeral"}`, 0.6015},
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "claude-sonnet-4-5", OutputTokens: 80, PromptCache: true}}})
				s, err := stack.New(stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "anthropic", Model: m, ModelName: "claude-sonnet-4-5", Capabilities: sonnet}}}})
				if err != nil {
					t.Fatal(err)
				}
				call := func(question string) *portico.Response {
					t.Helper()
					sys := portico.Text(portico.RoleSystem, system)
					sys.Cache = tc.ttl
					// 97 words + 3 for the message: 100 tokens after the breakpoint.
					req := &portico.Request{Messages: []portico.Message{sys, words(100)}, MaxOutputTokens: 1024}
					req.Messages[1].Content[0].Text = strings.Repeat(question+" ", 97)
					resp, err := s.Generate(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					return resp
				}
				written := portico.Usage{InputTokens: 100_100, OutputTokens: 80, CacheWriteTokens: 100_000}
				if tc.ttl == portico.Cache1h {
					written.CacheWrite1hTokens = 100_000
				}
				read := portico.Usage{InputTokens: 100_100, OutputTokens: 80, CachedInputTokens: 100_000, LimitExemptTokens: 100_000}
				steps := []struct {
					wait  time.Duration // before the call
					usage portico.Usage
					bill  float64
				}{
					{0, written, tc.write},
					{4 * time.Minute, read, 0.0315}, // another question, the same prefix
					{4 * time.Minute, read, 0.0315}, // the hit refreshed the entry
					{6 * time.Minute, written, tc.write},
				}
				if tc.ttl == portico.Cache1h {
					steps[3].usage, steps[3].bill = read, 0.0315
				}
				for i, st := range steps {
					time.Sleep(st.wait)
					resp := call([]string{"a", "b", "c", "d"}[i])
					if resp.Usage != st.usage || !sameBill(resp.Cost, st.bill) {
						t.Errorf("call %d: Usage %+v, Cost $%.10f; want %+v, $%g", i, resp.Usage, resp.Cost, st.usage, st.bill)
					}
				}
				body := srv.Requests()[0].Body
				if !bytes.Contains(body, []byte(tc.control)) || bytes.Count(body, []byte("cache_control")) != 1 {
					t.Errorf("first body has cache_control %d times, want once as %s", bytes.Count(body, []byte("cache_control")), tc.control)
				}
			})
		})
	}
}

// TestBreakpointsMapped: a part's breakpoint goes on its block, a
// message's on the message's last block (a tool result's included), and a
// request the API would refuse for its breakpoints is refused before
// sending, as Incompatible: five of them, or a one-hour one after a
// five-minute one.
func TestBreakpointsMapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m"}}})
		user := portico.Message{Role: portico.RoleUser, Content: []portico.Part{
			{Kind: portico.PartText, Text: "first", Cache: portico.Cache1h},
			{Kind: portico.PartText, Text: "second"},
		}}
		call := portico.Message{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "t1", Name: "f", Arguments: []byte(`{}`)}}}
		result := portico.Message{Role: portico.RoleTool, ToolCallID: "t1", Content: []portico.Part{{Kind: portico.PartText, Text: "42"}}, Cache: portico.Cache5m}
		req := &portico.Request{Model: "m", Messages: []portico.Message{user, call, result}, Tools: []portico.Tool{{Name: "f"}}, MaxOutputTokens: 16}
		if _, err := m.Generate(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		body := string(srv.Requests()[0].Body)
		for _, want := range []string{
			`{"text":"first","cache_control":{"ttl":"1h","type":"ephemeral"},"type":"text"}`,
			`{"text":"second","type":"text"}`,
			`"tool_use_id":"t1","cache_control":{"type":"ephemeral"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("body %s\nlacks %s", body, want)
			}
		}
		five := portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartText, Text: "x"}}, Cache: portico.Cache5m}
		hourAfter := portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartText, Text: "y", Cache: portico.Cache5m}}, Cache: portico.Cache1h}
		for _, msgs := range [][]portico.Message{{five, five, five, five, five}, {hourAfter}} {
			_, err := m.Generate(t.Context(), &portico.Request{Model: "m", Messages: msgs, MaxOutputTokens: 16})
			if !errors.Is(err, portico.ErrIncompatible) || !portico.NothingSent(err) {
				t.Errorf("Generate(%d messages) = %v, want Incompatible, nothing sent", len(msgs), err)
			}
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("the fake saw %d requests, want 1", n)
		}
	})
}
