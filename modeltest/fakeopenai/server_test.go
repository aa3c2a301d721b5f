package fakeopenai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends a chat-completions request body and returns the response.
func post(t *testing.T, ctx context.Context, s *fakeopenai.Server, body string, header ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL()+"chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return s.Client().Do(req)
}

func body(model string, stream, usage bool) string {
	b, _ := json.Marshal(map[string]any{
		"model":          model,
		"messages":       []any{map[string]any{"role": "user", "content": "hello there"}},
		"stream":         stream,
		"stream_options": map[string]any{"include_usage": usage},
	})
	return string(b)
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// events reads an SSE body: the data of each event, and when each arrived.
func events(t *testing.T, r io.Reader, start time.Time) (data []string, at []time.Duration) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
			at = append(at, time.Since(start))
		}
	}
	return data, at
}

// Latency, TTFT and tokens per second pass in virtual time, exactly.
func TestTimingInSynctest(t *testing.T) {
	cfg := fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", Latency: 100 * time.Millisecond, TTFT: 200 * time.Millisecond, TokensPerSecond: 10, OutputTokens: 5}}}
	t.Run("whole", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, err := fakeopenai.StartPipe(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			start := time.Now()
			res, err := post(t, t.Context(), s, body("m", false, false))
			if err != nil {
				t.Fatal(err)
			}
			var c completion
			err = json.NewDecoder(res.Body).Decode(&c)
			res.Body.Close()
			// 100 ms latency + 200 ms TTFT + 4 more tokens at 10/s.
			if got, want := time.Since(start), 700*time.Millisecond; got != want || err != nil {
				t.Errorf("non-streamed answer took %v (%v), want %v", got, err, want)
			}
			if n := len(strings.Fields(c.Choices[0].Message.Content)); n != 5 || c.Usage.CompletionTokens != 5 || c.Usage.PromptTokens != 5 {
				t.Errorf("answer %q usage %+v, want 5 words, 5+5 tokens", c.Choices[0].Message.Content, c.Usage)
			}
		})
	})
	t.Run("stream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, err := fakeopenai.StartPipe(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			start := time.Now()
			res, err := post(t, t.Context(), s, body("m", true, true))
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != 100*time.Millisecond {
				t.Errorf("headers after %v, want 100ms", got)
			}
			data, at := events(t, res.Body, start)
			res.Body.Close()
			// role chunk, 5 content chunks, finish chunk, usage chunk, [DONE].
			if len(data) != 9 || data[8] != "[DONE]" {
				t.Fatalf("events = %q, want 9 ending in [DONE]", data)
			}
			want := []time.Duration{300, 300, 400, 500, 600, 700, 700, 700, 700}
			for i := range want {
				if at[i] != want[i]*time.Millisecond {
					t.Errorf("event %d at %v, want %v", i, at[i], want[i]*time.Millisecond)
				}
			}
			var text strings.Builder
			for i, d := range data[:8] {
				var c completion
				if err := json.Unmarshal([]byte(d), &c); err != nil {
					t.Fatalf("event %d %q: %v", i, d, err)
				}
				switch {
				case i == 0:
					if c.Choices[0].Delta.Role != "assistant" {
						t.Errorf("first delta role = %q, want assistant", c.Choices[0].Delta.Role)
					}
				case i <= 5:
					text.WriteString(c.Choices[0].Delta.Content)
				case i == 6:
					if f := c.Choices[0].FinishReason; f == nil || *f != "stop" {
						t.Errorf("finish chunk = %s, want finish_reason stop", d)
					}
				case i == 7:
					if len(c.Choices) != 0 || c.Usage == nil || c.Usage.CompletionTokens != 5 || c.Usage.TotalTokens != 10 {
						t.Errorf("usage chunk = %s, want no choices and usage 5+5", d)
					}
				}
			}
			if n := len(strings.Fields(text.String())); n != 5 {
				t.Errorf("streamed text %q, want 5 words", text.String())
			}
		})
	})
}

func TestStreamWithoutUsage(t *testing.T) {
	s := start(t, fakeopenai.Config{})
	res, err := post(t, t.Context(), s, body(fakeopenai.DefaultModel, true, false))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := events(t, res.Body, time.Now())
	res.Body.Close()
	if len(data) != 11 || strings.Contains(strings.Join(data, ""), `"prompt_tokens"`) {
		t.Errorf("events = %q, want 11 (role, 8 tokens, finish, [DONE]) and no usage", data)
	}
}

