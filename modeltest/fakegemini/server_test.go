package fakegemini

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends body to path on s and returns the status and body.
func post(t *testing.T, s *Server, path, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+path, strings.NewReader(body))
	req.Header.Set("x-goog-api-key", "k")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

const hello = `{"contents":[{"role":"user","parts":[{"text":"hello there"}]}]}`

type gerr struct {
	Error struct {
		Code    int              `json:"code"`
		Message string           `json:"message"`
		Status  string           `json:"status"`
		Details []map[string]any `json:"details"`
	} `json:"error"`
}

func decodeErr(t *testing.T, b string) gerr {
	t.Helper()
	var e gerr
	if err := json.Unmarshal([]byte(b), &e); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return e
}

func TestWholeAnswer(t *testing.T) {
	s := start(t, Config{Models: []ModelConfig{{Name: "m", OutputTokens: 3, CachedInputTokens: 1, ThoughtsTokens: 2}}})
	status, _, b := post(t, s, "/v1beta/models/m:generateContent", hello)
	var r wireResponse
	if err := json.Unmarshal([]byte(b), &r); err != nil || status != 200 {
		t.Fatalf("status %d body %s (%v)", status, b, err)
	}
	c := r.Candidates[0]
	u := r.UsageMetadata
	if len(strings.Fields(*c.Content.Parts[0].Text)) != 3 || c.FinishReason != "STOP" || c.Content.Role != "model" || r.ModelVersion != "m" ||
		u.PromptTokenCount != 5 || u.CandidatesTokenCount != 3 || u.ThoughtsTokenCount != 2 || u.CachedContentTokenCount != 1 || u.TotalTokenCount != 10 {
		t.Errorf("answer = %s, want 3 words, STOP, usage 5+3+2 (total 10), 1 cached", b)
	}
	if s.Count("m") != 1 || s.Requests()[0].Stream || s.Requests()[0].Model != "m" {
		t.Errorf("recorded %+v, want one whole request for m", s.Requests())
	}
}

// The stream's events, one per token, each with running usage, then the
// finish reason.
func TestStreamFraming(t *testing.T) {
	s := start(t, Config{Models: []ModelConfig{{Name: "m", OutputTokens: 3}}})
	status, h, b := post(t, s, "/v1beta/models/m:streamGenerateContent?alt=sse", hello)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content type %q", status, h.Get("Content-Type"))
	}
	var texts []string
	var finish string
	var candidates []int
	sc := bufio.NewScanner(strings.NewReader(b))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var r wireResponse
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		texts = append(texts, *r.Candidates[0].Content.Parts[0].Text)
		candidates = append(candidates, r.UsageMetadata.CandidatesTokenCount)
		finish = r.Candidates[0].FinishReason
	}
	if len(texts) != 4 || texts[3] != "" || finish != "STOP" || candidates[0] != 1 || candidates[2] != 3 || candidates[3] != 3 {
		t.Errorf("events = %q (usage %v, finish %q), want 3 words then an empty final chunk with STOP and running usage 1..3", texts, candidates, finish)
	}
	if !s.Requests()[0].Stream {
		t.Error("recorded Stream = false, want true")
	}
}

