package respcache

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// TestHitMissFill: the second identical request is answered from the
// cache, without a call, at no cost, by no route; each lookup is an event
// and a count.
func TestHitMissFill(t *testing.T) {
	f := modeltest.NewFake(modeltest.Answer("forty-two"))
	c := mustNew(t, Config{})
	m := c.Wrap(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
		resp, err := f.Generate(ctx, r)
		if resp != nil {
			resp.Cost, resp.Route, resp.Usage = 0.5, "r1", portico.Usage{InputTokens: 3, OutputTokens: 2}
		}
		return resp, err
	}))
	var ev events
	ctx := portico.ContextWithObserver(context.Background(), &ev)
	for i := range 3 {
		resp, err := m.Generate(ctx, req("a", "question"))
		if err != nil || resp.Text != "forty-two" || resp.Route != map[bool]string{true: "r1", false: ""}[i == 0] {
			t.Fatalf("call %d = %+v, %v", i, resp, err)
		}
		if want := map[bool]float64{true: 0.5, false: 0}[i == 0]; resp.Cost != want || (i > 0 && resp.Usage != portico.Usage{}) {
			t.Errorf("call %d: Cost %v Usage %+v, want Cost %v and, on a hit, no usage", i, resp.Cost, resp.Usage, want)
		}
	}
	if f.Count() != 1 {
		t.Errorf("calls below = %d, want 1", f.Count())
	}
	if got := c.Stats(); got != (Stats{Hits: 2, Misses: 1}) {
		t.Errorf("Stats() = %+v, want 2 hits, 1 miss", got)
	}
	if got := fmt.Sprint(ev.e); got != "[cache:miss cache:hit cache:hit]" {
		t.Errorf("events = %s", got)
	}
}

// TestScope: one tenant's answer is never another's, unless Scope shares.
func TestScope(t *testing.T) {
	for _, shared := range []bool{false, true} {
		f := modeltest.NewFakeFunc(func(n int, r *portico.Request) modeltest.Outcome {
			return modeltest.Answer("for " + r.Identity.ClientKey)
		})
		cfg := Config{}
		if shared {
			cfg.Scope = func(*portico.Request) string { return "everyone" }
		}
		m := mustNew(t, cfg).Wrap(f)
		m.Generate(context.Background(), req("a", "q"))
		resp, _ := m.Generate(context.Background(), req("b", "q"))
		want := map[bool]string{false: "for b", true: "for a"}[shared]
		if resp.Text != want || f.Count() != map[bool]int{false: 2, true: 1}[shared] {
			t.Errorf("shared %v: tenant b got %q after %d calls, want %q", shared, resp.Text, f.Count(), want)
		}
	}
}

// TestNeverCachesFailures: errors, truncated and filtered answers are
// asked again every time.
func TestNeverCachesFailures(t *testing.T) {
	for _, o := range []modeltest.Outcome{
		modeltest.Fail(modeltest.StatusError(503)),
		{Response: &portico.Response{Text: "cut", FinishReason: portico.FinishLength}},
		{Response: &portico.Response{Text: "", FinishReason: portico.FinishContentFilter}},
		{Response: &portico.Response{Text: "no reason"}},
	} {
		f := modeltest.NewFake(o)
		m := mustNew(t, Config{}).Wrap(f)
		for range 3 {
			m.Generate(context.Background(), req("a", "q"))
		}
		if f.Count() != 3 {
			t.Errorf("%+v: calls below = %d, want 3", o, f.Count())
		}
	}
}

// TestTTL: an answer is served for TTL, then asked again.
func TestTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake()
		m := mustNew(t, Config{TTL: time.Minute}).Wrap(f)
		m.Generate(t.Context(), req("a", "q"))
		time.Sleep(time.Minute - time.Nanosecond)
		m.Generate(t.Context(), req("a", "q"))
		if f.Count() != 1 {
			t.Fatalf("calls within the TTL = %d, want 1", f.Count())
		}
		time.Sleep(time.Nanosecond)
		m.Generate(t.Context(), req("a", "q"))
		if f.Count() != 2 {
			t.Errorf("calls after the TTL = %d, want 2", f.Count())
		}
	})
}

