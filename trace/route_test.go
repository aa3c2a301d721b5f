package trace

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/portico-llm/portico"
)

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// TestForRoute: a route's Tracer names its attempts after the route; the
// request span takes the answering attempt's provider, server and model
// (the request names none) and keeps its own when the request fails.
func TestForRoute(t *testing.T) {
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, Provider: "openai", ServerAddress: "api.openai.com", ServerPort: 443})
	rt := tr.ForRoute(Route{Name: "b", Provider: "anthropic", Model: "claude", ServerAddress: "api.anthropic.com", ServerPort: 8443})
	if same := tr.ForRoute(Route{}); same.cfg.Provider != "openai" || same.cfg.ServerAddress != "api.openai.com" || same.cfg.ServerPort != 443 || same.cfg.Pricing != nil || same.route != "" || same.model != "" {
		t.Errorf("ForRoute(Route{}) changed the settings: %+v", same.cfg)
	}
	var fail bool
	m := tr.Wrap(rt.WrapAttempt(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		if fail {
			return nil, &portico.Error{Class: portico.Transient}
		}
		return &portico.Response{Model: "claude-1"}, nil
	})))
	if _, err := m.Generate(context.Background(), &portico.Request{}); err != nil {
		t.Fatal(err)
	}
	fail = true
	m.Generate(context.Background(), &portico.Request{})
	spans := s.rec.Ended()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	if spans[0].Name() != "attempt claude" || spans[1].Name() != "chat claude" || spans[3].Name() != "chat" {
		t.Errorf("span names %q, %q, failed request %q; want attempt claude, chat claude, chat", spans[0].Name(), spans[1].Name(), spans[3].Name())
	}
	sameAttrs(t, "attempt", spans[0].Attributes(), map[string]string{
		"portico.attempt.index": "0", "portico.attempt.model": "claude", "portico.attempt.provider": "anthropic",
		"portico.route": "b", "server.address": "api.anthropic.com", "server.port": "8443",
		"portico.attempt.usage.input_tokens": "0", "portico.attempt.usage.output_tokens": "0",
	})
	got := attrMap(spans[1].Attributes())
	for k, v := range map[string]string{"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude", "server.address": "api.anthropic.com", "server.port": "8443"} {
		if got[k] != v {
			t.Errorf("answered request span %s = %q, want %q", k, got[k], v)
		}
	}
	got = attrMap(spans[3].Attributes())
	for k, v := range map[string]string{"gen_ai.provider.name": "openai", "gen_ai.request.model": "", "server.address": "api.openai.com", "server.port": "443"} {
		if got[k] != v {
			t.Errorf("failed request span %s = %q, want %q", k, got[k], v)
		}
	}
}
