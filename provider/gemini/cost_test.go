package gemini_test

import (
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/stack"
)

// flash is Gemini 2.5 Flash as its price page lists it
// (https://ai.google.dev/gemini-api/docs/pricing, paid tier, per million
// tokens): input $0.30 (text), context caching $0.03, output $2.50
// "including thinking tokens".
var flash = portico.Capabilities{InputPrice: 0.3e-6, CachedInputPrice: 0.03e-6, OutputPrice: 2.5e-6}

// TestCostMatchesTheBill: Response.Cost through the preset equals the bill
// for a generateContent answer whose usageMetadata is the API's own
// (https://ai.google.dev/api/generate-content#UsageMetadata:
// promptTokenCount includes cachedContentTokenCount; thoughtsTokenCount is
// apart from candidatesTokenCount and billed as output). A request that
// marks a cache breakpoint is sent as one that does not: Gemini caches
// implicitly.
func TestCostMatchesTheBill(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage string // usageMetadata as the API sends it
		want  portico.Usage
		bill  float64
	}{
		// 1,000 x $0.30 + (500 + 4,000) x $2.50.
		{"thinking output", `{"promptTokenCount":1000,"candidatesTokenCount":500,"totalTokenCount":5500,"thoughtsTokenCount":4000,"promptTokensDetails":[{"modality":"TEXT","tokenCount":1000}]}`,
			portico.Usage{InputTokens: 1_000, OutputTokens: 4_500, ReasoningTokens: 4_000}, 0.01155},
		// 10,000 x $0.30 + 90,000 x $0.03 + 200 x $2.50.
		{"cache read", `{"promptTokenCount":100000,"candidatesTokenCount":200,"totalTokenCount":100200,"cachedContentTokenCount":90000,"promptTokensDetails":[{"modality":"TEXT","tokenCount":100000}],"cacheTokensDetails":[{"modality":"TEXT","tokenCount":90000}]}`,
			portico.Usage{InputTokens: 100_000, OutputTokens: 200, CachedInputTokens: 90_000}, 0.0062},
		// 10,000 x $0.30 + 2,000 x $2.50.
		{"plain input and output", `{"promptTokenCount":10000,"candidatesTokenCount":2000,"totalTokenCount":12000}`,
			portico.Usage{InputTokens: 10_000, OutputTokens: 2_000}, 0.008},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var body string
				answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					body = string(b)
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"candidates":[{"content":{"parts":[{"text":"Done."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":`+tc.usage+`,"modelVersion":"gemini-2.5-flash","responseId":"mAitaLmkHPPlz7IPvtfUqQ4"}`)
				})
				_, m := startPipe(t, fakegemini.Config{Handler: answer})
				s, err := stack.New(stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "gemini", Model: m, ModelName: "gemini-2.5-flash", Capabilities: flash}}}})
				if err != nil {
					t.Fatal(err)
				}
				sys := portico.Text(portico.RoleSystem, "rules")
				sys.Cache = portico.Cache1h
				resp, err := s.Generate(t.Context(), &portico.Request{Messages: []portico.Message{sys, portico.Text(portico.RoleUser, "hi")}, MaxOutputTokens: 8_000})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Usage != tc.want || math.Round(resp.Cost*1e8) != math.Round(tc.bill*1e8) {
					t.Errorf("Usage %+v, Cost $%.10f; want %+v, the bill $%g", resp.Usage, resp.Cost, tc.want, tc.bill)
				}
				if strings.Contains(body, "cache") {
					t.Errorf("body %s, want no cache field", body)
				}
			})
		})
	}
}