func start(t *testing.T, cfg fakeopenai.Config) *fakeopenai.Server {
	t.Helper()
	s, err := fakeopenai.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestErrorFormatAndHeaders(t *testing.T) {
	s := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", Faults: []fakeopenai.Fault{{
		Kind: fakeopenai.FaultStatus, Status: 429, Fraction: 1, RetryAfter: 1500 * time.Millisecond,
		RetryAfterMsHeader: 1500 * time.Millisecond, ShouldRetry: "true",
	}}}}})
	res, err := post(t, t.Context(), s, body("m", false, false))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var e struct {
		Error map[string]any `json:"error"`
	}
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 429 || e.Error["code"] != "rate_limit_exceeded" || e.Error["type"] != "requests" || e.Error["message"] == "" {
		t.Errorf("429 body = %s, want OpenAI's error object", raw)
	}
	if _, ok := e.Error["param"]; !ok {
		t.Errorf("429 body = %s, want a param field (null)", raw)
	}
	h := res.Header
	if h.Get("retry-after") != "2" || h.Get("retry-after-ms") != "1500" || h.Get("x-should-retry") != "true" {
		t.Errorf("headers retry-after %q retry-after-ms %q x-should-retry %q, want 2, 1500, true",
			h.Get("retry-after"), h.Get("retry-after-ms"), h.Get("x-should-retry"))
	}
}

func TestUnknownModelAndPath(t *testing.T) {
	s := start(t, fakeopenai.Config{})
	res, err := post(t, t.Context(), s, body("nope", false, false))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("unknown model status = %d, want 404", res.StatusCode)
	}
	res, err = s.Client().Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("GET /v1/models status = %d, want 404", res.StatusCode)
	}
	res, err = post(t, t.Context(), s, "{not json")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Errorf("malformed request status = %d, want 400", res.StatusCode)
	}
	if got := s.Count("nope"); got != 1 {
		t.Errorf("Count(nope) = %d, want 1", got)
	}
}

// Faults are drawn from the seed: two servers with the same seed inject the
// same sequence, and each fault's share is its fraction within sampling error.
func TestFaultsDeterministicAndProportional(t *testing.T) {
	cfg := fakeopenai.Config{Seed: 42, Models: []fakeopenai.ModelConfig{{Name: "m", Faults: []fakeopenai.Fault{
		{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 0.2},
		{Kind: fakeopenai.FaultTruncate, Fraction: 0.1, AfterChunks: 1},
	}}}}
	const n = 600
	run := func() []fakeopenai.FaultKind {
		s := start(t, cfg)
		for range n {
			res, err := post(t, t.Context(), s, body("m", false, false))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		var kinds []fakeopenai.FaultKind
		for _, r := range s.Requests() {
			kinds = append(kinds, r.Fault)
		}
		return kinds
	}
	a, b := run(), run()
	count := map[fakeopenai.FaultKind]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: fault %v then %v with the same seed, want the same", i, a[i], b[i])
		}
		count[a[i]]++
	}
	// Binomial(600, p): 4 standard deviations (sqrt(600 p (1-p)): 9.8 for 0.2,
	// 7.3 for 0.1) bound a false failure below 1e-4.
	for kind, p := range map[fakeopenai.FaultKind]float64{fakeopenai.FaultStatus: 0.2, fakeopenai.FaultTruncate: 0.1, fakeopenai.NoFault: 0.7} {
		sd := math.Sqrt(n * p * (1 - p))
		if got := float64(count[kind]); math.Abs(got-n*p) > 4*sd {
			t.Errorf("%v: %v of %d requests, want %v ± %.0f", kind, got, n, n*p, 4*sd)
		}
	}
}

