package portico

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestReasoningValidate: a setting wrong on any route is Permanent, named
// in the Reason, and found before any route is chosen.
func TestReasoningValidate(t *testing.T) {
	msgs := []Message{Text(RoleUser, "hi")}
	for _, tt := range []struct {
		name   string
		r      Reasoning
		maxOut int
		want   string // "" valid, else the Reason
	}{
		{"zero", Reasoning{}, 0, ""},
		{"effort", Reasoning{Effort: EffortHigh}, 0, ""},
		{"unknown effort", Reasoning{Effort: "max"}, 0, "unknown Reasoning.Effort"},
		{"negative budget", Reasoning{Budget: -1}, 0, "negative Reasoning.Budget"},
		{"budget below max", Reasoning{Budget: 2047}, 2048, ""},
		{"budget at max", Reasoning{Budget: 2048}, 2048, "reasoning budget not below MaxOutputTokens"},
		{"effort's budget at max", Reasoning{Effort: EffortHigh}, 4096, "reasoning budget not below MaxOutputTokens"},
		{"budget without max", Reasoning{Budget: 1 << 20}, 0, ""},
	} {
		req := &Request{Messages: msgs, MaxOutputTokens: tt.maxOut, Reasoning: &tt.r}
		err := req.Validate()
		var e *Error
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate = %v, want nil", tt.name, err)
		case tt.want != "" && (!errors.As(err, &e) || e.Class != Permanent || e.Reason != tt.want || !e.NotSent):
			t.Errorf("%s: Validate = %v, want Permanent %q, NotSent", tt.name, err, tt.want)
		}
		if got := (&Capabilities{Reasoning: true}).Fits(req, 1); !errors.Is(got, err) && got != err {
			t.Errorf("%s: Fits = %v, want Validate's %v", tt.name, got, err)
		}
	}
}

// TestReasoningTokensAndLevel: an effort maps to a budget and a budget to
// the least effort that covers it, in the table of [Reasoning.Tokens].
func TestReasoningTokensAndLevel(t *testing.T) {
	for _, tt := range []struct {
		r      Reasoning
		tokens int
		level  Effort
	}{
		{Reasoning{}, 0, ""},
		{Reasoning{Effort: EffortMinimal}, 1024, EffortMinimal},
		{Reasoning{Effort: EffortLow}, 1024, EffortLow},
		{Reasoning{Effort: EffortMedium}, 2048, EffortMedium},
		{Reasoning{Effort: EffortHigh}, 4096, EffortHigh},
		{Reasoning{Budget: 1}, 1, EffortLow},
		{Reasoning{Budget: 1024}, 1024, EffortLow},
		{Reasoning{Budget: 1025}, 1025, EffortMedium},
		{Reasoning{Budget: 2048}, 2048, EffortMedium},
		{Reasoning{Budget: 2049}, 2049, EffortHigh},
		{Reasoning{Budget: 32000, Effort: EffortLow}, 32000, EffortLow},
	} {
		if got := tt.r.Tokens(); got != tt.tokens {
			t.Errorf("%+v.Tokens() = %d, want %d", tt.r, got, tt.tokens)
		}
		if got := tt.r.Level(); got != tt.level {
			t.Errorf("%+v.Level() = %q, want %q", tt.r, got, tt.level)
		}
	}
}

// TestOutputBound: N_max is MaxOutputTokens when set (reasoning included),
// otherwise the default plus the reasoning budget, saturated.
func TestOutputBound(t *testing.T) {
	for _, tt := range []struct {
		maxOut, def int
		r           *Reasoning
		want        int
	}{
		{0, 1024, nil, 1024},
		{500, 1024, nil, 500},
		{8000, 1024, &Reasoning{Budget: 4000}, 8000},
		{0, 1024, &Reasoning{Budget: 4000}, 5024},
		{0, 1024, &Reasoning{Effort: EffortHigh}, 5120},
		{0, 1024, &Reasoning{Stream: true}, 1024},
		{0, 0, &Reasoning{Budget: 4000}, 0},
		{0, math.MaxInt - 10, &Reasoning{Budget: 4000}, math.MaxInt},
	} {
		req := &Request{MaxOutputTokens: tt.maxOut, Reasoning: tt.r}
		if got := req.OutputBound(tt.def); got != tt.want {
			t.Errorf("OutputBound(%d) of MaxOutputTokens %d, %+v = %d, want %d", tt.def, tt.maxOut, tt.r, got, tt.want)
		}
	}
}

