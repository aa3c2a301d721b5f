package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

// faulty returns a one-model config whose every request gets f.
func faulty(f fakeopenai.Fault) fakeopenai.Config {
	f.Fraction = 1
	return fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ContextWindow: 1000, Faults: []fakeopenai.Fault{f}}}}
}

// asError returns err's *portico.Error or fails the test.
func asError(t *testing.T, err error) *portico.Error {
	t.Helper()
	var pe *portico.Error
	if !errors.As(err, &pe) {
		t.Fatalf("Generate error = %v (%T), want a *portico.Error", err, err)
	}
	return pe
}

func TestErrorClassesFromStatus(t *testing.T) {
	cases := []struct {
		name   string
		fault  fakeopenai.Fault
		stream bool
		class  portico.Class
		status int
		code   string
		after  time.Duration // exact RetryAfter
	}{
		{"429 retry-after-ms", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfterMsHeader: 1500 * time.Millisecond, RetryAfter: 9 * time.Second}, false, portico.RateLimited, 429, "rate_limit_exceeded", 1500 * time.Millisecond},
		{"429 retry-after seconds", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfter: 3 * time.Second}, false, portico.RateLimited, 429, "rate_limit_exceeded", 3 * time.Second},
		{"429 streaming", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfterMsHeader: 20 * time.Millisecond}, true, portico.RateLimited, 429, "rate_limit_exceeded", 20 * time.Millisecond},
		{"500", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 500}, false, portico.Transient, 500, "", 0},
		{"502", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 502}, false, portico.Transient, 502, "", 0},
		{"503", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, RetryAfter: 2 * time.Second}, true, portico.Transient, 503, "", 2 * time.Second},
		{"504", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 504}, false, portico.Transient, 504, "", 0},
		{"400 context_length_exceeded", fakeopenai.Fault{Kind: fakeopenai.FaultContextLength}, false, portico.Incompatible, 400, "context_length_exceeded", 0},
		{"400 context_length_exceeded streaming", fakeopenai.Fault{Kind: fakeopenai.FaultContextLength}, true, portico.Incompatible, 400, "context_length_exceeded", 0},
		{"400", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 400}, false, portico.Incompatible, 400, "", 0},
		{"401", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 401}, false, portico.Unusable, 401, "invalid_api_key", 0},
		{"403", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 403}, false, portico.Unusable, 403, "unsupported_country_region_territory", 0},
		{"404", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 404}, false, portico.Unusable, 404, "model_not_found", 0},
		{"400 x-should-retry true", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 400, ShouldRetry: "true"}, false, portico.Transient, 400, "", 0},
		{"503 x-should-retry false", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, ShouldRetry: "false"}, false, portico.Incompatible, 503, "", 0},
		{"429 x-should-retry false", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, ShouldRetry: "false", RetryAfter: time.Second}, false, portico.Incompatible, 429, "rate_limit_exceeded", time.Second},
		{"stream error event overloaded", fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, AfterChunks: 2}, true, portico.Transient, 200, "overloaded", 0},
		{"stream error event prompt too long", fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, Code: "context_length_exceeded"}, true, portico.Incompatible, 200, "context_length_exceeded", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, m := start(t, faulty(tc.fault), openai.Config{})
			req := userReq("m", "hello")
			if tc.stream {
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			resp, err := m.Generate(context.Background(), req)
			if resp != nil || err == nil {
				t.Fatalf("Generate = %v, %v; want nil and an error", resp, err)
			}
			pe := asError(t, err)
			if pe.Class != tc.class || pe.Status != tc.status || pe.Code != tc.code || pe.Model != "m" {
				t.Errorf("Generate error = class %v status %d code %q model %q, want %v %d %q m", pe.Class, pe.Status, pe.Code, pe.Model, tc.class, tc.status, tc.code)
			}
			if pe.RetryAfter != tc.after {
				t.Errorf("RetryAfter = %v, want %v", pe.RetryAfter, tc.after)
			}
			if portico.ClassOf(err) != tc.class {
				t.Errorf("ClassOf = %v, want %v", portico.ClassOf(err), tc.class)
			}
			var prov *openai.ProviderError
			if !errors.As(err, &prov) || prov.Code != tc.code || prov.InStream != (tc.status == 200) {
				t.Errorf("ProviderError = %+v, want code %q in stream %v", prov, tc.code, tc.status == 200)
			}
			if tc.status != 200 {
				var sdk *oai.Error
				if !errors.As(err, &sdk) || sdk.StatusCode != tc.status {
					t.Errorf("errors.As(*openai.Error) = %v, want status %d", sdk, tc.status)
				}
			}
			if n := s.Count("m"); n != 1 {
				t.Errorf("server saw %d requests, want 1 (SDK retries must be off)", n)
			}
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	// In a synctest bubble the clock starts on a whole second and does not
	// move while the request is in flight, so the date, which has a
	// resolution of one second, gives the hint exactly.
	synctest.Test(t, func(t *testing.T) {
		s, m := startPipe(t, faulty(fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfter: 10 * time.Second, RetryAfterDate: true}))
		_, err := m.Generate(t.Context(), userReq("m", "hello"))
		pe := asError(t, err)
		if pe.Class != portico.RateLimited || pe.RetryAfter != 10*time.Second || s.Count("m") != 1 {
			t.Errorf("Generate error = class %v RetryAfter %v after %d requests, want rate_limited 10s after 1", pe.Class, pe.RetryAfter, s.Count("m"))
		}
	})
}

