package anthropic_test

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/provider/anthropic"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves cfg over loopback and returns a Model pointed at it.
func start(t *testing.T, cfg fakeanthropic.Config, mc anthropic.Config, opts ...option.RequestOption) (*fakeanthropic.Server, *anthropic.Model) {
	t.Helper()
	s, err := fakeanthropic.Start(cfg)
	if err != nil {
		t.Fatalf("fakeanthropic.Start: %v", err)
	}
	t.Cleanup(s.Close)
	all := append([]option.RequestOption{option.WithBaseURL(s.BaseURL()), option.WithAPIKey("test-key"), option.WithHTTPClient(s.Client())}, opts...)
	return s, anthropic.New(mc, all...)
}

func userReq(model, text string) *portico.Request {
	return &portico.Request{Model: model, Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

func respText(r *portico.Response) string {
	if r == nil {
		return "<nil>"
	}
	return r.Text
}

func TestGenerateText(t *testing.T) {
	_, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 5, CacheReadInputTokens: 2, CacheWriteInputTokens: 1}}}, anthropic.Config{})
	resp, err := m.Generate(context.Background(), userReq("m", "hello there"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := len(strings.Fields(resp.Text)); got != 5 {
		t.Errorf("words in Text %q = %d, want 5", resp.Text, got)
	}
	// 2 words + 3 for the message: 5 input tokens, 2 of them cache reads
	// (exempt from the ITPM limit), 1 a cache write.
	want := portico.Usage{InputTokens: 5, OutputTokens: 5, CachedInputTokens: 2, CacheWriteTokens: 1, LimitExemptTokens: 2}
	if resp.Usage != want || resp.FinishReason != portico.FinishStop || resp.Model != "m" || !strings.HasPrefix(resp.ID, "msg_") {
		t.Errorf("Generate = usage %+v finish %q model %q id %q, want %+v stop m msg_...", resp.Usage, resp.FinishReason, resp.Model, resp.ID, want)
	}
}

func TestGenerateStream(t *testing.T) {
	_, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 6, CacheReadInputTokens: 4}}}, anthropic.Config{})
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
	want := portico.Usage{InputTokens: 5, OutputTokens: 6, CachedInputTokens: 4, LimitExemptTokens: 4}
	if resp.Usage != want || resp.FinishReason != portico.FinishStop || !strings.HasPrefix(resp.ID, "msg_") {
		t.Errorf("usage %+v finish %q id %q, want %+v stop msg_...", resp.Usage, resp.FinishReason, resp.ID, want)
	}
}

func TestConformance(t *testing.T) {
	modeltest.RunModel(t, func(t *testing.T) portico.Model {
		_, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "suite-model"}}}, anthropic.Config{})
		return m
	})
}