// TestFitsReasoning: a required setting filters routes that do not reason;
// one not required fits any route, and RequestFor leaves the setting out
// for a route that does not reason.
func TestFitsReasoning(t *testing.T) {
	msgs := []Message{Text(RoleUser, "hi")}
	plain, reasons := Capabilities{}, Capabilities{Reasoning: true}
	req := &Request{Messages: msgs, Reasoning: &Reasoning{Effort: EffortLow, Required: true}}
	var e *Error
	if err := plain.Fits(req, 1); !errors.As(err, &e) || e.Class != Incompatible || e.Reason != "reasoning" {
		t.Errorf("Fits(required) on a plain route = %v, want Incompatible reasoning", err)
	}
	if err := reasons.Fits(req, 1); err != nil {
		t.Errorf("Fits(required) on a reasoning route = %v, want nil", err)
	}
	opt := &Request{Messages: msgs, Reasoning: &Reasoning{Effort: EffortLow}}
	if err := plain.Fits(opt, 1); err != nil {
		t.Errorf("Fits(not required) on a plain route = %v, want nil", err)
	}
	r := Route{Name: "a", Capabilities: plain}
	if got := r.RequestFor(opt); got == opt || got.Reasoning != nil || opt.Reasoning == nil {
		t.Errorf("RequestFor on a plain route = %+v, want a clone without Reasoning, the caller's kept", got)
	}
	r = Route{Name: "a", Capabilities: reasons}
	if got := r.RequestFor(opt); got != opt {
		t.Errorf("RequestFor on a reasoning route = %p, want the request itself %p", got, opt)
	}
	r = Route{Name: "a", ModelName: "m", Capabilities: plain}
	if got := r.RequestFor(opt); got.Model != "m" || got.Reasoning != nil || opt.Model != "" {
		t.Errorf("RequestFor renaming on a plain route = %+v, want model m without Reasoning", got)
	}
}

// TestResponseMessage: an answer becomes the assistant message of the
// next turn with its thoughts, and its readable reasoning is the texts
// joined, the opaque ones left out.
func TestResponseMessage(t *testing.T) {
	th := []Thought{
		{Dialect: "anthropic", Kind: "thinking", Text: "Step 1.", Signature: "sig"},
		{Dialect: "anthropic", Kind: "redacted_thinking", Signature: "data"},
		{Dialect: "anthropic", Kind: "thinking", Text: "Step 2.", Signature: "sig2"},
	}
	calls := []ToolCall{{ID: "t1", Name: "f", Arguments: []byte(`{}`)}}
	resp := &Response{Text: "ok", ToolCalls: calls, Thoughts: th}
	m := resp.Message()
	if m.Role != RoleAssistant || len(m.Content) != 1 || m.Content[0].Text != "ok" || !slices.Equal(m.Thoughts, th) || len(m.ToolCalls) != 1 {
		t.Errorf("Message() = %+v, want the assistant's text, calls and thoughts", m)
	}
	if m := (&Response{ToolCalls: calls}).Message(); m.Content != nil {
		t.Errorf("Message() of calls alone has content %+v, want none", m.Content)
	}
	if got, want := resp.ReasoningText(), "Step 1.\n\nStep 2."; got != want {
		t.Errorf("ReasoningText() = %q, want %q", got, want)
	}
	req := &Request{Messages: []Message{m}}
	if got, want := req.Size(), len("ok")+len(RoleAssistant)+len("t1f{}")+len("Step 1.sigdataStep 2.sig2"); got != want {
		t.Errorf("Size() = %d, want %d (thoughts counted)", got, want)
	}
}