// TestStreamFromCache: a streamed hit delivers the text in chunks of at
// most 64 bytes, never splitting a character; a failing OnChunk's error
// is returned.
func TestStreamFromCache(t *testing.T) {
	text := strings.Repeat("héllo wörld ", 20) + "日本語のテキスト"
	f := modeltest.NewFake(modeltest.Answer(text))
	m := mustNew(t, Config{}).Wrap(f)
	m.Generate(context.Background(), req("a", "q"))
	var chunks []string
	r := req("a", "q")
	r.OnChunk = func(c portico.Chunk) error { chunks = append(chunks, c.Text); return nil }
	resp, err := m.Generate(context.Background(), r)
	if err != nil || f.Count() != 1 {
		t.Fatalf("streamed hit = %v after %d calls", err, f.Count())
	}
	if strings.Join(chunks, "") != text || resp.Text != text || len(chunks) != 5 {
		t.Errorf("streamed %d chunks joining to %q, want 5 joining to the text", len(chunks), strings.Join(chunks, ""))
	}
	for i, c := range chunks {
		if len(c) > 64 || !utf8.ValidString(c) {
			t.Errorf("chunk %d = %q (%d bytes): over 64 bytes or split inside a character", i, c, len(c))
		}
	}
	stop := fmt.Errorf("stop")
	r.OnChunk = func(portico.Chunk) error { return stop }
	if _, err := m.Generate(context.Background(), r); err != stop {
		t.Errorf("OnChunk failing = %v, want its error", err)
	}
}