func TestGoogleErrors(t *testing.T) {
	s := start(t, Config{APIKey: "right", Models: []ModelConfig{{Name: "m", ContextWindow: 4, Script: []Fault{
		{Kind: FaultStatus, Status: 429, RetryAfter: 2500 * time.Millisecond},
		{Kind: FaultStatus, Status: 503},
		{Kind: FaultStatus, Status: 403, Type: "SERVICE_DISABLED", Code: "PERMISSION_DENIED", Message: "custom"},
	}}}})
	path := "/v1beta/models/m:generateContent?key=right"
	status, h, b := post(t, s, path, hello)
	e := decodeErr(t, b)
	var retry, quota string
	for _, d := range e.Error.Details {
		switch d["@type"] {
		case "type.googleapis.com/google.rpc.RetryInfo":
			retry, _ = d["retryDelay"].(string)
		case "type.googleapis.com/google.rpc.QuotaFailure":
			quota, _ = d["violations"].([]any)[0].(map[string]any)["quotaId"].(string)
		}
	}
	if status != 429 || e.Error.Code != 429 || e.Error.Status != "RESOURCE_EXHAUSTED" || retry != "2.500s" || quota == "" || h.Get("Retry-After") != "" {
		t.Errorf("429 = %d %s (retry-after header %q), want RESOURCE_EXHAUSTED with RetryInfo 2.500s in the body only", status, b, h.Get("Retry-After"))
	}
	if status, _, b = post(t, s, path, hello); status != 503 || decodeErr(t, b).Error.Status != "UNAVAILABLE" {
		t.Errorf("503 = %d %s, want UNAVAILABLE", status, b)
	}
	status, _, b = post(t, s, path, hello)
	if e := decodeErr(t, b); status != 403 || e.Error.Message != "custom" || e.Error.Details[0]["reason"] != "SERVICE_DISABLED" {
		t.Errorf("403 = %d %s, want the fault's message and ErrorInfo reason", status, b)
	}
	// After the script: the context window (4 tokens; the prompt has 5).
	status, _, b = post(t, s, path, hello)
	if e := decodeErr(t, b); status != 400 || e.Error.Status != "INVALID_ARGUMENT" || e.Error.Message != "The input token count (5) exceeds the maximum number of tokens allowed (4)." {
		t.Errorf("too long = %d %s, want Gemini's wording", status, b)
	}
	for _, tc := range []struct {
		path, body string
		status     int
		rpc        string
	}{
		{"/v1beta/models/m:generateContent", hello, 400, "INVALID_ARGUMENT"}, // no key
		{"/v1beta/models/nope:generateContent?key=right", hello, 404, "NOT_FOUND"},
		{"/v1beta/models/m:predict?key=right", hello, 404, "NOT_FOUND"},
		{"/v1beta/models/m:generateContent?key=right", `{`, 400, "INVALID_ARGUMENT"},
		{"/v1beta/models/m:generateContent?key=right", `{"contents":[]}`, 400, "INVALID_ARGUMENT"},
		{"/v1beta/models/m:streamGenerateContent?key=right", hello, 400, "INVALID_ARGUMENT"}, // no alt=sse
		{"/v1beta/models/m:generateContent?key=right", `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"!!"}}]}]}`, 400, "INVALID_ARGUMENT"},
		{"/v1beta/models/m:generateContent?key=right", `{"contents":[{"parts":[{"functionResponse":{"response":{}}}]}]}`, 400, "INVALID_ARGUMENT"},
	} {
		status, _, b := post(t, s, tc.path, tc.body)
		if e := decodeErr(t, b); status != tc.status || e.Error.Code != tc.status || e.Error.Status != tc.rpc {
			t.Errorf("POST %s %s = %d %s, want %d %s", tc.path, tc.body, status, b, tc.status, tc.rpc)
		}
	}
}

