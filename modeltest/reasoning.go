package modeltest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/portico-llm/portico"
)

// The reasoning the base of [Run]'s Reasoning subtest answers with.
var (
	suiteThought = portico.Thought{Dialect: "modeltest", Kind: "thinking", Text: "step one", Signature: "c2lnLTE="}
	suiteUsage   = portico.Usage{InputTokens: 20, OutputTokens: 30, ReasoningTokens: 12}
)

// reasoningBase is the base of Run's Reasoning subtest: it answers text
// with suiteThought and suiteUsage, streaming the thought's text as
// Chunk.Reasoning first when the request's Reasoning.Stream asks, and
// records the requests it received.
type reasoningBase struct {
	mu   sync.Mutex
	reqs []portico.Request
}

func (b *reasoningBase) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	b.mu.Lock()
	b.reqs = append(b.reqs, *req)
	b.mu.Unlock()
	const text = "the answer"
	if req.OnChunk != nil {
		if r := req.Reasoning; r != nil && r.Stream {
			if err := req.OnChunk(portico.Chunk{Reasoning: suiteThought.Text}); err != nil {
				return nil, err
			}
		}
		if err := req.OnChunk(portico.Chunk{Text: text}); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, portico.FromContext(ctx)
	}
	return &portico.Response{Text: text, FinishReason: portico.FinishStop, Model: req.Model,
		Thoughts: []portico.Thought{suiteThought}, Usage: suiteUsage}, nil
}

func (b *reasoningBase) last() portico.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reqs[len(b.reqs)-1]
}

// runReasoning is Run's Reasoning subtest: the answer's Thoughts and
// Usage.ReasoningTokens come through unchanged, the Thoughts passed back
// in the next request's messages reach base unchanged, and reasoning
// chunks reach the caller exactly when base sent them (the setting may be
// left out for a route that does not reason), before the text.
func runReasoning(t *testing.T, wrap func(t *testing.T, base portico.Model) portico.Model) {
	base := &reasoningBase{}
	m := wrap(t, base)
	resp := reasoningAnswer(t, m)
	reasoningPassBack(t, m, base, resp)
	reasoningStreamed(t, m, base)
}

// reasoningAnswer asks m for an answer with reasoning and checks its
// Thoughts and reasoning tokens came through unchanged.
func reasoningAnswer(t *testing.T, m portico.Model) *portico.Response {
	t.Helper()
	req := suiteRequest(nil)
	req.Reasoning = &portico.Reasoning{Stream: true}
	resp, err := m.Generate(t.Context(), req)
	if !exclusive(t, resp, err) || err != nil {
		t.Fatalf("Generate() = %v, want an answer", err)
	}
	if !slices.Equal(resp.Thoughts, []portico.Thought{suiteThought}) || resp.Usage.ReasoningTokens != suiteUsage.ReasoningTokens {
		t.Errorf("Generate() = Thoughts %+v, reasoning tokens %d; want %+v, %d", resp.Thoughts, resp.Usage.ReasoningTokens, suiteThought, suiteUsage.ReasoningTokens)
	}
	return resp
}

// reasoningPassBack passes resp back in the next turn and checks its
// Thoughts reach base unchanged.
func reasoningPassBack(t *testing.T, m portico.Model, base *reasoningBase, resp *portico.Response) {
	t.Helper()
	next := suiteRequest(nil)
	next.Messages = append(slices.Clone(next.Messages), resp.Message(), portico.Text(portico.RoleUser, "go on"))
	if _, err := m.Generate(t.Context(), next); err != nil {
		t.Fatalf("Generate(next turn) = %v, want an answer", err)
	}
	if got := base.last().Messages; len(got) < 2 || !slices.Equal(got[len(got)-2].Thoughts, []portico.Thought{suiteThought}) {
		t.Errorf("base received the next turn's messages %+v, want the answer's Thoughts unchanged", got)
	}
}

