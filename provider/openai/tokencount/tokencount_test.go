package tokencount

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/portico-llm/portico"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t *testing.T, c Config) *Estimator {
	t.Helper()
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCount: counts of each encoding; "" is 0, and invalid UTF-8 counts
// without an error.
func TestCount(t *testing.T) {
	o, c := mustNew(t, Config{}), mustNew(t, Config{Encoding: Cl100kBase})
	for _, tc := range []struct {
		text       string
		o200k, c1k int
	}{
		{"", 0, 0},
		{"hello world", 2, 2},
		{"tiktoken is great!", 6, 6}, // cl100k: the cookbook's example
		{"你好，世界", 3, 6},
		{"\xff\xfe", 1, 1}, // a byte pair of both vocabularies
	} {
		if got := o.Count(tc.text); got != tc.o200k {
			t.Errorf("o200k Count(%q) = %d, want %d", tc.text, got, tc.o200k)
		}
		if got := c.Count(tc.text); got != tc.c1k {
			t.Errorf("cl100k Count(%q) = %d, want %d", tc.text, got, tc.c1k)
		}
	}
}

// TestEstimateParts: each part of a request counted as the package says.
func TestEstimateParts(t *testing.T) {
	e := mustNew(t, Config{ImageTokens: 100})
	user := func(parts ...portico.Part) *portico.Request {
		return &portico.Request{Messages: []portico.Message{{Role: portico.RoleUser, Content: parts}}}
	}
	hello := portico.Part{Kind: portico.PartText, Text: "hello world"}
	// A message: 3 framing + 1 ("user") + its content; 3 prime the reply.
	for _, tc := range []struct {
		name string
		req  *portico.Request
		want int
	}{
		{"empty message", user(), 3 + 1 + 3},
		{"text", user(hello), 3 + 1 + 2 + 3},
		{"image", user(hello, portico.Part{Kind: portico.PartImage, ImageURL: "https://example.com/a.png"}), 3 + 1 + 2 + 100 + 3},
		{"plain document", user(portico.Part{Kind: portico.PartDocument, Media: &portico.Media{Type: "text/plain", Data: []byte("hello world")}}), 3 + 1 + 2 + 3},
		{"pdf not counted", user(portico.Part{Kind: portico.PartDocument, Media: &portico.Media{Type: "application/pdf", Data: []byte("%PDF-1.7")}}), 3 + 1 + 3},
		{"tool call", &portico.Request{Messages: []portico.Message{{Role: portico.RoleAssistant,
			ToolCalls: []portico.ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Lisbon"}`)}}}}}, 3 + 1 + 2 + 6 + 3},
		{"tool and schema", &portico.Request{Messages: user(hello).Messages,
			Tools:  []portico.Tool{{Name: "get_weather", Description: "hello world", Parameters: json.RawMessage(`{}`)}},
			Schema: &portico.Schema{JSON: json.RawMessage(`{}`)}}, 3 + 1 + 2 + 3 + 2 + 2 + 1 + 1},
		{"embedding", &portico.Request{Embedding: &portico.Embedding{Space: "s"}, Messages: []portico.Message{
			portico.Text(portico.RoleUser, "hello world"), portico.Text(portico.RoleUser, "hello")}}, 3},
	} {
		if got := e.EstimateInputTokens(tc.req); got != tc.want {
			t.Errorf("%s: EstimateInputTokens = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestConfigMistakes: an unknown encoding and a negative ImageTokens are
// refused, naming the field.
func TestConfigMistakes(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Encoding: "p50k_base"}, "Config.Encoding"},
		{Config{ImageTokens: -1}, "Config.ImageTokens"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.HasPrefix(err.Error(), "tokencount: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}

// TestConcurrent: one Estimator counting from 8 goroutines gives each
// the same count; run with -race.
func TestConcurrent(t *testing.T) {
	e := mustNew(t, Config{})
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, strings.Repeat("The quick brown fox. ", 50))}}
	want := e.EstimateInputTokens(req)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := e.EstimateInputTokens(req); got != want {
					t.Errorf("concurrent count = %d, want %d", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzCount: any string, valid UTF-8 or not, counts without a panic to
// at least 0 and at most its bytes (each token covers a byte or more),
// alone and joined to another.
func FuzzCount(f *testing.F) {
	for _, s := range []string{"", "hello world", "你好，世界", "\xff\xfe\x00", "{\"a\":[1,2,3]}", "  \n\n\t"} {
		f.Add(s, s)
	}
	e, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if na := e.Count(a); na < 0 || na > len(a) {
			t.Fatalf("Count(%q) = %d, want 0..%d", a, na, len(a))
		}
		if n := e.Count(a + b); n > len(a)+len(b) {
			t.Fatalf("Count(%q) = %d, want at most %d", a+b, n, len(a)+len(b))
		}
	})
}