// A stall that waits forever ends when the client gives up, and Close ends
// any that remain; goleak and the bubble check nothing is left.
func TestStallsEnd(t *testing.T) {
	cfg := fakeopenai.Config{Models: []fakeopenai.ModelConfig{
		{Name: "before", Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStallBeforeHeaders, Fraction: 1}}},
		{Name: "mid", Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStallMidStream, Fraction: 1, AfterChunks: 2}}},
	}}
	synctest.Test(t, func(t *testing.T) {
		s, err := fakeopenai.StartPipe(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err = post(t, ctx, s, body("before", false, false))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("stall before headers: err %v after %v, want deadline after 1s", err, time.Since(start))
		}
		res, err := post(t, t.Context(), s, body("mid", true, false))
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(res.Body)
		for range 3 { // role chunk and 2 tokens
			if _, err := r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			r.ReadString('\n')
		}
		synctest.Wait() // the server is now stalled
		res.Body.Close()
	})
	arrived := make(chan struct{}, 1)
	cfg.OnRequest = func(fakeopenai.Request) { arrived <- struct{}{} }
	s := start(t, cfg)
	done := make(chan error)
	go func() {
		_, err := post(t, context.Background(), s, body("before", false, false))
		done <- err
	}()
	<-arrived
	s.Close()
	if err := <-done; err == nil {
		t.Errorf("request stalled at Close: err = nil, want a transport error")
	}
}

func TestTraceparentAndRecords(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s := start(t, fakeopenai.Config{})
	res, err := post(t, t.Context(), s, body(fakeopenai.DefaultModel, true, true), "traceparent", tp)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if got := res.Header.Get("traceparent"); got != tp {
		t.Errorf("echoed traceparent = %q, want %q", got, tp)
	}
	rs := s.Requests()
	if len(rs) != 1 || rs[0].Traceparent != tp || !rs[0].Stream || rs[0].Model != fakeopenai.DefaultModel || !bytes.Contains(rs[0].Body, []byte("hello there")) {
		t.Errorf("Requests() = %+v, want one streamed request with the traceparent and body", rs)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []fakeopenai.Config{
		{Models: []fakeopenai.ModelConfig{{Name: "a"}, {Name: "a"}}},
		{Models: []fakeopenai.ModelConfig{{Faults: []fakeopenai.Fault{{Fraction: 1.5}}}}},
		{Models: []fakeopenai.ModelConfig{{Faults: []fakeopenai.Fault{{Fraction: 0.6}, {Fraction: 0.6}}}}},
		{Models: []fakeopenai.ModelConfig{{Faults: []fakeopenai.Fault{{Fraction: math.NaN()}}}}},
		{Models: []fakeopenai.ModelConfig{{Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: -1}}}}},
		{Models: []fakeopenai.ModelConfig{{Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 200}}}}},
		{Models: []fakeopenai.ModelConfig{{Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 1000}}}}},
		{Models: []fakeopenai.ModelConfig{{Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStallMidStream, AfterChunks: -1}}}}},
	} {
		if s, err := fakeopenai.New(cfg); err == nil || s != nil || !strings.HasPrefix(err.Error(), "fakeopenai: ") {
			t.Errorf("New(%+v) = %v, %v; want nil and a fakeopenai: error", cfg, s, err)
		}
	}
}

func TestFormatReset(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 6 * time.Minute: "6m0s", 20 * time.Millisecond: "20ms",
		17280 * time.Millisecond: "17.28s", 0: "0s", -time.Second: "0s", time.Microsecond: "1ms",
	} {
		if got := fakeopenai.FormatReset(d); got != want {
			t.Errorf("FormatReset(%v) = %q, want %q", d, got, want)
		}
	}
}

// Enforce refuses the request that would exceed the window with a 429 that
// says when the window resets; the next window admits again.
func TestRateLimitEnforced(t *testing.T) {
	cfg := fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", RateLimit: &fakeopenai.RateLimit{
		Requests: 2, ResetRequests: time.Second, Tokens: 1000, ResetTokens: time.Minute, Enforce: true,
	}}}}
	synctest.Test(t, func(t *testing.T) {
		s, err := fakeopenai.StartPipe(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		call := func() *http.Response {
			res, err := post(t, t.Context(), s, body("m", false, false))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return res
		}
		time.Sleep(250 * time.Millisecond)
		for i, want := range []struct {
			status    int
			remaining string
		}{{200, "1"}, {200, "0"}, {429, "0"}} {
			res := call()
			if res.StatusCode != want.status || res.Header.Get("x-ratelimit-remaining-requests") != want.remaining {
				t.Errorf("call %d: status %d remaining %q, want %d %q", i, res.StatusCode, res.Header.Get("x-ratelimit-remaining-requests"), want.status, want.remaining)
			}
			if want.status == 429 && (res.Header.Get("retry-after-ms") != "750" || res.Header.Get("x-ratelimit-reset-requests") != "750ms") {
				t.Errorf("429 retry-after-ms %q reset %q, want 750 and 750ms", res.Header.Get("retry-after-ms"), res.Header.Get("x-ratelimit-reset-requests"))
			}
		}
		time.Sleep(750 * time.Millisecond)
		if res := call(); res.StatusCode != 200 || res.Header.Get("x-ratelimit-remaining-requests") != "1" {
			t.Errorf("next window: status %d remaining %q, want 200 1", res.StatusCode, res.Header.Get("x-ratelimit-remaining-requests"))
		}
		// The refused request took no tokens: four admitted requests of 5 tokens
		// leave 980 of 1000.
		if res := call(); res.Header.Get("x-ratelimit-remaining-tokens") != "980" {
			t.Errorf("remaining tokens %q, want 980 (four admitted requests of 5 tokens)", res.Header.Get("x-ratelimit-remaining-tokens"))
		}
	})
}

