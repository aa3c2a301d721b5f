package gemini_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
	"google.golang.org/genai"
)

// faulty returns a one-model config whose every request gets f.
func faulty(f fakegemini.Fault) fakegemini.Config {
	f.Fraction = 1
	return fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", ContextWindow: 1000, Faults: []fakegemini.Fault{f}}}}
}

const perDay = `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[` +
	`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"250"}]},` +
	`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"18.5s"}]}}`

func TestErrorClassesFromStatus(t *testing.T) {
	cases := []struct {
		name   string
		fault  fakegemini.Fault
		stream bool
		class  portico.Class
		status int
		code   string
		after  time.Duration // exact RetryAfter
		reason string        // ProviderError.Reason
	}{
		{"429 retryDelay", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 429, RetryAfter: 37 * time.Second}, false, portico.RateLimited, 429, "RESOURCE_EXHAUSTED", 37 * time.Second, ""},
		{"429 fractional retryDelay streaming", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 429, RetryAfter: 58934310785 * time.Nanosecond}, true, portico.RateLimited, 429, "RESOURCE_EXHAUSTED", 58934310785 * time.Nanosecond, ""},
		{"429 without RetryInfo", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 429}, false, portico.RateLimited, 429, "RESOURCE_EXHAUSTED", 0, ""},
		{"429 daily quota", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 429, Body: perDay}, false, portico.Unusable, 429, "RESOURCE_EXHAUSTED", 18500 * time.Millisecond, ""},
		{"500 INTERNAL", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 500}, false, portico.Transient, 500, "INTERNAL", 0, ""},
		{"503 UNAVAILABLE", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 503}, true, portico.Transient, 503, "UNAVAILABLE", 0, ""},
		{"504 DEADLINE_EXCEEDED", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 504}, false, portico.Transient, 504, "DEADLINE_EXCEEDED", 0, ""},
		{"502 proxy", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 502}, false, portico.Transient, 502, "INTERNAL", 0, ""},
		{"400 input too long", fakegemini.Fault{Kind: fakegemini.FaultContextLength}, false, portico.Incompatible, 400, "INVALID_ARGUMENT", 0, ""},
		{"400 input too long streaming", fakegemini.Fault{Kind: fakegemini.FaultContextLength}, true, portico.Incompatible, 400, "INVALID_ARGUMENT", 0, ""},
		{"400 INVALID_ARGUMENT", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 400}, false, portico.Incompatible, 400, "INVALID_ARGUMENT", 0, ""},
		{"400 API_KEY_INVALID", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 400, Type: "API_KEY_INVALID", Message: "API key not valid. Please pass a valid API key."}, false, portico.Unusable, 400, "INVALID_ARGUMENT", 0, "API_KEY_INVALID"},
		{"400 FAILED_PRECONDITION", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 400, Code: "FAILED_PRECONDITION", Message: "User location is not supported for the API use."}, false, portico.Unusable, 400, "FAILED_PRECONDITION", 0, ""},
		{"401 UNAUTHENTICATED", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 401}, false, portico.Unusable, 401, "UNAUTHENTICATED", 0, ""},
		{"403 PERMISSION_DENIED", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 403, Type: "SERVICE_DISABLED"}, true, portico.Unusable, 403, "PERMISSION_DENIED", 0, "SERVICE_DISABLED"},
		{"404 NOT_FOUND", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 404}, false, portico.Unusable, 404, "NOT_FOUND", 0, ""},
		{"422 other 4xx", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 422}, false, portico.Incompatible, 422, "INVALID_ARGUMENT", 0, ""},
		{"stream error event UNAVAILABLE", fakegemini.Fault{Kind: fakegemini.FaultStreamError, AfterChunks: 2}, true, portico.Transient, 200, "UNAVAILABLE", 0, ""},
		{"stream error event RESOURCE_EXHAUSTED", fakegemini.Fault{Kind: fakegemini.FaultStreamError, Code: "RESOURCE_EXHAUSTED", RetryAfter: 3 * time.Second}, true, portico.RateLimited, 200, "RESOURCE_EXHAUSTED", 3 * time.Second, ""},
		{"stream error event, whole request", fakegemini.Fault{Kind: fakegemini.FaultStreamError}, false, portico.Transient, 503, "UNAVAILABLE", 0, ""},
		{"stream error event without status", fakegemini.Fault{Kind: fakegemini.FaultStreamError, AfterChunks: 1, Body: `{"error":{"message":"boom"}}`}, true, portico.Transient, 200, "", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, m := start(t, faulty(tc.fault), gemini.Config{})
			req := userReq("m", "hello")
			chunks := 0
			if tc.stream {
				req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
			}
			resp, err := m.Generate(context.Background(), req)
			if resp != nil || err == nil {
				t.Fatalf("Generate = %v, %v; want nil and an error", resp, err)
			}
			pe := asError(t, err)
			if pe.Class != tc.class || pe.Status != tc.status || pe.Code != tc.code || pe.Model != "m" {
				t.Errorf("Generate error = class %v status %d code %q model %q, want %v %d %q m (%v)", pe.Class, pe.Status, pe.Code, pe.Model, tc.class, tc.status, tc.code, err)
			}
			if pe.RetryAfter != tc.after || portico.RetryAfterOf(err) != tc.after {
				t.Errorf("RetryAfter = %v, want %v", pe.RetryAfter, tc.after)
			}
			var prov *gemini.ProviderError
			if !errors.As(err, &prov) || prov.RPCStatus != tc.code || prov.Reason != tc.reason || prov.InStream != (tc.status == 200) || prov.RetryDelay != tc.after {
				t.Errorf("ProviderError = %+v, want status %q reason %q in stream %v", prov, tc.code, tc.reason, tc.status == 200)
			}
			var api genai.APIError
			if !errors.As(err, &api) || api.Status != tc.code {
				t.Errorf("errors.As(genai.APIError) = %+v, want status %q", api, tc.code)
			}
			if tc.status == 200 && chunks != tc.fault.AfterChunks {
				t.Errorf("chunks before the error event = %d, want %d", chunks, tc.fault.AfterChunks)
			}
			if n := s.Count("m"); n != 1 {
				t.Errorf("server saw %d requests, want 1 (SDK retries must be off)", n)
			}
		})
	}
}