// reasoningStreamed streams an answer with reasoning and checks the
// reasoning chunks arrive exactly when base sent them, before the text.
func reasoningStreamed(t *testing.T, m portico.Model, base *reasoningBase) {
	t.Helper()
	var text, reasoning strings.Builder
	afterText := false
	streamed := suiteRequest(func(c portico.Chunk) error {
		afterText = afterText || c.Reasoning != "" && text.Len() > 0
		text.WriteString(c.Text)
		reasoning.WriteString(c.Reasoning)
		return nil
	})
	streamed.Reasoning = &portico.Reasoning{Stream: true}
	resp, err := m.Generate(t.Context(), streamed)
	if !exclusive(t, resp, err) || err != nil {
		t.Fatalf("Generate(streamed) = %v, want an answer", err)
	}
	want := ""
	if r := base.last().Reasoning; r != nil && r.Stream {
		want = suiteThought.Text
	}
	if reasoning.String() != want || afterText || text.String() != resp.Text {
		t.Errorf("streamed reasoning %q (after text: %v), text %q; want reasoning %q before the text %q", reasoning.String(), afterText, text.String(), want, resp.Text)
	}
}

// foreignThought is a Thought of a dialect no adapter speaks, which
// [RunModel] passes back: an adapter must leave it out of what it sends.
var foreignThought = portico.Thought{Dialect: "modeltest-foreign", Kind: "thinking", Text: "not yours", Signature: "Zm9yZ2Vk"}

// runModelReasoning is RunModel's Reasoning subtest.
func runModelReasoning(t *testing.T, newModel func(t *testing.T) portico.Model) {
	m := newModel(t)
	req := &portico.Request{Model: "suite-model", Messages: []portico.Message{portico.Text(portico.RoleUser, "think, then answer")},
		Reasoning: &portico.Reasoning{Effort: portico.EffortLow}}
	resp, err := guard(t, func() (*portico.Response, error) { return m.Generate(t.Context(), req) })
	if !exclusive(t, resp, err) || err != nil {
		t.Fatalf("Generate(with Reasoning) = %v, want an answer", err)
	}
	checkReasoningAnswer(t, resp)
	msg := resp.Message()
	msg.Thoughts = append(slices.Clone(msg.Thoughts), foreignThought)
	next := &portico.Request{Model: "suite-model", Reasoning: req.Reasoning,
		Messages: append(slices.Clone(req.Messages), msg, portico.Text(portico.RoleUser, "go on"))}
	resp, err = guard(t, func() (*portico.Response, error) { return m.Generate(t.Context(), next) })
	if !exclusive(t, resp, err) || err != nil {
		t.Fatalf("Generate(the answer and its Thoughts passed back, a foreign one among them) = %v, want an answer", err)
	}
	modelReasoningStreamed(t, m, next)
}

// checkReasoningAnswer checks resp's Usage keeps its rules (usageBroken)
// and each of its Thoughts names its Dialect.
func checkReasoningAnswer(t *testing.T, resp *portico.Response) {
	t.Helper()
	if bad := usageBroken(resp.Usage); bad != "" {
		t.Errorf("Usage %+v: %s", resp.Usage, bad)
	}
	for _, th := range resp.Thoughts {
		if th.Dialect == "" {
			t.Errorf("Thought %+v has no Dialect", th)
		}
	}
}

// modelReasoningStreamed streams next with Reasoning.Stream and checks the
// streamed text and reasoning are the Response's text and Thoughts' text.
func modelReasoningStreamed(t *testing.T, m portico.Model, next *portico.Request) {
	t.Helper()
	var text, reasoning strings.Builder
	streamed := *next
	streamed.Reasoning = &portico.Reasoning{Effort: portico.EffortLow, Stream: true}
	streamed.OnChunk = func(c portico.Chunk) error {
		text.WriteString(c.Text)
		reasoning.WriteString(c.Reasoning)
		return nil
	}
	resp, err := guard(t, func() (*portico.Response, error) { return m.Generate(t.Context(), &streamed) })
	if !exclusive(t, resp, err) || err != nil {
		t.Fatalf("Generate(streamed with Reasoning.Stream) = %v, want an answer", err)
	}
	var thoughts strings.Builder
	for _, th := range resp.Thoughts {
		thoughts.WriteString(th.Text)
	}
	if text.String() != resp.Text || reasoning.String() != thoughts.String() {
		t.Errorf("streamed text %q, reasoning %q; want the Response's text %q and its Thoughts' text %q", text.String(), reasoning.String(), resp.Text, thoughts.String())
	}
}
