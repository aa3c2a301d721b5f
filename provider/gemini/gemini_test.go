package gemini_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
	"go.uber.org/goleak"
	"google.golang.org/genai"
)

// genai imports cloud.google.com/go, whose opencensus dependency starts a
// worker goroutine in an init function that lives as long as the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// clientConfig points the SDK at s.
func clientConfig(s *fakegemini.Server) genai.ClientConfig {
	return genai.ClientConfig{APIKey: "test-key", HTTPClient: s.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: s.URL()}}
}

// start serves cfg over loopback and returns a Model pointed at it.
func start(t *testing.T, cfg fakegemini.Config, mc gemini.Config) (*fakegemini.Server, *gemini.Model) {
	t.Helper()
	s, err := fakegemini.Start(cfg)
	if err != nil {
		t.Fatalf("fakegemini.Start: %v", err)
	}
	t.Cleanup(s.Close)
	return s, newModel(t, mc, clientConfig(s))
}

func newModel(t testing.TB, mc gemini.Config, cc genai.ClientConfig) *gemini.Model {
	t.Helper()
	m, err := gemini.New(context.Background(), mc, cc)
	if err != nil {
		t.Fatalf("gemini.New: %v", err)
	}
	return m
}

func userReq(model, text string) *portico.Request {
	return &portico.Request{Model: model, Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

// asError returns err's *portico.Error or fails the test.
func asError(t *testing.T, err error) *portico.Error {
	t.Helper()
	var pe *portico.Error
	if !errors.As(err, &pe) {
		t.Fatalf("Generate error = %v (%T), want a *portico.Error", err, err)
	}
	return pe
}

func TestGenerateText(t *testing.T) {
	_, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", OutputTokens: 5, CachedInputTokens: 2, ThoughtsTokens: 7}}}, gemini.Config{})
	resp, err := m.Generate(context.Background(), userReq("m", "hello there"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := len(strings.Fields(resp.Text)); got != 5 {
		t.Errorf("words in Text %q = %d, want 5", resp.Text, got)
	}
	// 2 words + 3 for the content; 5 candidate tokens + 7 thought tokens.
	want := portico.Usage{InputTokens: 5, OutputTokens: 12, ReasoningTokens: 7, CachedInputTokens: 2}
	if resp.Usage != want || resp.FinishReason != portico.FinishStop || resp.Model != "m" || resp.ID == "" {
		t.Errorf("Generate = usage %+v finish %q model %q id %q, want %+v stop m and an id", resp.Usage, resp.FinishReason, resp.Model, resp.ID, want)
	}
}

func TestGenerateStream(t *testing.T) {
	_, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", OutputTokens: 6}}}, gemini.Config{})
	req := userReq("m", "hello there")
	var chunks []string
	req.OnChunk = func(c portico.Chunk) error { chunks = append(chunks, c.Text); return nil }
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(chunks) != 6 || strings.Join(chunks, "") != resp.Text {
		t.Errorf("chunks %q joined != Text %q (want 6 chunks)", chunks, resp.Text)
	}
	want := portico.Usage{InputTokens: 5, OutputTokens: 6}
	if resp.Usage != want || resp.FinishReason != portico.FinishStop {
		t.Errorf("usage %+v finish %q, want %+v stop", resp.Usage, resp.FinishReason, want)
	}
}

// Streamed or not, the same request gets the same answer.
func TestStreamMatchesWhole(t *testing.T) {
	_, m := start(t, fakegemini.Config{Seed: 3}, gemini.Config{Model: fakegemini.DefaultModel})
	whole, err := m.Generate(context.Background(), userReq("", "same question"))
	if err != nil {
		t.Fatal(err)
	}
	req := userReq("", "same question")
	req.OnChunk = func(portico.Chunk) error { return nil }
	streamed, err := m.Generate(context.Background(), req)
	if err != nil || streamed.Text != whole.Text || streamed.ID != whole.ID {
		t.Errorf("streamed = %q id %q (%v), want %q id %q as answered whole", streamed.Text, streamed.ID, err, whole.Text, whole.ID)
	}
}