func TestContextWindowExceeded(t *testing.T) {
	_, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", ContextWindow: 5}}}, gemini.Config{})
	_, err := m.Generate(context.Background(), userReq("m", "one two three four five six"))
	if pe := asError(t, err); pe.Class != portico.Incompatible || pe.Reason != "context window" || pe.Code != "INVALID_ARGUMENT" {
		t.Errorf("Generate error = %v %q %q, want incompatible, reason context window", pe.Class, pe.Reason, pe.Code)
	}
	if !errors.Is(err, portico.ErrIncompatible) {
		t.Errorf("errors.Is(err, ErrIncompatible) = false, want true")
	}
}

// An unknown model and a wrong API key are faults of the route.
func TestUnusableRoute(t *testing.T) {
	s, m := start(t, fakegemini.Config{APIKey: "right-key"}, gemini.Config{})
	_, err := m.Generate(context.Background(), userReq(fakegemini.DefaultModel, "hi"))
	var prov *gemini.ProviderError
	if pe := asError(t, err); pe.Class != portico.Unusable || pe.Status != 400 || !errors.As(err, &prov) || prov.Reason != "API_KEY_INVALID" {
		t.Errorf("Generate with a wrong key = %v, want unusable 400 reason API_KEY_INVALID", err)
	}
	cc := clientConfig(s)
	cc.APIKey = "right-key"
	m = newModel(t, gemini.Config{}, cc)
	_, err = m.Generate(context.Background(), userReq("nope", "hi"))
	if pe := asError(t, err); pe.Class != portico.Unusable || pe.Status != 404 || pe.Code != "NOT_FOUND" || !portico.Unusable.RouteFault() {
		t.Errorf("Generate(unknown model) = %v, want unusable 404 NOT_FOUND", err)
	}
	if _, err := m.Generate(context.Background(), userReq(fakegemini.DefaultModel, "hi")); err != nil {
		t.Errorf("Generate with the right key = %v, want an answer", err)
	}
}

