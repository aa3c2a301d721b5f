package fakeanthropic_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/modeltest/fakeanthropic"
)

// post sends a Messages request with the headers the SDK sends and returns
// the response's status, headers and body.
func post(t *testing.T, s *fakeanthropic.Server, body string, drop ...string) (int, http.Header, []byte) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("x-api-key", "k")
	r.Header.Set("anthropic-version", "2023-06-01")
	r.Header.Set("content-type", "application/json")
	for _, h := range drop {
		r.Header.Del(h)
	}
	res, err := s.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

func start(t *testing.T, cfg fakeanthropic.Config) *fakeanthropic.Server {
	t.Helper()
	s, err := fakeanthropic.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func msgReq(model string, extra string) string {
	return `{"model":"` + model + `","max_tokens":100,"messages":[{"role":"user","content":"hello there"}]` + extra + `}`
}

// event is one server-sent event.
type event struct{ name, data string }

func events(t *testing.T, b []byte) []event {
	t.Helper()
	var out []event
	var cur event
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out = append(out, cur)
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[len("data: "):]
		}
	}
	return out
}

func TestWholeMessage(t *testing.T) {
	s := start(t, fakeanthropic.Config{Seed: 1, Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 3, CacheReadInputTokens: 2, CacheWriteInputTokens: 1}}})
	status, h, b := post(t, s, msgReq("m", ""))
	want := `{"id":"msg_3gd62g1jpak5w","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"culpa do laborum"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2,"cache_creation_input_tokens":1,"cache_read_input_tokens":2,"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":0},"output_tokens":3}}`
	if status != 200 || string(b) != want || h.Get("Content-Type") != "application/json" || h.Get("request-id") == "" {
		t.Errorf("POST = %d %s %v, want 200 %s", status, b, h, want)
	}
	// The same request, the same answer; streamed, the same text and id.
	if _, _, again := post(t, s, msgReq("m", "")); string(again) != want {
		t.Errorf("second answer %s, want the first %s", again, want)
	}
}

func TestStreamFraming(t *testing.T) {
	s := start(t, fakeanthropic.Config{Seed: 1, Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 3, ToolCalls: true}}})
	status, h, b := post(t, s, msgReq("m", `,"stream":true`))
	evs := events(t, b)
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
		var typ struct{ Type string }
		if err := json.Unmarshal([]byte(e.data), &typ); err != nil || typ.Type != e.name {
			t.Errorf("event %q data %s, want JSON whose type is the event's name", e.name, e.data)
		}
	}
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || strings.Join(names, " ") != want {
		t.Fatalf("stream = %d %q, want 200 %q", status, strings.Join(names, " "), want)
	}
	if evs[0].data != `{"message":{"id":"msg_3gd62g1jpak5w","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1}},"type":"message_start"}` {
		t.Errorf("message_start = %s", evs[0].data)
	}
	if evs[3].data != `{"delta":{"text":"culpa","type":"text_delta"},"index":0,"type":"content_block_delta"}` || evs[4].data != `{"delta":{"text":" do","type":"text_delta"},"index":0,"type":"content_block_delta"}` {
		t.Errorf("deltas = %s %s, want culpa, do", evs[3].data, evs[4].data)
	}
	if evs[7].data != `{"delta":{"stop_reason":"end_turn","stop_sequence":null},"type":"message_delta","usage":{"output_tokens":3}}` {
		t.Errorf("message_delta = %s", evs[7].data)
	}
	// Tools declared: the model calls the first, its input in 4-byte pieces.
	tools := `,"stream":true,"tools":[{"name":"f","input_schema":{"type":"object","properties":{"n":{"type":"integer","minimum":7}},"required":["n"]}}]`
	_, _, b = post(t, s, msgReq("m", tools))
	evs = events(t, b)
	var input strings.Builder
	for _, e := range evs {
		var d struct {
			Delta struct {
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if e.name == "content_block_delta" && json.Unmarshal([]byte(e.data), &d) == nil {
			input.WriteString(d.Delta.PartialJSON)
		}
	}
	if input.String() != `{"n":7}` || !strings.Contains(evs[1].data, `"type":"tool_use"`) || !strings.Contains(evs[len(evs)-2].data, `"stop_reason":"tool_use"`) {
		t.Errorf("tool stream input %q, events %v; want {\"n\":7} in a tool_use block, stop tool_use", input.String(), evs)
	}
}

// Requests the API refuses, the fake refuses with the API's status and type.
func TestRequestValidation(t *testing.T) {
	s := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", MaxOutputTokens: 50}}})
	cases := []struct {
		name   string
		body   string
		drop   []string
		status int
		typ    string
		msg    string
	}{
		{"no api key", msgReq("m", ""), []string{"x-api-key"}, 401, "authentication_error", "x-api-key header is required"},
		{"no version", msgReq("m", ""), []string{"anthropic-version"}, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "max_tokens: Field required"},
		{"no messages", `{"model":"m","max_tokens":5,"messages":[]}`, nil, 400, "invalid_request_error", "messages: at least one message is required"},
		{"max_tokens above the model's", msgReq("m", ""), nil, 400, "invalid_request_error", "max_tokens: 100 > 50, which is the maximum allowed number of output tokens for m"},
		{"not JSON", `{`, nil, 400, "invalid_request_error", "There was an issue with the format or content of your request."},
		{"unknown model", msgReq("claude-nope", ""), nil, 404, "not_found_error", "model: claude-nope"},
	}
	for _, tc := range cases {
		status, _, b := post(t, s, tc.body, tc.drop...)
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(b, &e); err != nil || status != tc.status || e.Type != "error" || e.Error.Type != tc.typ || e.Error.Message != tc.msg {
			t.Errorf("%s: POST = %d %s, want %d %s %q", tc.name, status, b, tc.status, tc.typ, tc.msg)
		}
	}
	res, err := s.Client().Get(s.URL() + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/messages = %d, want 405", res.StatusCode)
	}
	if n := s.Count("m"); n != 5 {
		t.Errorf("Count(m) = %d, want 5 (refused requests are recorded too)", n)
	}
}

// Each status's error body has the type the API gives it; Code becomes
// details.error_code.
func TestFaultStatusBodies(t *testing.T) {
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 402: "billing_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 502: "api_error", 504: "timeout_error", 529: "overloaded_error"} {
		s := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: status, Fraction: 1, RetryAfter: 1500 * time.Millisecond}}}}})
		got, h, b := post(t, s, msgReq("m", ""))
		var e struct{ Error struct{ Type string } }
		if json.Unmarshal(b, &e); got != status || e.Error.Type != typ || h.Get("retry-after") != "2" {
			t.Errorf("status %d: POST = %d %s retry-after %q, want type %s retry-after 2", status, got, b, h.Get("retry-after"), typ)
		}
	}
	s := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 429, Code: "enforced_spend_limit_reached", Fraction: 1}}}}})
	if _, _, b := post(t, s, msgReq("m", "")); !strings.Contains(string(b), `"details":{"error_code":"enforced_spend_limit_reached"}`) {
		t.Errorf("error body %s, want details.error_code", b)
	}
}

