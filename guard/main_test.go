package guard

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// secret is a prompt that must reach no error, log or span.
const secret = "my password is hunter2"

// ask is a user request saying text.
func ask(text string) *portico.Request {
	return &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

// counting is a model answering "ok", counting its calls in *n.
func counting(n *int) portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		*n++
		return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
	})
}

func mustNew(t testing.TB, rails ...Guardrail) *Guards {
	t.Helper()
	g, err := New(Config{Guardrails: rails})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// events records the events of calls.
type events []portico.Event

func (e *events) Observe(_ context.Context, ev portico.Event) { *e = append(*e, ev) }