func TestVertexPathAndTools(t *testing.T) {
	s := start(t, Config{Models: []ModelConfig{{Name: "gemini-2.5-pro", ToolCalls: true, ParallelToolCalls: 2, CallIDs: true}}})
	body := `{"contents":[{"role":"user","parts":[{"text":"weather?"}]}],"tools":[{"functionDeclarations":[` +
		`{"name":"a","parametersJsonSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":3}},"required":["n"]}},` +
		`{"name":"b","parameters":{"type":"OBJECT","properties":{"s":{"type":"STRING","enum":["x"]}}}}]}]}`
	status, _, b := post(t, s, "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent", body)
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					FunctionCall struct {
						ID   string          `json:"id"`
						Name string          `json:"name"`
						Args json.RawMessage `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(b), &r); err != nil || status != 200 {
		t.Fatalf("status %d body %s", status, b)
	}
	p := r.Candidates[0].Content.Parts
	if len(p) != 2 || p[0].FunctionCall.Name != "a" || string(p[0].FunctionCall.Args) != `{"n":3}` || p[1].FunctionCall.Name != "b" ||
		string(p[1].FunctionCall.Args) != `{"s":"x"}` || !strings.HasPrefix(p[0].FunctionCall.ID, "fc-") || r.Candidates[0].FinishReason != "STOP" {
		t.Errorf("answer = %s, want calls a {n:3} and b {s:x} with ids, STOP", b)
	}
	// With the function's response as the last content, the model answers text.
	body = `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},{"role":"model","parts":[{"functionCall":{"name":"a","args":{"n":3}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"a","response":{"output":"sunny"}}}]}],"tools":[{"functionDeclarations":[{"name":"a"}]}]}`
	if status, _, b := post(t, s, "/v1beta/models/gemini-2.5-pro:generateContent", body); status != 200 || !strings.Contains(b, `"text"`) {
		t.Errorf("answer after a function response = %d %s, want text", status, b)
	}
}

func TestBlockedAndFinishReasons(t *testing.T) {
	s := start(t, Config{Models: []ModelConfig{{Name: "blocked", BlockReason: "SAFETY"}, {Name: "recite", FinishReason: "RECITATION"}}})
	status, _, b := post(t, s, "/v1beta/models/blocked:generateContent", hello)
	if status != 200 || !strings.Contains(b, `"promptFeedback":{"blockReason":"SAFETY"}`) || strings.Contains(b, "candidates") {
		t.Errorf("blocked = %d %s, want 200 with promptFeedback and no candidates", status, b)
	}
	_, _, b = post(t, s, "/v1beta/models/blocked:streamGenerateContent?alt=sse", hello)
	if !strings.HasPrefix(b, "data: {") || !strings.Contains(b, `"blockReason":"SAFETY"`) {
		t.Errorf("blocked stream = %s, want one event with promptFeedback", b)
	}
	if _, _, b = post(t, s, "/v1beta/models/recite:generateContent", hello); !strings.Contains(b, `"finishReason":"RECITATION"`) {
		t.Errorf("recite = %s, want finishReason RECITATION", b)
	}
}

// An error event inside the stream after AfterChunks chunks, and the same
// fault on a whole request as an HTTP status.
func TestStreamErrorEvent(t *testing.T) {
	s := start(t, Config{Models: []ModelConfig{{Name: "m", Faults: []Fault{{Kind: FaultStreamError, Fraction: 1, AfterChunks: 2, Code: "RESOURCE_EXHAUSTED", RetryAfter: time.Second}}}}})
	_, _, b := post(t, s, "/v1beta/models/m:streamGenerateContent?alt=sse", hello)
	events := strings.Split(strings.TrimSpace(b), "\n\n")
	if len(events) != 3 || events[2] != `data: {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaValue":"10"}]},{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1s"}]}}` {
		t.Errorf("stream = %q, want 2 chunks then Google's error object", events)
	}
	if status, _, b := post(t, s, "/v1beta/models/m:generateContent", hello); status != 429 || decodeErr(t, b).Error.Status != "RESOURCE_EXHAUSTED" {
		t.Errorf("whole = %d %s, want 429 RESOURCE_EXHAUSTED", status, b)
	}
}

// In a bubble, over the pipe, the pace is exact.
func TestPipePacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := StartPipe(Config{Models: []ModelConfig{{Name: "m", Latency: 100 * time.Millisecond, TTFT: time.Second, TokensPerSecond: 10, OutputTokens: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		start := time.Now()
		if status, _, _ := post(t, s, "/v1beta/models/m:generateContent", hello); status != 200 || time.Since(start) != 1300*time.Millisecond {
			t.Errorf("whole answer = %d after %v, want 200 after 1.3s", status, time.Since(start))
		}
	})
}

func TestFormatRetryDelay(t *testing.T) {
	for d, want := range map[time.Duration]string{
		37 * time.Second: "37s", 2500 * time.Millisecond: "2.500s", 58934310785: "58.934310785s",
		1500 * time.Microsecond: "0.001500s", 0: "0s", -time.Second: "0s",
	} {
		if got := FormatRetryDelay(d); got != want {
			t.Errorf("FormatRetryDelay(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Models: []ModelConfig{{Name: "a"}, {Name: "a"}}},
		{Models: []ModelConfig{{Faults: []Fault{{Fraction: 2}}}}},
		{Models: []ModelConfig{{Script: []Fault{{Kind: FaultStatus, Status: 99}}}}},
	} {
		if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), "fakegemini: ") {
			t.Errorf("New(%+v) = %v, want an error starting fakegemini:", cfg, err)
		}
	}
}