func TestMalformed(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, m := start(t, faulty(fakegemini.Fault{Kind: fakegemini.FaultMalformed, AfterChunks: 1}), gemini.Config{})
		req := userReq("m", "hello")
		if stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		_, err := m.Generate(context.Background(), req)
		if pe := asError(t, err); pe.Class != portico.InvalidResponse || pe.Status != 200 || !errors.Is(err, gemini.ErrMalformed) || !errors.Is(err, portico.ErrMalformed) {
			t.Errorf("stream %v: Generate error = %v status %d (%v), want invalid_response 200 wrapping ErrMalformed", stream, pe.Class, pe.Status, err)
		}
	}
}

func TestConnectionRefusedTransient(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	m := newModel(t, gemini.Config{}, genai.ClientConfig{APIKey: "k", HTTPOptions: genai.HTTPOptions{BaseURL: "http://" + addr}})
	_, err = m.Generate(context.Background(), userReq("m", "hello"))
	if pe := asError(t, err); pe.Class != portico.Transient || pe.Status != 0 || !pe.NotSent {
		t.Errorf("Generate error = %v status %d NotSent %v, want transient 0 NotSent (%v)", pe.Class, pe.Status, pe.NotSent, err)
	}
	var ne *net.OpError
	if !errors.As(err, &ne) {
		t.Errorf("errors.As(*net.OpError) = false, want the dial error reachable")
	}
}

// Timeouts and resets after the request was written are Ambiguous: the
// server may have run it.
func TestAfterWrittenAmbiguous(t *testing.T) {
	cases := []struct {
		name   string
		fault  fakegemini.Fault
		stream bool
		status int
	}{
		{"stall before headers", fakegemini.Fault{Kind: fakegemini.FaultStallBeforeHeaders}, false, 0},
		{"stall before headers streaming", fakegemini.Fault{Kind: fakegemini.FaultStallBeforeHeaders}, true, 0},
		{"stall mid body", fakegemini.Fault{Kind: fakegemini.FaultStallMidStream}, false, 200},
		{"stall mid stream", fakegemini.Fault{Kind: fakegemini.FaultStallMidStream, AfterChunks: 2}, true, 200},
		{"disconnect before headers", fakegemini.Fault{Kind: fakegemini.FaultDisconnect}, false, 0},
		{"disconnect mid stream", fakegemini.Fault{Kind: fakegemini.FaultDisconnect, AfterChunks: 2}, true, 200},
	}
	for _, tc := range cases {
		// Virtual time over in-memory HTTP: the 50 ms SDK timeout strikes
		// exactly when the server has done all it will do.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := fakegemini.StartPipe(faulty(tc.fault))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				cc := clientConfig(s)
				timeout := 50 * time.Millisecond
				cc.HTTPOptions.Timeout = &timeout
				cc.HTTPOptions.RetryOptions = &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](4)}
				m := newModel(t, gemini.Config{}, cc)
				req := userReq("m", "hello")
				chunks := 0
				if tc.stream {
					req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
				}
				start := time.Now()
				_, err = m.Generate(t.Context(), req)
				pe := asError(t, err)
				if pe.Class != portico.Ambiguous || pe.Status != tc.status {
					t.Errorf("Generate error = %v status %d (%v), want ambiguous %d", pe.Class, pe.Status, err, tc.status)
				}
				if d, want := time.Since(start), timeout; !strings.HasPrefix(tc.name, "disconnect") && d != want {
					t.Errorf("Generate returned after %v, want the %v timeout", d, want)
				}
				if tc.stream && tc.status == 200 && chunks != 2 {
					t.Errorf("chunks delivered = %d, want 2", chunks)
				}
				// Two chunks in, the running usage was billed: 4 prompt
				// tokens ("hello" and 3 per content), 2 output.
				if u := portico.UsageOf(err); tc.stream && tc.status == 200 && (u == nil || u.InputTokens != 4 || u.OutputTokens != 2) {
					t.Errorf("UsageOf(err) = %+v, want 4 in, 2 out", u)
				}
				if n := s.Count("m"); n != 1 {
					t.Errorf("server saw %d requests, want 1 (the SDK retries timeouts when asked to)", n)
				}
			})
		})
	}
}

