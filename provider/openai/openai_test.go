package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves cfg over loopback and returns a Model pointed at it.
func start(t *testing.T, cfg fakeopenai.Config, mc openai.Config, opts ...option.RequestOption) (*fakeopenai.Server, *openai.Model) {
	t.Helper()
	s, err := fakeopenai.Start(cfg)
	if err != nil {
		t.Fatalf("fakeopenai.Start: %v", err)
	}
	t.Cleanup(s.Close)
	all := append([]option.RequestOption{option.WithBaseURL(s.BaseURL()), option.WithAPIKey("test-key"), option.WithHTTPClient(s.Client())}, opts...)
	return s, openai.New(mc, all...)
}

func userReq(model, text string) *portico.Request {
	return &portico.Request{Model: model, Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

func TestGenerateText(t *testing.T) {
	_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 5, CachedInputTokens: 2}}}, openai.Config{})
	resp, err := m.Generate(context.Background(), userReq("m", "hello there"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := len(strings.Fields(resp.Text)); got != 5 {
		t.Errorf("words in Text %q = %d, want 5", resp.Text, got)
	}
	want := portico.Usage{InputTokens: 5, OutputTokens: 5, CachedInputTokens: 2}
	if resp.Usage != want || resp.FinishReason != portico.FinishStop || resp.Model != "m" {
		t.Errorf("Generate = usage %+v finish %q model %q, want %+v stop m", resp.Usage, resp.FinishReason, resp.Model, want)
	}
}

func TestGenerateStream(t *testing.T) {
	_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 6}}}, openai.Config{})
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