// Jitter spreads latencies in [Latency, Latency+Jitter), the same way for
// the same seed.
func TestJitterDeterministic(t *testing.T) {
	cfg := fakeopenai.Config{Seed: 9, Models: []fakeopenai.ModelConfig{{Name: "m", Latency: 10 * time.Millisecond, Jitter: 100 * time.Millisecond}}}
	run := func() []time.Duration {
		var out []time.Duration
		synctest.Test(t, func(t *testing.T) {
			s, err := fakeopenai.StartPipe(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for range 20 {
				start := time.Now()
				res, err := post(t, t.Context(), s, body("m", false, false))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				out = append(out, time.Since(start))
			}
		})
		return out
	}
	a, b := run(), run()
	distinct := map[time.Duration]bool{}
	for i := range a {
		if a[i] != b[i] || a[i] < 10*time.Millisecond || a[i] >= 110*time.Millisecond {
			t.Errorf("request %d: latencies %v and %v, want equal and in [10ms, 110ms)", i, a[i], b[i])
		}
		distinct[a[i]] = true
	}
	if len(distinct) < 15 {
		t.Errorf("%d distinct latencies of 20, want a spread", len(distinct))
	}
}

// A client that disconnects in the middle of a long stream over loopback
// ends its handler without Close: the stream (10 s at its pace) does not run
// on, and Close then leaves nothing behind.
func TestClientDisconnectMidStream(t *testing.T) {
	s := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 10000, TokensPerSecond: 1000}}})
	before := goleak.IgnoreCurrent() // the listener's goroutines
	ctx, cancel := context.WithCancel(t.Context())
	res, err := post(t, ctx, s, body("m", true, true))
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(res.Body)
	for range 3 { // the role chunk and two tokens
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		r.ReadString('\n')
	}
	cancel()
	res.Body.Close()
	s.Client().CloseIdleConnections()
	// goleak retries for a while: the handler must notice the disconnect.
	if err := goleak.Find(before); err != nil {
		t.Errorf("after the client left mid-stream: %v", err)
	}
	s.Close()
	if err := goleak.Find(); err != nil {
		t.Errorf("after Close: %v", err)
	}
}

// Start binds 127.0.0.1 on a free port, and after Close nothing listens there.
func TestStartLoopback(t *testing.T) {
	s, err := fakeopenai.Start(fakeopenai.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.URL())
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.Port() == "0" || s.BaseURL() != s.URL()+"/v1/" {
		t.Fatalf("URL() = %q, BaseURL() = %q, want http://127.0.0.1:PORT and that plus /v1/", s.URL(), s.BaseURL())
	}
	res, err := post(t, t.Context(), s, body(fakeopenai.DefaultModel, false, false))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("post = %v, %v; want 200", res, err)
	}
	res.Body.Close()
	s.Close()
	s.Close() // idempotent
	if c, err := net.Dial("tcp", u.Host); err == nil {
		c.Close()
		t.Errorf("Dial(%s) after Close succeeded, want refused", u.Host)
	}
}

