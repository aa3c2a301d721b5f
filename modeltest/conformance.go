package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// Run checks that the Models wrap builds keep the [portico.Model] contract,
// as testing/slogtest.Run checks a slog.Handler; call it from a test of the
// middleware's package, with -race. Each subtest (Answer, Error, Concurrent,
// NoMutation, Cancel, Stream, Reasoning: "Conformance" in the package doc) runs in its
// own testing/synctest bubble and calls wrap there once per base Model it
// needs, a [Fake] that answers, fails, streams, is slow or stalls. wrap must
// return base wrapped in the middleware under test, configured so that a
// call can reach base; what wrap starts (goroutines, timers) must end by the
// subtest's end (register its shutdown with t.Cleanup). Every call must
// return a non-nil Response XOR a non-nil error. The requests carry images,
// a tool, a Contract and a model class ("What the requests carry"): routes
// that a router or stack in wrap filters must fit them. For a Model that
// wraps nothing (an adapter), use [RunModel].
func Run(t *testing.T, wrap func(t *testing.T, base portico.Model) portico.Model) {
	t.Helper()
	bubble := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) { synctest.Test(t, f) })
	}
	bubble("Answer", func(t *testing.T) {
		const text = "the answer is 42"
		m := wrap(t, NewFake(Answer(text)))
		resp, err := m.Generate(t.Context(), suiteRequest(nil))
		if !exclusive(t, resp, err) || err != nil {
			t.Fatalf("Generate() = %v, want an answer", err)
		}
		if resp.Text != text {
			t.Errorf("Generate().Text = %q, want %q", resp.Text, text)
		}
	})
	bubble("Error", func(t *testing.T) {
		for _, e := range []*portico.Error{permanentError(), StatusError(400), StatusError(503), RateLimitError(time.Second), ContextOverflowError()} {
			m := wrap(t, NewFake(Fail(e)))
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			resp, err := m.Generate(ctx, suiteRequest(nil))
			cancel()
			if exclusive(t, resp, err) && err == nil {
				t.Errorf("Generate() over a base failing with %v = a Response, want an error", e.Class)
			}
		}
	})
	bubble("Concurrent", func(t *testing.T) { concurrent(t, wrap(t, echo()), true) })
	bubble("NoMutation", func(t *testing.T) {
		bases := []Outcome{Answer("fine"), Fail(StatusError(503)), Fail(permanentError()),
			{Response: Answer("one two three").Response, TTFT: time.Millisecond, ChunkGap: time.Millisecond}}
		for i, o := range bases {
			for _, stream := range []bool{false, true} {
				noMutation(t, wrap(t, NewFake(o)), stream, "base "+strconv.Itoa(i))
			}
		}
	})
	bubble("Cancel", func(t *testing.T) {
		slow := Outcome{Response: Answer("late").Response, Latency: time.Hour}
		stalled := Outcome{Response: Answer("a b c").Response, Stall: true, StallAfter: 1}
		for _, c := range []struct {
			name     string
			o        Outcome
			stream   bool
			deadline bool
		}{
			{"slow cancel", slow, false, false},
			{"slow deadline", slow, false, true},
			{"slow stream cancel", slow, true, false},
			{"stall cancel", stalled, true, false},
			{"stall deadline", stalled, true, true},
		} {
			cancelCall(t, wrap(t, NewFake(c.o)), c.name, c.stream, c.deadline)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		resp, err := wrap(t, NewFake(slow)).Generate(ctx, suiteRequest(nil))
		if exclusive(t, resp, err) && !isCtxClass(err) {
			t.Errorf("Generate(canceled ctx) = %v (class %v), want class canceled or deadline", err, portico.ClassOf(err))
		}
	})
	bubble("Stream", func(t *testing.T) {
		text := "the quick brown fox jumps over the lazy dog"
		o := Outcome{Response: Answer(text).Response, TTFT: 100 * time.Millisecond, ChunkGap: 10 * time.Millisecond}
		streamCall(t, wrap(t, NewFake(o)), text)
		streamAbort(t, wrap(t, NewFake(o)))
	})
	bubble("Reasoning", func(t *testing.T) { runReasoning(t, wrap) })
}