func TestContextWindowExceeded(t *testing.T) {
	_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ContextWindow: 5}}}, openai.Config{})
	_, err := m.Generate(context.Background(), userReq("m", "one two three four five six"))
	if pe := asError(t, err); pe.Class != portico.Incompatible || pe.Code != "context_length_exceeded" {
		t.Errorf("Generate error = %v %q, want incompatible context_length_exceeded", pe.Class, pe.Code)
	}
	if !errors.Is(err, portico.ErrIncompatible) {
		t.Errorf("errors.Is(err, ErrIncompatible) = false, want true")
	}
}

// A model this route does not serve makes the route unusable for it, not
// the request wrong: another route may serve it.
func TestUnknownModelUnusable(t *testing.T) {
	_, m := start(t, fakeopenai.Config{}, openai.Config{})
	_, err := m.Generate(context.Background(), userReq("nope", "hi"))
	if pe := asError(t, err); pe.Class != portico.Unusable || pe.Status != 404 || pe.Code != "model_not_found" || !errors.Is(err, portico.ErrUnusable) {
		t.Errorf("Generate error = %v %d %q, want unusable 404 model_not_found", pe.Class, pe.Status, pe.Code)
	}
}

func TestMalformed(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, m := start(t, faulty(fakeopenai.Fault{Kind: fakeopenai.FaultMalformed, AfterChunks: 1}), openai.Config{})
		req := userReq("m", "hello")
		if stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		_, err := m.Generate(context.Background(), req)
		if pe := asError(t, err); pe.Class != portico.InvalidResponse || pe.Status != 200 || !errors.Is(err, openai.ErrMalformed) {
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
	m := openai.New(openai.Config{}, option.WithBaseURL("http://"+addr+"/v1/"), option.WithAPIKey("k"))
	_, err = m.Generate(context.Background(), userReq("m", "hello"))
	if pe := asError(t, err); pe.Class != portico.Transient || pe.Status != 0 || !pe.NotSent {
		t.Errorf("Generate error = %v status %d NotSent %v, want transient 0 NotSent (%v)", pe.Class, pe.Status, pe.NotSent, err)
	}
	var ne *net.OpError
	if !errors.As(err, &ne) {
		t.Errorf("errors.As(*net.OpError) = false, want the dial error reachable")
	}
}

// A base URL that does not parse is the route's configuration: every
// request fails before the transport, on this route only. The adapter
// checks the body itself (Extra included, "request not encodable"), so what
// the SDK refuses to build is the client, as provider/anthropic says with
// Unusable: a fallback group moves on and the route's breaker opens (a
// Permanent error would stop the group at this route for every request).
func TestUnbuildableClientUnusable(t *testing.T) {
	m := openai.New(openai.Config{}, option.WithBaseURL("http://[::1/v1/"), option.WithAPIKey("k"))
	_, err := m.Generate(context.Background(), userReq("m", "hello"))
	if pe := asError(t, err); pe.Class != portico.Unusable || pe.Status != 0 || !pe.NotSent {
		t.Errorf("Generate error = %v status %d NotSent %v, want unusable 0 NotSent (%v)", pe.Class, pe.Status, pe.NotSent, err)
	}
}

// Timeouts and resets after the request was written are Ambiguous: the
// server may have run it.
func TestAfterWrittenAmbiguous(t *testing.T) {
	cases := []struct {
		name   string
		fault  fakeopenai.Fault
		stream bool
		status int
	}{
		{"stall before headers", fakeopenai.Fault{Kind: fakeopenai.FaultStallBeforeHeaders}, false, 0},
		{"stall before headers streaming", fakeopenai.Fault{Kind: fakeopenai.FaultStallBeforeHeaders}, true, 0},
		{"stall mid body", fakeopenai.Fault{Kind: fakeopenai.FaultStallMidStream}, false, 200},
		{"stall mid stream", fakeopenai.Fault{Kind: fakeopenai.FaultStallMidStream, AfterChunks: 2}, true, 200},
		{"disconnect before headers", fakeopenai.Fault{Kind: fakeopenai.FaultDisconnect}, false, 0},
		{"disconnect mid stream", fakeopenai.Fault{Kind: fakeopenai.FaultDisconnect, AfterChunks: 2}, true, 200},
	}
	for _, tc := range cases {
		// Virtual time over in-memory HTTP: the 50 ms timeout strikes exactly
		// when the server has done all it will do, however loaded the machine.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, m := startPipe(t, faulty(tc.fault), option.WithRequestTimeout(50*time.Millisecond), option.WithMaxRetries(3))
				req := userReq("m", "hello")
				chunks := 0
				if tc.stream {
					req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
				}
				start := time.Now()
				_, err := m.Generate(t.Context(), req)
				pe := asError(t, err)
				if pe.Class != portico.Ambiguous || pe.Status != tc.status {
					t.Errorf("Generate error = %v status %d (%v), want ambiguous %d", pe.Class, pe.Status, err, tc.status)
				}
				if d, want := time.Since(start), 50*time.Millisecond; !strings.HasPrefix(tc.name, "disconnect") && d != want {
					t.Errorf("Generate returned after %v, want the %v timeout", d, want)
				}
				if tc.stream && tc.status == 200 && chunks != 2 {
					t.Errorf("chunks delivered = %d, want 2", chunks)
				}
				if n := s.Count("m"); n != 1 {
					t.Errorf("server saw %d requests, want 1 (the SDK retries timeouts unless turned off)", n)
				}
			})
		})
	}
}