// TestKey: equal JSON values share a key, any change of what answers does
// not, and a key holds neither prompt nor tenant.
func TestKey(t *testing.T) {
	c := mustNew(t, Config{})
	base := func() *portico.Request {
		r := req("tenant-secret", "the prompt text")
		r.Extra = map[string]any{"temperature": 0.5, "top_p": 1}
		r.Tools = []portico.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{}}}`)}}
		return r
	}
	k0, err := c.Key(base())
	if err != nil || len(k0) != 64 || strings.Contains(k0, "prompt") || strings.Contains(k0, "tenant") {
		t.Fatalf("Key = %q, %v, want 64 hex digits", k0, err)
	}
	same := base()
	same.Extra = map[string]any{"top_p": 1.0, "temperature": json.Number("5e-1")}
	same.Tools = []portico.Tool{{Name: "f", Parameters: json.RawMessage(`{ "properties": {"a": {}}, "type": "object" }`)}}
	same.Contract = &portico.Contract{Deadline: time.Second}
	same.OnChunk = func(portico.Chunk) error { return nil }
	if k, _ := c.Key(same); k != k0 {
		t.Errorf("Key of the same request reordered, respelled, with a deadline and streamed = %s, want %s", k, k0)
	}
	for name, change := range map[string]func(r *portico.Request){
		"model":       func(r *portico.Request) { r.Model = "n" },
		"message":     func(r *portico.Request) { r.Messages = []portico.Message{portico.Text(portico.RoleUser, "other")} },
		"temperature": func(r *portico.Request) { r.Extra = map[string]any{"temperature": 0.6, "top_p": 1} },
		"max tokens":  func(r *portico.Request) { r.MaxOutputTokens = 99 },
		"schema":      func(r *portico.Request) { r.Schema = &portico.Schema{Name: "s", JSON: json.RawMessage(`{}`)} },
		"tools":       func(r *portico.Request) { r.Tools = nil },
		"tenant":      func(r *portico.Request) { r.Identity.ClientKey = "other" },
		"model class": func(r *portico.Request) { r.Contract = &portico.Contract{ModelClasses: []string{"small"}} },
		"reasoning":   func(r *portico.Request) { r.Reasoning = &portico.Reasoning{Effort: portico.EffortHigh} },
	} {
		r := base()
		change(r)
		if k, _ := c.Key(r); k == k0 {
			t.Errorf("a request with another %s has the same key", name)
		}
	}
	args := base()
	args.Messages = append(args.Messages, portico.Message{Role: portico.RoleAssistant,
		ToolCalls: []portico.ToolCall{{ID: "1", Name: "f", Arguments: json.RawMessage(`{"a": 1, "b": [2]}`)}}})
	k1, _ := c.Key(args)
	args.Messages[1].ToolCalls = []portico.ToolCall{{ID: "1", Name: "f", Arguments: json.RawMessage(`{"b":[2],"a":1.0}`)}}
	if k2, _ := c.Key(args); k2 != k1 || k1 == k0 {
		t.Errorf("tool-call arguments equal as JSON: keys %s and %s, want equal (and not %s)", k1, k2, k0)
	}
	args.Messages[1].ToolCalls = []portico.ToolCall{{ID: "1", Name: "f", Arguments: json.RawMessage(`{"b":[2],"a":1.0`)}}
	if k3, err := c.Key(args); err != nil || k3 == k1 {
		t.Errorf("arguments that are not JSON: key %s, %v; want a key of its own", k3, err)
	}
	bad := base()
	bad.Extra = map[string]any{"temperature": math.NaN()}
	if _, err := c.Key(bad); portico.ClassOf(err) != portico.Permanent {
		t.Errorf("Key of a request with invalid JSON = %v, want a Permanent error", err)
	}
	f := modeltest.NewFake()
	m := c.Wrap(f)
	m.Generate(context.Background(), bad)
	m.Generate(context.Background(), bad)
	if f.Count() != 2 {
		t.Errorf("an uncacheable request called %d times of 2", f.Count())
	}
}

// TestMemoryBounds: the least recently used entries go first, by count
// and by bytes.
func TestMemoryBounds(t *testing.T) {
	ctx := context.Background()
	s := NewMemory(3, 100)
	for _, k := range []string{"a", "b", "c"} {
		s.Set(ctx, k, &Entry{Text: k}, time.Hour)
	}
	s.Get(ctx, "a")
	s.Set(ctx, "d", &Entry{Text: "d"}, time.Hour)
	if e, _ := s.Get(ctx, "b"); e != nil || s.Len() != 3 {
		t.Errorf("after a 4th entry, b (least recently used) = %v, len %d; want gone, 3", e, s.Len())
	}
	s.Set(ctx, "big", &Entry{Text: strings.Repeat("x", 99)}, time.Hour)
	if e, _ := s.Get(ctx, "d"); e == nil || s.Len() != 2 {
		t.Errorf("after a 99-byte entry beside 3 of 1 byte in 100 bytes, len = %d, want 2 (big and d, the most recent)", s.Len())
	}
	s.Set(ctx, "huge", &Entry{Text: strings.Repeat("x", 101)}, time.Hour)
	if e, _ := s.Get(ctx, "huge"); e != nil {
		t.Error("an entry above the byte bound was kept")
	}
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model { return mustNew(t, Config{}).Wrap(base) })
}

// TestEmbeddingsNotCached: an embedding request is passed on every time,
// its vectors whole, never looked up (an Entry keeps no vectors), and a
// chat request of the same text is not answered from it.
func TestEmbeddingsNotCached(t *testing.T) {
	f := modeltest.NewFakeFunc(func(_ int, r *portico.Request) modeltest.Outcome {
		if r.Embedding != nil {
			return modeltest.Outcome{Response: &portico.Response{Embeddings: [][]float32{{1, 2}}, FinishReason: portico.FinishStop}}
		}
		return modeltest.Answer("chat")
	})
	c := mustNew(t, Config{})
	m := c.Wrap(f)
	emb := req("a", "hello")
	emb.Embedding = &portico.Embedding{Space: "s/2"}
	for i := range 2 {
		resp, err := m.Generate(context.Background(), emb)
		if err != nil || len(resp.Embeddings) != 1 {
			t.Fatalf("embedding call %d = %+v, %v", i, resp, err)
		}
	}
	if resp, err := m.Generate(context.Background(), req("a", "hello")); err != nil || resp.Text != "chat" {
		t.Fatalf("chat after an embedding = %+v, %v", resp, err)
	}
	if f.Count() != 3 || c.Stats() != (Stats{Misses: 1}) {
		t.Fatalf("calls below %d, stats %+v; want 3 calls and one lookup (the chat's)", f.Count(), c.Stats())
	}
}