// RunModel is the conformance suite for a standalone Model, such as a provider
// adapter over a test server: newModel returns the Model under test, ready to
// answer any short text request. Unlike [Run] it cannot make the Model slow, so
// it runs in real time and checks what it can: Answer (a Response XOR an error;
// streaming chunks concatenate to the Text; Usage keeps its rules: no negative
// count, reasoning within the output, cache reads and writes within the
// input), Concurrent (8 goroutines making 5
// calls each, every call a Response XOR an error), NoMutation (as in Run) and
// Cancel (an already canceled context gives a Canceled or Deadline error), and
// Reasoning (a request with a Reasoning setting answers with sane Usage, its
// Thoughts tagged with a Dialect; passed back with a Thought of a foreign
// dialect, which the Model must leave out, it answers again; streamed with
// Reasoning.Stream, the chunks' Reasoning concatenates to its Thoughts'
// text). A call that has not returned after 10 s fails the test as a hang.
func RunModel(t *testing.T, newModel func(t *testing.T) portico.Model) {
	t.Helper()
	t.Run("Answer", func(t *testing.T) {
		m := newModel(t)
		resp, err := guard(t, func() (*portico.Response, error) { return m.Generate(t.Context(), suiteRequest(nil)) })
		exclusive(t, resp, err)
		var got strings.Builder
		resp, err = guard(t, func() (*portico.Response, error) {
			return m.Generate(t.Context(), suiteRequest(func(c portico.Chunk) error { got.WriteString(c.Text); return nil }))
		})
		if exclusive(t, resp, err) && err == nil && got.String() != resp.Text {
			t.Errorf("streamed chunks = %q, want the Response.Text %q", got.String(), resp.Text)
		}
		if err == nil {
			if bad := usageBroken(resp.Usage); bad != "" {
				t.Errorf("Usage %+v: %s", resp.Usage, bad)
			}
		}
	})
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, newModel(t), false) })
	t.Run("NoMutation", func(t *testing.T) {
		m := newModel(t)
		for _, stream := range []bool{false, true} {
			noMutation(t, m, stream, "model")
		}
	})
	t.Run("Cancel", func(t *testing.T) {
		m := newModel(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		resp, err := guard(t, func() (*portico.Response, error) { return m.Generate(ctx, suiteRequest(nil)) })
		if exclusive(t, resp, err) && !isCtxClass(err) {
			t.Errorf("Generate(canceled ctx) = %v (class %v), want class canceled or deadline", err, portico.ClassOf(err))
		}
	})
	t.Run("Reasoning", func(t *testing.T) { runModelReasoning(t, newModel) })
}

// result is what one call of Generate returned.
type result struct {
	resp *portico.Response
	err  error
}

// guard runs call, failing the test if it takes more than 10 s of real time.
func guard(t *testing.T, call func() (*portico.Response, error)) (*portico.Response, error) {
	t.Helper()
	done := make(chan result, 1)
	go func() {
		r, e := call()
		done <- result{r, e}
	}()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-timer.C:
		t.Fatal("Generate did not return within 10 s: it hangs")
		return nil, nil
	}
}