var errUserLeft = errors.New("user left")

func TestContextErrors(t *testing.T) {
	stall := faulty(fakegemini.Fault{Kind: fakegemini.FaultStallBeforeHeaders})
	errAttempt := fmt.Errorf("attempt timeout: %w", portico.ErrLayerTimeout)
	cases := []struct {
		name  string
		ctx   func() (context.Context, context.CancelFunc)
		class portico.Class
		is    error
	}{
		{"caller cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(30*time.Millisecond, cancel)
			return ctx, cancel
		}, portico.Canceled, context.Canceled},
		{"caller deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Millisecond)
		}, portico.Deadline, context.DeadlineExceeded},
		{"attempt deadline with cause", func() (context.Context, context.CancelFunc) {
			return context.WithTimeoutCause(context.Background(), 30*time.Millisecond, errAttempt)
		}, portico.Ambiguous, errAttempt},
		{"caller cancel with its own cause", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(30*time.Millisecond, func() { cancel(errUserLeft) })
			return ctx, func() { cancel(nil) }
		}, portico.Canceled, errUserLeft},
		{"layer timeout by cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(30*time.Millisecond, func() { cancel(errAttempt) })
			return ctx, func() { cancel(nil) }
		}, portico.Ambiguous, errAttempt},
		{"already canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, portico.Canceled, context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, m := startPipe(t, stall)
				ctx, cancel := tc.ctx()
				defer cancel()
				start := time.Now()
				_, err := m.Generate(ctx, userReq("m", "hello"))
				if pe := asError(t, err); pe.Class != tc.class {
					t.Errorf("Generate error class = %v (%v), want %v", pe.Class, err, tc.class)
				} else if want := tc.name == "already canceled"; pe.NotSent != want {
					// Only the context done before the request was written
					// says nothing was sent: the others stall after it.
					t.Errorf("Generate error NotSent = %v, want %v", pe.NotSent, want)
				}
				if !errors.Is(err, tc.is) {
					t.Errorf("errors.Is(%v, %v) = false, want true", err, tc.is)
				}
				want, n := 30*time.Millisecond, 1
				if tc.name == "already canceled" {
					want, n = 0, 0
				}
				if d := time.Since(start); d != want || s.Count("m") != n {
					t.Errorf("Generate returned after %v with %d requests, want %v and %d", d, s.Count("m"), want, n)
				}
			})
		})
	}
}

func TestChunkCallbackError(t *testing.T) {
	_, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", OutputTokens: 10}}}, gemini.Config{})
	errStop := errors.New("stop")
	req := userReq("m", "hello")
	calls := 0
	req.OnChunk = func(portico.Chunk) error { calls++; return errStop }
	_, err := m.Generate(context.Background(), req)
	if pe := asError(t, err); pe.Class != portico.Canceled || !errors.Is(err, errStop) || calls != 1 {
		t.Errorf("Generate error = %v after %d calls, want canceled wrapping the callback's error after 1", err, calls)
	}
	own := &portico.Error{Class: portico.Transient, Reason: "inter-token timeout"}
	req.OnChunk = func(portico.Chunk) error { return own }
	if _, err := m.Generate(context.Background(), req); err != own {
		t.Errorf("Generate error = %v, want the callback's *portico.Error unchanged", err)
	}
}

// A panic in OnChunk is the caller's: it passes through unchanged.
func TestChunkCallbackPanicPassesThrough(t *testing.T) {
	_, m := start(t, fakegemini.Config{}, gemini.Config{Model: fakegemini.DefaultModel})
	req := userReq("", "hello")
	req.OnChunk = func(portico.Chunk) error { panic("caller's bug") }
	defer func() {
		if r := recover(); r != "caller's bug" {
			t.Errorf("recover() = %v, want the callback's panic value", r)
		}
	}()
	_, _ = m.Generate(context.Background(), req)
	t.Error("Generate returned, want the callback's panic")
}

