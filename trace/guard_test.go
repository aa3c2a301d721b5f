package trace

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/guard"
)

// TestGuardVerdicts: each guardrail's verdict is a span event of the
// request span naming the guardrail and the result; the refused prompt is
// in no span's name, attribute, event or status.
func TestGuardVerdicts(t *testing.T) {
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	g, err := guard.New(guard.Config{Guardrails: []guard.Guardrail{{Name: "deny", Check: guard.Pattern("secret", regexp.MustCompile(`hunter2`))}}})
	if err != nil {
		t.Fatal(err)
	}
	m := tr.Wrap(g.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
	})))
	for _, q := range []string{"hi", "my password is hunter2"} {
		m.Generate(context.Background(), &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, q)}})
	}
	var got []string
	for _, span := range s.rec.Ended() {
		all := span.Name() + span.Status().Description
		for _, kv := range span.Attributes() {
			all += kv.Value.String()
		}
		for _, e := range span.Events() {
			for _, kv := range e.Attributes {
				all += kv.Value.String()
			}
			if e.Name == EventNameGuard {
				a := attrs(e.Attributes)
				got = append(got, a[string(KeyGuardrail)]+":"+a[string(KeyGuardResult)])
			}
		}
		if strings.Contains(all, "hunter2") {
			t.Errorf("span %q carries the prompt: %s", span.Name(), all)
		}
	}
	if len(got) != 2 || got[0] != "deny:pass" || got[1] != "deny:refused" {
		t.Errorf("guard span events = %v, want [deny:pass deny:refused]", got)
	}
}