// A script plays its steps in order, then the model draws again.
func TestScript(t *testing.T) {
	s := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m",
		Script: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 529}, {}, {Kind: fakeanthropic.FaultContextLength}},
		Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 500, Fraction: 1}}}}})
	var got []int
	for range 4 {
		status, _, _ := post(t, s, msgReq("m", ""))
		got = append(got, status)
	}
	if want := []int{529, 200, 400, 500}; !equal(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	var faults []string
	for _, r := range s.Requests() {
		faults = append(faults, r.Fault.String())
	}
	if strings.Join(faults, " ") != "status none context_length status" {
		t.Errorf("recorded faults = %v", faults)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Mid-stream faults strike after AfterChunks deltas, with real framing.
func TestStreamFaults(t *testing.T) {
	cases := []struct {
		name  string
		fault fakeanthropic.Fault
		last  event
	}{
		{"overloaded after 2", fakeanthropic.Fault{Kind: fakeanthropic.FaultStreamError, AfterChunks: 2},
			event{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake"}`}},
		{"prompt too long at once", fakeanthropic.Fault{Kind: fakeanthropic.FaultStreamError, Type: "invalid_request_error"},
			event{"error", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 5 tokens \u003e 4 maximum"},"request_id":"req_fake"}`}},
		{"malformed after 1", fakeanthropic.Fault{Kind: fakeanthropic.FaultMalformed, AfterChunks: 1},
			event{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut`}},
	}
	for _, tc := range cases {
		tc.fault.Fraction = 1
		s := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Faults: []fakeanthropic.Fault{tc.fault}}}})
		_, _, b := post(t, s, msgReq("m", `,"stream":true`))
		evs := events(t, b)
		deltas := 0
		for _, e := range evs[:len(evs)-1] {
			if e.name == "content_block_delta" {
				deltas++
			}
		}
		if evs[0].name != "message_start" || deltas != tc.fault.AfterChunks || evs[len(evs)-1] != tc.last {
			t.Errorf("%s: events %v, want message_start, %d deltas, then %v", tc.name, evs, tc.fault.AfterChunks, tc.last)
		}
	}
	// Unstreamed, an error event is the status its type stands for.
	s := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStreamError, Fraction: 1}}}}})
	if status, _, _ := post(t, s, msgReq("m", "")); status != 529 {
		t.Errorf("unstreamed overloaded error event = %d, want 529", status)
	}
}

// A stop sequence cuts the text before it; max_tokens cuts it at the limit.
func TestStops(t *testing.T) {
	s := start(t, fakeanthropic.Config{Seed: 1, Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 3}}})
	_, _, b := post(t, s, msgReq("m", `,"stop_sequences":["zz"," la"]`))
	if !strings.Contains(string(b), `"text":"culpa do"`) || !strings.Contains(string(b), `"stop_reason":"stop_sequence","stop_sequence":" la"`) {
		t.Errorf("answer %s, want \"culpa do\" stopped by \" la\"", b)
	}
	_, _, b = post(t, s, `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hello there"}]}`)
	if !strings.Contains(string(b), `"text":"culpa do"`) || !strings.Contains(string(b), `"stop_reason":"max_tokens"`) || !strings.Contains(string(b), `"output_tokens":2`) {
		t.Errorf("answer %s, want 2 words and max_tokens", b)
	}
}

// Structured output: a JSON value valid against output_config.format's schema.
func TestStructuredOutput(t *testing.T) {
	s := start(t, fakeanthropic.Config{})
	_, _, b := post(t, s, msgReq(fakeanthropic.DefaultModel, `,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"const":3}},"required":["ok","n"]}}}`))
	var msg struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(b, &msg); err != nil || len(msg.Content) != 1 || msg.Content[0].Text != `{"n":3,"ok":true}` {
		t.Errorf("answer %s, want the text {\"n\":3,\"ok\":true}", b)
	}
}

// Input, output and request limits are separate, announced on every answer
// and enforced with a 429 whose retry-after reaches the window's end.
func TestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := fakeanthropic.StartPipe(fakeanthropic.Config{Seed: 1, Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 3,
			RateLimit: &fakeanthropic.RateLimit{Requests: 5, InputTokens: 12, OutputTokens: 100, Enforce: true}}}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		resetAt := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		_, h, _ := post(t, s, msgReq("m", ""))
		for k, want := range map[string]string{
			"requests-limit": "5", "requests-remaining": "4", "requests-reset": resetAt,
			"input-tokens-limit": "12", "input-tokens-remaining": "7", "input-tokens-reset": resetAt,
			"output-tokens-limit": "100", "output-tokens-remaining": "97",
			"tokens-limit": "112", "tokens-remaining": "104",
		} {
			if got := h.Get("anthropic-ratelimit-" + k); got != want {
				t.Errorf("anthropic-ratelimit-%s = %q, want %q", k, got, want)
			}
		}
		time.Sleep(10 * time.Second)
		post(t, s, msgReq("m", ""))
		status, h, b := post(t, s, msgReq("m", "")) // 15 input tokens > 12
		if status != 429 || h.Get("retry-after") != "50" || h.Get("anthropic-ratelimit-input-tokens-remaining") != "2" || !strings.Contains(string(b), "rate_limit_error") {
			t.Errorf("third request = %d retry-after %q remaining %q %s, want 429 after 50s, 2 input tokens left", status, h.Get("retry-after"), h.Get("anthropic-ratelimit-input-tokens-remaining"), b)
		}
		time.Sleep(50 * time.Second)
		if status, _, _ := post(t, s, msgReq("m", "")); status != 200 {
			t.Errorf("request after the window = %d, want 200", status)
		}
	})
}

// In virtual time the stream paces at TTFT and TokensPerSecond, and Close
// ends a stall at once.
func TestPacingAndCloseInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := fakeanthropic.StartPipe(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Latency: 10 * time.Millisecond, TTFT: 100 * time.Millisecond, TokensPerSecond: 10, OutputTokens: 4}}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		post(t, s, msgReq("m", `,"stream":true`))
		if d := time.Since(start); d != 410*time.Millisecond {
			t.Errorf("stream of 4 tokens took %v, want 10ms + 100ms + 3×100ms", d)
		}
		s.Close()
	})
	synctest.Test(t, func(t *testing.T) {
		s, err := fakeanthropic.StartPipe(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStallBeforeHeaders, Fraction: 1}}}}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			r, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(msgReq("m", "")))
			r.Header.Set("x-api-key", "k")
			r.Header.Set("anthropic-version", "2023-06-01")
			res, err := s.Client().Do(r)
			if err == nil {
				res.Body.Close()
			}
			done <- err
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		s.Close()
		if err := <-done; err == nil {
			t.Errorf("stalled request after Close = nil error, want the connection dropped")
		}
	})
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]fakeanthropic.Config{
		"duplicate":  {Models: []fakeanthropic.ModelConfig{{Name: "a"}, {Name: "a"}}},
		"fraction":   {Models: []fakeanthropic.ModelConfig{{Name: "a", Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Fraction: 1.5}}}}},
		"sum":        {Models: []fakeanthropic.ModelConfig{{Name: "a", Faults: []fakeanthropic.Fault{{Fraction: 0.6}, {Fraction: 0.6}}}}},
		"status":     {Models: []fakeanthropic.ModelConfig{{Name: "a", Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 700}}}}},
		"afterChunk": {Models: []fakeanthropic.ModelConfig{{Name: "a", Script: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStreamError, AfterChunks: -1}}}}},
	} {
		if _, err := fakeanthropic.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "fakeanthropic: ") {
			t.Errorf("%s: New = %v, want an error starting fakeanthropic:", name, err)
		}
	}
}