// Google's message, which may quote the prompt, stays out of error strings
// unless the user opts in; so does everything the SDK's own errors print.
func TestProviderMessageRedacted(t *testing.T) {
	const secret = "SECRET PROMPT TEXT"
	f := fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 400, Message: "bad request: " + secret}
	for _, include := range []bool{false, true} {
		_, m := start(t, faulty(f), gemini.Config{IncludeProviderMessage: include})
		_, err := m.Generate(context.Background(), userReq("m", "hello"))
		var prov *gemini.ProviderError
		if !errors.As(err, &prov) {
			t.Fatalf("errors.As(*ProviderError) = false for %v", err)
		}
		if got := strings.Contains(err.Error(), secret); got != include {
			t.Errorf("IncludeProviderMessage %v: message in error string = %v, want %v (%v)", include, got, include, err)
		}
		if got := prov.Message == f.Message; got != include {
			t.Errorf("IncludeProviderMessage %v: ProviderError.Message = %q", include, prov.Message)
		}
	}
	// An error event inside a stream, and a 200 whose body is not JSON (the
	// SDK's decoding error prints the whole body).
	for _, f := range []fakegemini.Fault{
		{Kind: fakegemini.FaultStreamError, Message: secret},
		{Kind: fakegemini.FaultStatus, Status: 200, Body: `{"candidates": [` + secret},
	} {
		_, m := start(t, faulty(f), gemini.Config{})
		req := userReq("m", "hello")
		req.OnChunk = func(portico.Chunk) error { return nil }
		for _, r := range []*portico.Request{req, userReq("m", "hello")} {
			_, err := m.Generate(context.Background(), r)
			if err == nil || strings.Contains(err.Error(), secret) {
				t.Errorf("fault %v stream %v: error string = %v, want an error without the body's text", f.Kind, r.Streaming(), err)
			}
		}
	}
}

func TestNoModelPermanent(t *testing.T) {
	m := newModel(t, gemini.Config{}, genai.ClientConfig{APIKey: "k", HTTPOptions: genai.HTTPOptions{BaseURL: "http://127.0.0.1:1"}})
	_, err := m.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "x")}})
	if portico.ClassOf(err) != portico.Permanent {
		t.Errorf("ClassOf(Generate without model) = %v, want permanent", portico.ClassOf(err))
	}
}