// suiteRequest returns a request exercising every field the contract covers.
func suiteRequest(onChunk func(portico.Chunk) error) *portico.Request {
	return &portico.Request{
		Model: "suite-model",
		Messages: []portico.Message{
			portico.Text(portico.RoleSystem, "be brief"),
			{Role: portico.RoleUser, Content: []portico.Part{
				{Kind: portico.PartText, Text: "what is in the picture?"},
				{Kind: portico.PartImage, ImageURL: "data:image/png;base64,AAAA"},
			}},
			{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"cat"}`)}}},
			{Role: portico.RoleTool, ToolCallID: "call_1", Content: []portico.Part{{Kind: portico.PartText, Text: "a cat"}}},
			portico.Text(portico.RoleUser, "and now?"),
		},
		Tools:            []portico.Tool{{Name: "lookup", Description: "looks up", Parameters: json.RawMessage(`{"type":"object"}`)}},
		MaxOutputTokens:  64,
		Extra:            map[string]any{"temperature": 0.2, "stop": []any{"\n"}, "nested": map[string]any{"k": "v"}},
		Identity:         portico.Identity{ClientKey: "client-a", SessionID: "s-1", OperationID: "op-1"},
		Contract:         &portico.Contract{ModelClasses: []string{"small"}, MaxInputTokens: 1000},
		NoAmbiguousRetry: true,
		OnChunk:          onChunk,
	}
}

// exclusive checks that exactly one of resp and err is non-nil, and reports
// whether that held.
func exclusive(t *testing.T, resp *portico.Response, err error) bool {
	t.Helper()
	if (resp == nil) == (err == nil) {
		t.Errorf("Generate() = (%v, %v), want a non-nil Response XOR a non-nil error", resp, err)
		return false
	}
	return true
}

func isCtxClass(err error) bool {
	c := portico.ClassOf(err)
	return c == portico.Canceled || c == portico.Deadline
}

// echo returns a base that answers "echo: " and the request's last text part,
// after 10 ms, so concurrent calls overlap.
func echo() *Fake {
	return NewFakeFunc(func(n int, req *portico.Request) Outcome {
		last := req.Messages[len(req.Messages)-1]
		return Outcome{Response: &portico.Response{Text: "echo: " + last.Content[0].Text, FinishReason: portico.FinishStop}, Latency: 10 * time.Millisecond}
	})
}

func concurrent(t *testing.T, m portico.Model, checkEcho bool) {
	t.Helper()
	const goroutines, calls = 8, 25
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				if !checkEcho && i >= 5 {
					return
				}
				req := suiteRequest(nil)
				q := "g" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				req.Messages[len(req.Messages)-1] = portico.Text(portico.RoleUser, q)
				resp, err := m.Generate(t.Context(), req)
				if !exclusive(t, resp, err) || err != nil {
					continue
				}
				ok.Add(1)
				if checkEcho && resp.Text != "echo: "+q {
					t.Errorf("Generate(%q).Text = %q, want %q", q, resp.Text, "echo: "+q)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() == 0 {
		t.Errorf("%d concurrent calls: none succeeded, want at least one", goroutines*calls)
	}
}

func noMutation(t *testing.T, m portico.Model, stream bool, name string) {
	t.Helper()
	var onChunk func(portico.Chunk) error
	if stream {
		onChunk = func(portico.Chunk) error { return nil }
	}
	req := suiteRequest(onChunk)
	before := takeSnapshot(req)
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	resp, err := m.Generate(ctx, req)
	exclusive(t, resp, err)
	if !before.same(req) {
		t.Errorf("Generate(%s, stream %v) modified its request: got %+v, want %+v", name, stream, *req, before.req)
	}
}

// cancelCall starts a call against a base that will not answer soon, ends its
// context after 10 ms (shorter than any sane TTFT or inter-token timeout of the
// middleware under test, so that the context ends first), and checks that the
// call returns without more time passing.
func cancelCall(t *testing.T, m portico.Model, name string, stream, deadline bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	if deadline {
		ctx, cancel = context.WithTimeout(t.Context(), 10*time.Millisecond)
	}
	defer cancel()
	var returned atomic.Bool
	var onChunk func(portico.Chunk) error
	if stream {
		onChunk = func(portico.Chunk) error {
			if returned.Load() {
				t.Errorf("%s: a chunk arrived after Generate returned", name)
			}
			return nil
		}
	}
	done := make(chan result, 1)
	go func() {
		resp, err := m.Generate(ctx, suiteRequest(onChunk))
		returned.Store(true)
		done <- result{resp, err}
	}()
	time.Sleep(10 * time.Millisecond)
	if !deadline {
		cancel()
	}
	synctest.Wait()
	var r result
	select {
	case r = <-done:
	default:
		t.Errorf("%s: Generate has not returned once its context ended; want it to return promptly", name)
		r = <-done // let virtual time run until it does, or deadlock
	}
	if exclusive(t, r.resp, r.err) && !isCtxClass(r.err) {
		t.Errorf("%s: Generate() = (%v, %v) (class %v), want an error of class canceled or deadline", name, r.resp != nil, r.err, portico.ClassOf(r.err))
	}
}

func streamCall(t *testing.T, m portico.Model, text string) {
	t.Helper()
	var (
		got      strings.Builder
		inside   atomic.Int32
		returned atomic.Bool
		chunks   int
	)
	req := suiteRequest(func(c portico.Chunk) error {
		if inside.Add(1) != 1 {
			t.Error("OnChunk called concurrently, want one call at a time")
		}
		defer inside.Add(-1)
		if returned.Load() {
			t.Error("a chunk arrived after Generate returned")
		}
		chunks++
		got.WriteString(c.Text)
		return nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	resp, err := m.Generate(ctx, req)
	returned.Store(true)
	if !exclusive(t, resp, err) || err != nil {
		t.Fatalf("Generate(streaming) = %v, want an answer", err)
	}
	if chunks == 0 || got.String() != resp.Text || resp.Text != text {
		t.Errorf("streamed %d chunks = %q, Response.Text = %q, want both %q", chunks, got.String(), resp.Text, text)
	}
}

var errSuiteAbort = errors.New("modeltest: suite callback aborts")

func streamAbort(t *testing.T, m portico.Model) {
	t.Helper()
	calls := 0
	req := suiteRequest(func(c portico.Chunk) error {
		calls++
		if calls >= 2 {
			return errSuiteAbort
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	resp, err := m.Generate(ctx, req)
	if exclusive(t, resp, err) && !errors.Is(err, errSuiteAbort) {
		t.Errorf("Generate() with a callback failing on chunk 2 = %v, want an error wrapping the callback's", err)
	}
	if calls != 2 {
		t.Errorf("callback called %d times, want 2 (none after it failed)", calls)
	}
}

// permanentError is a request wrong on every route, as Portico's own
// validation reports it: Permanent, status 400, wrapping ErrInjected.
func permanentError() *portico.Error {
	return &portico.Error{Class: portico.Permanent, Status: 400, Reason: "injected permanent", Err: ErrInjected}
}

// usageBroken returns what breaks Usage's rules in u, or "": no count
// negative; reasoning within the output; cache reads and writes within the
// input, 1-hour writes within the writes; limit-exempt tokens within the
// input.
func usageBroken(u portico.Usage) string {
	switch {
	case min(u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CachedInputTokens, u.CacheWriteTokens, u.CacheWrite1hTokens, u.LimitExemptTokens) < 0:
		return "a negative count"
	case u.ReasoningTokens > u.OutputTokens:
		return "ReasoningTokens above OutputTokens"
	case u.CachedInputTokens+u.CacheWriteTokens > u.InputTokens:
		return "cache reads and writes above InputTokens"
	case u.CacheWrite1hTokens > u.CacheWriteTokens:
		return "CacheWrite1hTokens above CacheWriteTokens"
	case u.LimitExemptTokens > u.InputTokens:
		return "LimitExemptTokens above InputTokens"
	}
	return ""
}