var errUserLeft = errors.New("user left")

func TestContextErrors(t *testing.T) {
	stall := faulty(fakeopenai.Fault{Kind: fakeopenai.FaultStallBeforeHeaders})
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
		{"caller deadline with its own cause", func() (context.Context, context.CancelFunc) {
			return context.WithTimeoutCause(context.Background(), 30*time.Millisecond, errUserLeft)
		}, portico.Deadline, errUserLeft},
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
		// In virtual time the 30 ms strike once the request was written and
		// the server stalls, so the after-write classes are exact.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, m := startPipe(t, stall)
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
				if d := time.Since(start); d != 30*time.Millisecond && tc.name != "already canceled" {
					t.Errorf("Generate returned after %v, want 30ms", d)
				}
			})
		})
	}
}

func TestStreamCancelMidStream(t *testing.T) {
	s, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 1000, TokensPerSecond: 1000}}}, openai.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := userReq("m", "hello")
	n := 0
	req.OnChunk = func(portico.Chunk) error {
		n++
		if n == 3 {
			cancel()
		}
		return nil
	}
	_, err := m.Generate(ctx, req)
	if pe := asError(t, err); pe.Class != portico.Canceled || !errors.Is(err, context.Canceled) {
		t.Errorf("Generate error = %v, want canceled wrapping context.Canceled", err)
	}
	if n != 3 {
		t.Errorf("chunks delivered = %d, want 3 (none after the cancel, even if buffered)", n)
	}
	s.Close() // goleak in TestMain checks that nothing is left running
}