// The SDK never retries, even when the caller's options ask it to, and it
// never continues an answer on its own: one layer owns retries (seed 003).
func TestSDKRetriesOff(t *testing.T) {
	for _, f := range []fakegemini.Fault{
		{Kind: fakegemini.FaultStatus, Status: 503},
		{Kind: fakegemini.FaultStatus, Status: 429, RetryAfter: time.Millisecond},
		{Kind: fakegemini.FaultStatus, Status: 500},
		{Kind: fakegemini.FaultDisconnect},
	} {
		cfg := faulty(f)
		cfg.Models = append(cfg.Models, fakegemini.ModelConfig{Name: "ok"})
		s, err := fakegemini.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cc := clientConfig(s)
		cc.HTTPOptions.RetryOptions = &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](5), InitialDelay: genai.Ptr(0.0), Jitter: genai.Ptr(0.0)}
		m := newModel(t, gemini.Config{}, cc)
		// A first call leaves an idle connection, which net/http would retry on
		// if it judged the request safe to replay.
		if _, err := m.Generate(context.Background(), userReq("ok", "hello")); err != nil {
			t.Fatal(err)
		}
		for _, stream := range []bool{false, true} {
			req := userReq("m", "hello")
			if stream {
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			_, err = m.Generate(context.Background(), req)
			if want := 1 + btoi(stream); err == nil || s.Count("m") != want {
				t.Errorf("fault %v status %d stream %v: %d requests reached the server (err %v), want %d", f.Kind, f.Status, stream, s.Count("m"), err, want)
			}
		}
		s.Close()
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The caller's http.Client is copied, not changed.
func TestCallersClientUnchanged(t *testing.T) {
	s, err := fakegemini.Start(fakegemini.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hc := s.Client()
	before := hc.Transport
	m := newModel(t, gemini.Config{}, genai.ClientConfig{APIKey: "k", HTTPClient: hc, HTTPOptions: genai.HTTPOptions{BaseURL: s.URL()}})
	if _, err := m.Generate(context.Background(), userReq(fakegemini.DefaultModel, "hi")); err != nil {
		t.Fatal(err)
	}
	if hc.Transport != before {
		t.Errorf("caller's http.Client.Transport = %T, want it unchanged (%T)", hc.Transport, before)
	}
	_ = http.DefaultTransport
}

// New's errors never print the API key, which genai's print with the
// whole ClientConfig.
func TestNewErrorWithoutKey(t *testing.T) {
	const key = "AIzaSECRETKEY"
	_, err := gemini.New(context.Background(), gemini.Config{}, genai.ClientConfig{APIKey: key, Project: "p", Location: "l"})
	if err == nil || strings.Contains(err.Error(), key) || !strings.HasPrefix(err.Error(), "gemini: ") {
		t.Errorf("New(Gemini API with a project) = %v, want an error starting gemini: without the key", err)
	}
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	if _, err := gemini.New(context.Background(), gemini.Config{}, genai.ClientConfig{}); err == nil {
		t.Error("New without an API key = nil error, want one")
	}
}

// A base URL that does not parse is the route's configuration: every request
// fails before the transport, on this route only, so the error is Unusable
// and NotSent: a fallback group moves on, the route's breaker opens, and a
// limiter refunds the whole reservation. The body was checked before.
func TestUnbuildableClientUnusable(t *testing.T) {
	m := newModel(t, gemini.Config{}, genai.ClientConfig{APIKey: "k", HTTPOptions: genai.HTTPOptions{BaseURL: "http://[::1/"}})
	_, err := m.Generate(context.Background(), userReq("m", "hello"))
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class != portico.Unusable || pe.Status != 0 || !pe.NotSent {
		t.Errorf("Generate with an unparseable base URL = %v, want unusable, status 0, NotSent", err)
	}
}

// What the SDK would refuse to build because of the request (a model name
// genai's tModel rejects, an Extra value JSON cannot encode) is Permanent and
// sends nothing, told before the SDK: only the client's own configuration is
// left for the Unusable of a request the SDK does not build.
func TestRequestNotEncodablePermanent(t *testing.T) {
	m := newModel(t, gemini.Config{}, genai.ClientConfig{APIKey: "k", HTTPOptions: genai.HTTPOptions{BaseURL: "http://127.0.0.1:1"}})
	for name, r := range map[string]*portico.Request{
		"model with ..": userReq("models/../../x", "hello"),
		"model with ?":  userReq("m?alt=x", "hello"),
		"chan in Extra": func() *portico.Request {
			r := userReq("m", "hello")
			r.Extra = map[string]any{"foo": make(chan int)}
			return r
		}(),
		"chan nested": func() *portico.Request {
			r := userReq("m", "hello")
			r.Extra = map[string]any{"thinkingConfig": map[string]any{"x": make(chan int)}}
			return r
		}(),
	} {
		_, err := m.Generate(context.Background(), r)
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Permanent || pe.Reason != "request not encodable" {
			t.Errorf("%s: Generate = %v, want Permanent, request not encodable", name, err)
		}
	}
}

// A model name genai refuses in the route's own Config.Model is the route's
// configuration: Unusable, NotSent, so a group moves on (the same name in a
// request is Permanent, TestRequestNotEncodablePermanent).
func TestConfigModelNotValidUnusable(t *testing.T) {
	m := newModel(t, gemini.Config{Model: "models/../x"}, genai.ClientConfig{APIKey: "k", HTTPOptions: genai.HTTPOptions{BaseURL: "http://127.0.0.1:1"}})
	_, err := m.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "x")}})
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class != portico.Unusable || !pe.NotSent {
		t.Errorf("Generate with Config.Model %q = %v, want Unusable, NotSent", "models/../x", err)
	}
}
