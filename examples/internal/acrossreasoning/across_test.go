package acrossreasoning

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/provider/gemini"
	"github.com/portico-llm/portico/stack"
	"go.uber.org/goleak"
	"google.golang.org/genai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var weather = portico.Tool{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}

// TestFallbackAcrossReasoning: a tool-use loop with reasoning over three
// routes, in order "plain" (no reasoning), "claude" and "gemini" (a Gemini
// 3 model that signs its calls). The setting is Required, so "plain" is
// filtered and never called. Turn 1: claude answers with a signed thinking
// block and a call. Turn 2: claude refuses (a 400, Incompatible) and
// gemini answers with its call's thought signature; the body gemini
// received holds no Anthropic thinking. Turn 3: claude answers the whole
// conversation; its body holds its own turn-1 thinking block, none of
// Gemini's signatures, and no thinking parameter, since the tool turn it
// answers (Gemini's) has no thinking block of Anthropic's, which the API
// would refuse: that answer has no thinking either. Gemini got the dummy
// signature it documents for turn 1's call, which it did not make.
func TestFallbackAcrossReasoning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as, err := fakeanthropic.StartPipe(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "claude", ToolCalls: true, ToolRounds: 3,
			Script: []fakeanthropic.Fault{{}, {Kind: fakeanthropic.FaultStatus, Status: 400}}}}})
		if err != nil {
			t.Fatal(err)
		}
		defer as.Close()
		gs, err := fakegemini.StartPipe(fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "gemini-3", ToolCalls: true, ToolRounds: 3, ThoughtSignatures: true}}})
		if err != nil {
			t.Fatal(err)
		}
		defer gs.Close()
		claude := anthropic.New(anthropic.Config{}, option.WithBaseURL(as.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(as.Client()))
		gem, err := gemini.New(t.Context(), gemini.Config{}, genai.ClientConfig{APIKey: "k", HTTPClient: gs.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: gs.URL()}})
		if err != nil {
			t.Fatal(err)
		}
		var plainCalls atomic.Int32
		plain := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			plainCalls.Add(1)
			return &portico.Response{Text: "no thoughts", FinishReason: portico.FinishStop}, nil
		})
		route := func(name string, m portico.Model, model string, reasons bool) stack.Route {
			return stack.Route{Route: portico.Route{Name: name, Model: m, ModelName: model,
				Capabilities: portico.Capabilities{Provider: name, Tools: true, Reasoning: reasons}}}
		}
		st, err := stack.New(stack.Config{Routes: []stack.Route{
			route("plain", plain, "", false), route("claude", claude, "claude", true), route("gemini", gem, "gemini-3", true)}})
		if err != nil {
			t.Fatal(err)
		}
		req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "weather in Oslo?")}, Tools: []portico.Tool{weather},
			Reasoning: &portico.Reasoning{Effort: portico.EffortLow, Required: true}}
		answeredBy := []string{"claude", "gemini", "claude"}
		var claudeSig, geminiSig string
		for turn := range 3 {
			resp, err := st.Generate(t.Context(), req)
			thinks := turn < 2 // claude answers Gemini's tool turn without thinking
			if err != nil || resp.Route != answeredBy[turn] || len(resp.ToolCalls) != 1 || (len(resp.Thoughts) > 0) != thinks {
				t.Fatalf("turn %d: Generate = %+v, %v; want %s's call, thoughts %v", turn+1, resp, err, answeredBy[turn], thinks)
			}
			switch turn {
			case 0:
				claudeSig = resp.Thoughts[0].Signature
			case 1:
				geminiSig = resp.Thoughts[len(resp.Thoughts)-1].Signature
			}
			next := req.Clone()
			next.Messages = append(append([]portico.Message(nil), req.Messages...), resp.Message(),
				portico.Message{Role: portico.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: []portico.Part{{Text: "sunny"}}})
			req = next
		}
		if n := plainCalls.Load(); n != 0 {
			t.Errorf("the route without reasoning was called %d times, want 0", n)
		}
		gr := gs.Requests()
		if len(gr) != 1 || strings.Contains(string(gr[0].Body), claudeSig) || !strings.Contains(string(gr[0].Body), `"thoughtSignature":"c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="`) {
			t.Errorf("gemini received %d requests, the first %s; want one, without Anthropic's thinking, with the skip signature", len(gr), gr[0].Body)
		}
		ar := as.Requests()
		if len(ar) != 3 {
			t.Fatalf("claude received %d requests, want 3", len(ar))
		}
		var body struct {
			Thinking json.RawMessage `json:"thinking"`
		}
		last := string(ar[2].Body)
		if err := json.Unmarshal(ar[2].Body, &body); err != nil || body.Thinking != nil || !strings.Contains(last, claudeSig) || geminiSig == "" || strings.Contains(last, geminiSig) || !strings.Contains(last, `"id":"gemini_call_0"`) {
			t.Errorf("claude's third request %s: want its own thinking block back, no Gemini signature (%s), no thinking parameter, Gemini's call as gemini_call_0", last, geminiSig)
		}
	})
}
