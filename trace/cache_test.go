package trace

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/respcache"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestCacheHitsAndMisses: a response cache's lookups are span events of
// the request span and points of portico.cache.lookups by result.
func TestCacheHitsAndMisses(t *testing.T) {
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	c, err := respcache.New(respcache.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := tr.Wrap(c.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
	})))
	req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
	for range 3 {
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, span := range s.rec.Ended() {
		for _, e := range span.Events() {
			if e.Name == EventNameCache {
				got = append(got, attrs(e.Attributes)[string(KeyCacheResult)])
			}
		}
	}
	if len(got) != 3 || got[0] != "miss" || got[1] != "hit" || got[2] != "hit" {
		t.Errorf("cache span events = %v, want [miss hit hit]", got)
	}
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if p := onePoint(t, rm, MetricCacheLookups, map[string]string{string(KeyCacheResult): "hit"}); p.value != 2 {
		t.Errorf("hits = %v, want 2", p.value)
	}
	if p := onePoint(t, rm, MetricCacheLookups, map[string]string{string(KeyCacheResult): "miss"}); p.value != 1 {
		t.Errorf("misses = %v, want 1", p.value)
	}
}
