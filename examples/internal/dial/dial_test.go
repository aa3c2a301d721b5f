package dial

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRealNeedsKey: a real OpenAI or Anthropic endpoint without its key
// variable is refused, naming the flag and the variable.
func TestRealNeedsKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	for i, want := range map[int]string{OpenAI: "-openai-url needs OPENAI_API_KEY", Anthropic: "-anthropic-url needs ANTHROPIC_API_KEY"} {
		if _, err := Real(context.Background(), i, "http://127.0.0.1:1/", "m"); err == nil || err.Error() != want {
			t.Errorf("Real(%d) = %v, want %s", i, err, want)
		}
	}
}

// TestOverFakes: each adapter over its fake answers, with the fake's
// default model.
func TestOverFakes(t *testing.T) {
	ctx := context.Background()
	oa, err := fakeopenai.Start(fakeopenai.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer oa.Close()
	an, err := fakeanthropic.Start(fakeanthropic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer an.Close()
	ge, err := fakegemini.Start(fakegemini.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ge.Close()
	gm, err := OverGemini(ctx, ge, fakegemini.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]portico.Model{"openai": OverOpenAI(oa, fakeopenai.DefaultModel),
		"anthropic": OverAnthropic(an, fakeanthropic.DefaultModel), "gemini": gm} {
		resp, err := m.Generate(ctx, &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, MaxOutputTokens: 16})
		if err != nil || resp.Text == "" {
			t.Errorf("%s: Generate = %v, %v; want an answer", name, resp, err)
		}
	}
}