// Requests keeps at most RecordLimit requests; Count keeps counting.
func TestRecordLimit(t *testing.T) {
	for _, tc := range []struct{ limit, want int }{{2, 2}, {-1, 0}, {0, 5}} {
		s := start(t, fakeopenai.Config{RecordLimit: tc.limit})
		for range 5 {
			resp, err := post(t, context.Background(), s, `{"model":"fake-model","messages":[{"role":"user","content":"hi"}]}`)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if got := len(s.Requests()); got != tc.want || s.Count(fakeopenai.DefaultModel) != 5 {
			t.Errorf("RecordLimit %d: recorded %d, counted %d; want %d recorded, 5 counted", tc.limit, got, s.Count(fakeopenai.DefaultModel), tc.want)
		}
	}
}

// A script plays its steps in order on one model, then the model draws: a
// 503 with a malformed retry-after, an answer, a 200 whose body is null, an
// OpenAI error event after two chunks and a vLLM-style named error event
// before any content.
func TestScript(t *testing.T) {
	s := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 3, Script: []fakeopenai.Fault{
		{Kind: fakeopenai.FaultStatus, Status: 503, Header: http.Header{"Retry-After": {"soon"}}},
		{},
		{Kind: fakeopenai.FaultStatus, Status: 200, Body: `null`},
		{Kind: fakeopenai.FaultStreamError, AfterChunks: 2},
		{Kind: fakeopenai.FaultStreamError, Event: "error", Body: `{"object":"error","message":"too long","code":400}`},
	}}}})
	type result struct {
		status int
		header string
		body   string
	}
	get := func(stream bool) result {
		res, err := post(t, t.Context(), s, body("m", stream, false))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return result{res.StatusCode, res.Header.Get("Retry-After"), string(b)}
	}
	if r := get(false); r.status != 503 || r.header != "soon" || !strings.Contains(r.body, `"type":"server_error"`) {
		t.Errorf("request 1 = %+v, want 503 with retry-after soon and an OpenAI error", r)
	}
	if r := get(false); r.status != 200 || !strings.Contains(r.body, `"finish_reason":"stop"`) {
		t.Errorf("request 2 = %+v, want an answer", r)
	}
	if r := get(false); r.status != 200 || r.body != "null" {
		t.Errorf("request 3 = %+v, want 200 null", r)
	}
	r := get(true)
	data, _ := events(t, strings.NewReader(r.body), time.Now())
	if len(data) != 4 || !strings.Contains(data[3], `"error":{"code":"overloaded"`) {
		t.Errorf("request 4 events = %q, want role, 2 tokens and an overloaded error", data)
	}
	if r := get(true); strings.Count(r.body, "data: ") != 2 || !strings.HasSuffix(r.body, "\n\nevent: error\ndata: {\"object\":\"error\",\"message\":\"too long\",\"code\":400}\n\n") {
		t.Errorf("request 5 = %q, want the role chunk then the named error event", r.body)
	}
	if r := get(false); r.status != 200 || !strings.Contains(r.body, `"finish_reason":"stop"`) {
		t.Errorf("request 6 (after the script) = %+v, want an answer", r)
	}
	var kinds []fakeopenai.FaultKind
	for _, rec := range s.Requests() {
		kinds = append(kinds, rec.Fault)
	}
	want := []fakeopenai.FaultKind{fakeopenai.FaultStatus, fakeopenai.NoFault, fakeopenai.FaultStatus, fakeopenai.FaultStreamError, fakeopenai.FaultStreamError, fakeopenai.NoFault}
	if len(kinds) != len(want) {
		t.Fatalf("recorded faults %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("request %d recorded fault %v, want %v", i+1, kinds[i], want[i])
		}
	}
}

// Config.Handler answers every request with the test's own handler, over
// the in-memory pipe, and the requests are still recorded and counted.
func TestHandlerServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := fakeopenai.StartPipe(fakeopenai.Config{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(r.URL.Path + " " + strconv.Itoa(len(b))))
		})})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		b := body("mine", true, false)
		res, err := post(t, t.Context(), s, b)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if want := "/v1/chat/completions " + strconv.Itoa(len(b)); string(got) != want {
			t.Errorf("handler answered %q, want %q", got, want)
		}
		if rs := s.Requests(); len(rs) != 1 || rs[0].Model != "mine" || !rs[0].Stream || string(rs[0].Body) != b || s.Count("mine") != 1 {
			t.Errorf("Requests() = %+v, want the one request for mine, streamed, body intact", rs)
		}
	})
}