func TestChunkCallbackError(t *testing.T) {
	_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 10}}}, openai.Config{})
	errStop := errors.New("stop")
	req := userReq("m", "hello")
	req.OnChunk = func(portico.Chunk) error { return errStop }
	_, err := m.Generate(context.Background(), req)
	if pe := asError(t, err); pe.Class != portico.Canceled || !errors.Is(err, errStop) {
		t.Errorf("Generate error = %v, want canceled wrapping the callback's error", err)
	}
	own := &portico.Error{Class: portico.Transient, Reason: "inter-token timeout"}
	req.OnChunk = func(portico.Chunk) error { return own }
	if _, err := m.Generate(context.Background(), req); err != own {
		t.Errorf("Generate error = %v, want the callback's *portico.Error unchanged", err)
	}
}

func TestProviderMessageRedacted(t *testing.T) {
	const secret = "SECRET PROMPT TEXT"
	f := fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 400, Message: "bad request: " + secret}
	for _, include := range []bool{false, true} {
		_, m := start(t, faulty(f), openai.Config{IncludeProviderMessage: include})
		_, err := m.Generate(context.Background(), userReq("m", "hello"))
		var prov *openai.ProviderError
		if !errors.As(err, &prov) {
			t.Fatalf("errors.As(*ProviderError) = false for %v", err)
		}
		if got := strings.Contains(err.Error(), secret); got != include {
			t.Errorf("IncludeProviderMessage %v: message in error string = %v, want %v", include, got, include)
		}
		if got := prov.Message == f.Message; got != include {
			t.Errorf("IncludeProviderMessage %v: ProviderError.Message = %q", include, prov.Message)
		}
	}
	// Same for an error event inside a stream.
	_, m := start(t, faulty(fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, Message: secret}), openai.Config{})
	req := userReq("m", "hello")
	req.OnChunk = func(portico.Chunk) error { return nil }
	_, err := m.Generate(context.Background(), req)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("stream error string = %v, want an error without the provider message", err)
	}
}

func TestNoModelPermanent(t *testing.T) {
	m := openai.New(openai.Config{}, option.WithBaseURL("http://127.0.0.1:1/v1/"), option.WithAPIKey("k"))
	_, err := m.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "x")}})
	if portico.ClassOf(err) != portico.Permanent {
		t.Errorf("ClassOf(Generate without model) = %v, want permanent", portico.ClassOf(err))
	}
}

// The SDK never retries, even when the caller's options ask it to: one layer
// owns retries (seed 003).
func TestSDKRetriesOff(t *testing.T) {
	for _, f := range []fakeopenai.Fault{
		{Kind: fakeopenai.FaultStatus, Status: 503},
		{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfterMsHeader: time.Millisecond},
		{Kind: fakeopenai.FaultStatus, Status: 400, ShouldRetry: "true"},
		{Kind: fakeopenai.FaultDisconnect},
	} {
		cfg := faulty(f)
		cfg.Models = append(cfg.Models, fakeopenai.ModelConfig{Name: "ok"})
		s, m := start(t, cfg, openai.Config{}, option.WithMaxRetries(5))
		// A first call leaves an idle connection, which net/http would retry on
		// if it judged the request safe to replay.
		if _, err := m.Generate(context.Background(), userReq("ok", "hello")); err != nil {
			t.Fatal(err)
		}
		_, err := m.Generate(context.Background(), userReq("m", "hello"))
		if err == nil || s.Count("m") != 1 {
			t.Errorf("fault %v status %d: %d requests reached the server (err %v), want 1", f.Kind, f.Status, s.Count("m"), err)
		}
	}
}
