package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/retry"
)

// faulty returns a one-model config whose every request gets f.
func faulty(f fakeanthropic.Fault) fakeanthropic.Config {
	f.Fraction = 1
	return fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Faults: []fakeanthropic.Fault{f}}}}
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

// The errors users meet, each over HTTP from the fake through the real SDK:
// class, status, code, reason, Retry-After, and one request on the wire.
func TestErrorClasses(t *testing.T) {
	cases := []struct {
		name   string
		fault  fakeanthropic.Fault
		stream bool
		class  portico.Class
		status int
		code   string
		reason string
		after  time.Duration // exact RetryAfter
	}{
		{"529 overloaded", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 529}, false, portico.Transient, 529, "overloaded_error", "overloaded", 0},
		{"529 overloaded streaming", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 529, RetryAfter: 2 * time.Second}, true, portico.Transient, 529, "overloaded_error", "overloaded", 2 * time.Second},
		{"429 retry-after", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 429, RetryAfter: 3 * time.Second}, false, portico.RateLimited, 429, "rate_limit_error", "rate limited", 3 * time.Second},
		{"429 streaming", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 429, RetryAfter: time.Second}, true, portico.RateLimited, 429, "rate_limit_error", "rate limited", time.Second},
		{"429 monthly spend limit", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 429, Code: "enforced_spend_limit_reached"}, false, portico.Unusable, 429, "enforced_spend_limit_reached", "spend limit reached", 0},
		{"400 credit balance", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 400, Message: "Your credit balance is too low to access the Anthropic API."}, false, portico.Unusable, 400, "invalid_request_error", "spend limit reached", 0},
		{"500 api_error", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 500}, false, portico.Transient, 500, "api_error", "server error", 0},
		{"502", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 502}, false, portico.Transient, 502, "api_error", "server error", 0},
		{"504 timeout_error", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 504}, true, portico.Transient, 504, "timeout_error", "server error", 0},
		{"400 invalid_request_error", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 400}, false, portico.Incompatible, 400, "invalid_request_error", "request refused", 0},
		{"401 authentication_error", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 401}, false, portico.Unusable, 401, "authentication_error", "credentials refused", 0},
		{"402 billing_error", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 402}, false, portico.Unusable, 402, "billing_error", "spend limit reached", 0},
		{"403 permission_error", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 403}, false, portico.Unusable, 403, "permission_error", "permission refused", 0},
		{"404 not_found_error", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 404}, true, portico.Unusable, 404, "not_found_error", "model not found", 0},
		{"413 request_too_large", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 413}, false, portico.Incompatible, 413, "request_too_large", "request too large", 0},
		{"prompt too long", fakeanthropic.Fault{Kind: fakeanthropic.FaultContextLength}, false, portico.Incompatible, 400, "invalid_request_error", "context window", 0},
		{"prompt too long streaming", fakeanthropic.Fault{Kind: fakeanthropic.FaultContextLength}, true, portico.Incompatible, 400, "invalid_request_error", "context window", 0},
		{"400 x-should-retry true", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 400, ShouldRetry: "true"}, false, portico.Transient, 400, "invalid_request_error", "request refused (x-should-retry: true)", 0},
		{"529 x-should-retry false", fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 529, ShouldRetry: "false"}, false, portico.Incompatible, 529, "overloaded_error", "overloaded (x-should-retry: false)", 0},
		{"stream error event before content", fakeanthropic.Fault{Kind: fakeanthropic.FaultStreamError}, true, portico.Transient, 200, "overloaded_error", "overloaded", 0},
		{"stream error event after content", fakeanthropic.Fault{Kind: fakeanthropic.FaultStreamError, AfterChunks: 2}, true, portico.Transient, 200, "overloaded_error", "overloaded", 0},
		{"stream error event prompt too long", fakeanthropic.Fault{Kind: fakeanthropic.FaultStreamError, Type: "invalid_request_error"}, true, portico.Incompatible, 200, "invalid_request_error", "context window", 0},
		{"stream error event api_error", fakeanthropic.Fault{Kind: fakeanthropic.FaultStreamError, Type: "api_error", AfterChunks: 1}, true, portico.Transient, 200, "api_error", "server error", 0},
		{"stream error event unstreamed", fakeanthropic.Fault{Kind: fakeanthropic.FaultStreamError}, false, portico.Transient, 529, "overloaded_error", "overloaded", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, m := start(t, faulty(tc.fault), anthropic.Config{})
			req := userReq("m", "hello")
			chunks := 0
			if tc.stream {
				req.OnChunk = func(c portico.Chunk) error { chunks++; return nil }
			}
			resp, err := m.Generate(context.Background(), req)
			if resp != nil || err == nil {
				t.Fatalf("Generate = %v, %v; want nil and an error", resp, err)
			}
			pe := asError(t, err)
			if pe.Class != tc.class || pe.Status != tc.status || pe.Code != tc.code || pe.Reason != tc.reason || pe.Model != "m" {
				t.Errorf("Generate error = class %v status %d code %q reason %q model %q, want %v %d %q %q m", pe.Class, pe.Status, pe.Code, pe.Reason, pe.Model, tc.class, tc.status, tc.code, tc.reason)
			}
			if pe.RetryAfter != tc.after || portico.ClassOf(err) != tc.class {
				t.Errorf("RetryAfter = %v, ClassOf = %v; want %v, %v", pe.RetryAfter, portico.ClassOf(err), tc.after, tc.class)
			}
			var prov *anthropic.ProviderError
			inStream := tc.status == 200
			if !errors.As(err, &prov) || prov.InStream != inStream || prov.AfterContent != (chunks > 0) || prov.Status != tc.status {
				t.Errorf("ProviderError = %+v, want status %d in stream %v after content %v", prov, tc.status, inStream, chunks > 0)
			}
			if chunks != tc.fault.AfterChunks && tc.stream {
				t.Errorf("chunks delivered = %d, want %d", chunks, tc.fault.AfterChunks)
			}
			var sdkErr *sdk.Error
			if !errors.As(err, &sdkErr) || sdkErr.StatusCode != tc.status {
				t.Errorf("errors.As(*anthropic.Error) = %v, want status %d", sdkErr, tc.status)
			}
			if n := s.Count("m"); n != 1 {
				t.Errorf("server saw %d requests, want 1 (SDK retries must be off)", n)
			}
		})
	}
}

// The model's own limits, met by the request itself: a prompt longer than
// the context window, a max_tokens above the model's ceiling.
func TestModelLimits(t *testing.T) {
	_, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", ContextWindow: 5, MaxOutputTokens: 1000}}}, anthropic.Config{})
	long := userReq("m", "one two three four five six")
	long.MaxOutputTokens = 10
	_, err := m.Generate(context.Background(), long)
	if pe := asError(t, err); pe.Class != portico.Incompatible || pe.Reason != "context window" || !errors.Is(err, portico.ErrIncompatible) {
		t.Errorf("Generate(9 tokens into 5) = %v, want incompatible, reason context window", err)
	}
	req := userReq("m", "hi")
	req.MaxOutputTokens = 1001
	_, err = m.Generate(context.Background(), req)
	if pe := asError(t, err); pe.Class != portico.Incompatible || pe.Reason != "max tokens above the model's limit" || pe.Status != 400 {
		t.Errorf("Generate(max_tokens 1001 > 1000) = %v, want incompatible 400, max tokens above the model's limit", err)
	}
	req.MaxOutputTokens = 1000
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Errorf("Generate(max_tokens 1000) = %v, want an answer", err)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	// In a synctest bubble the clock starts on a whole second and does not
	// move while the request is in flight, so the date gives the hint exactly.
	synctest.Test(t, func(t *testing.T) {
		s, m := startPipe(t, faulty(fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 429, RetryAfter: 10 * time.Second, RetryAfterDate: true}))
		_, err := m.Generate(t.Context(), userReq("m", "hello"))
		pe := asError(t, err)
		if pe.Class != portico.RateLimited || pe.RetryAfter != 10*time.Second || s.Count("m") != 1 {
			t.Errorf("Generate error = class %v RetryAfter %v after %d requests, want rate_limited 10s after 1", pe.Class, pe.RetryAfter, s.Count("m"))
		}
	})
}

func TestUnknownModelUnusable(t *testing.T) {
	_, m := start(t, fakeanthropic.Config{}, anthropic.Config{})
	_, err := m.Generate(context.Background(), userReq("claude-nope", "hi"))
	if pe := asError(t, err); pe.Class != portico.Unusable || pe.Status != 404 || pe.Code != "not_found_error" || !pe.Class.RouteFault() {
		t.Errorf("Generate error = %v %d %q, want unusable 404 not_found_error", pe.Class, pe.Status, pe.Code)
	}
}

func TestMalformed(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, m := start(t, faulty(fakeanthropic.Fault{Kind: fakeanthropic.FaultMalformed, AfterChunks: 1}), anthropic.Config{})
		req := userReq("m", "hello")
		chunks := 0
		if stream {
			req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
		}
		_, err := m.Generate(context.Background(), req)
		if pe := asError(t, err); pe.Class != portico.InvalidResponse || pe.Status != 200 || !errors.Is(err, anthropic.ErrMalformed) || !errors.Is(err, portico.ErrMalformed) {
			t.Errorf("stream %v: Generate error = %v status %d (%v), want invalid_response 200 wrapping ErrMalformed", stream, pe.Class, pe.Status, err)
		}
		if stream && chunks != 1 {
			t.Errorf("chunks before the malformed event = %d, want 1", chunks)
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
	m := anthropic.New(anthropic.Config{}, option.WithBaseURL("http://"+addr+"/"), option.WithAPIKey("k"))
	_, err = m.Generate(context.Background(), userReq("m", "hello"))
	if pe := asError(t, err); pe.Class != portico.Transient || pe.Status != 0 || !pe.NotSent {
		t.Errorf("Generate error = %v status %d NotSent %v, want transient 0 NotSent (%v)", pe.Class, pe.Status, pe.NotSent, err)
	}
	var ne *net.OpError
	if !errors.As(err, &ne) {
		t.Errorf("errors.As(*net.OpError) = false, want the dial error reachable")
	}
}

// A route without credentials is unusable: a key missing everywhere sends
// the request without one (401), a profile that cannot be loaded makes the
// SDK refuse to send it at all.
func TestNoCredentialsUnusable(t *testing.T) {
	for _, profile := range []string{"", "missing"} {
		t.Run("profile "+profile, func(t *testing.T) {
			for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_FEDERATION_RULE_ID"} {
				t.Setenv(k, "")
			}
			t.Setenv("ANTHROPIC_PROFILE", profile)
			t.Setenv("ANTHROPIC_CONFIG_DIR", t.TempDir())
			s, err := fakeanthropic.Start(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			m := anthropic.New(anthropic.Config{}, option.WithBaseURL(s.BaseURL()), option.WithHTTPClient(s.Client()))
			_, err = m.Generate(context.Background(), userReq("m", "hello"))
			status, requests := 401, 1
			if profile != "" {
				status, requests = 0, 0
			}
			if pe := asError(t, err); pe.Class != portico.Unusable || pe.Status != status || s.Count("m") != requests || pe.NotSent != (requests == 0) {
				t.Errorf("Generate without credentials = %v (NotSent %v) after %d requests, want unusable status %d after %d, NotSent only if none", err, pe.NotSent, s.Count("m"), status, requests)
			}
		})
	}
}

// Timeouts and resets after the request was written are Ambiguous: the
// server may have run it.
func TestAfterWrittenAmbiguous(t *testing.T) {
	cases := []struct {
		name   string
		fault  fakeanthropic.Fault
		stream bool
		status int
	}{
		{"stall before headers", fakeanthropic.Fault{Kind: fakeanthropic.FaultStallBeforeHeaders}, false, 0},
		{"stall before headers streaming", fakeanthropic.Fault{Kind: fakeanthropic.FaultStallBeforeHeaders}, true, 0},
		{"stall mid body", fakeanthropic.Fault{Kind: fakeanthropic.FaultStallMidStream}, false, 200},
		{"stall mid stream", fakeanthropic.Fault{Kind: fakeanthropic.FaultStallMidStream, AfterChunks: 2}, true, 200},
		{"disconnect before headers", fakeanthropic.Fault{Kind: fakeanthropic.FaultDisconnect}, false, 0},
		{"disconnect mid stream", fakeanthropic.Fault{Kind: fakeanthropic.FaultDisconnect, AfterChunks: 2}, true, 200},
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
	stall := faulty(fakeanthropic.Fault{Kind: fakeanthropic.FaultStallBeforeHeaders})
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
				_, m := startPipe(t, stall)
				ctx, cancel := tc.ctx()
				defer cancel()
				start := time.Now()
				_, err := m.Generate(ctx, userReq("m", "hello"))
				pe := asError(t, err)
				if pe.Class != tc.class {
					t.Errorf("Generate error class = %v (%v), want %v", pe.Class, err, tc.class)
				}
				// Only a call canceled before it began sent nothing: the
				// stall holds every other request after it was written.
				if want := tc.name == "already canceled"; pe.NotSent != want {
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

func TestChunkCallbackError(t *testing.T) {
	_, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 10}}}, anthropic.Config{})
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
	for _, f := range []fakeanthropic.Fault{
		{Kind: fakeanthropic.FaultStatus, Status: 400, Message: "bad request: " + secret},
		{Kind: fakeanthropic.FaultStreamError, Message: secret, AfterChunks: 1},
	} {
		for _, include := range []bool{false, true} {
			_, m := start(t, faulty(f), anthropic.Config{IncludeProviderMessage: include})
			req := userReq("m", "hello")
			req.OnChunk = func(portico.Chunk) error { return nil }
			_, err := m.Generate(context.Background(), req)
			var prov *anthropic.ProviderError
			if !errors.As(err, &prov) {
				t.Fatalf("errors.As(*ProviderError) = false for %v", err)
			}
			if got := strings.Contains(err.Error(), secret); got != include {
				t.Errorf("%v IncludeProviderMessage %v: message in error string = %v, want %v", f.Kind, include, got, include)
			}
			if got := prov.Message == f.Message; got != include {
				t.Errorf("%v IncludeProviderMessage %v: ProviderError.Message = %q", f.Kind, include, prov.Message)
			}
		}
	}
}

// The SDK never retries, even when the caller's options ask it to: one layer
// owns retries.
func TestSDKRetriesOff(t *testing.T) {
	for _, f := range []fakeanthropic.Fault{
		{Kind: fakeanthropic.FaultStatus, Status: 529},
		{Kind: fakeanthropic.FaultStatus, Status: 503},
		{Kind: fakeanthropic.FaultStatus, Status: 429, RetryAfter: time.Millisecond},
		{Kind: fakeanthropic.FaultStatus, Status: 400, ShouldRetry: "true"},
		{Kind: fakeanthropic.FaultDisconnect},
	} {
		cfg := faulty(f)
		cfg.Models = append(cfg.Models, fakeanthropic.ModelConfig{Name: "ok"})
		s, m := start(t, cfg, anthropic.Config{}, option.WithMaxRetries(5))
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

// With package retry above the adapter: a 529 then an answer is retried
// once (two requests on the wire), an error event before any content too,
// and one after content reached the caller is returned, never retried.
func TestRetryLayerAbove(t *testing.T) {
	cases := []struct {
		name     string
		script   []fakeanthropic.Fault
		stream   bool
		requests int
		class    portico.Class
	}{
		{"529 then answer", []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 529}, {}}, false, 2, portico.OK},
		{"error event before content then answer", []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStreamError}, {}}, true, 2, portico.OK},
		{"error event after content", []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStreamError, AfterChunks: 2}, {}}, true, 1, portico.Transient},
		{"401 then answer", []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 401}, {}}, false, 1, portico.Unusable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Script: tc.script}}})
				r, err := retry.New(retry.Config{MaxAttempts: 3, Backoff: retry.Backoff{BaseDelay: time.Millisecond}})
				if err != nil {
					t.Fatal(err)
				}
				req := userReq("m", "hello")
				var text strings.Builder
				if tc.stream {
					req.OnChunk = func(c portico.Chunk) error { text.WriteString(c.Text); return nil }
				}
				resp, err := r.Wrap(m).Generate(t.Context(), req)
				if portico.ClassOf(err) != tc.class || s.Count("m") != tc.requests {
					t.Errorf("Generate = %v (class %v) after %d requests, want class %v after %d", err, portico.ClassOf(err), s.Count("m"), tc.class, tc.requests)
				}
				if err == nil && tc.stream && text.String() != resp.Text {
					t.Errorf("streamed %q, answered %q: want the retried attempt's text only", text.String(), resp.Text)
				}
			})
		})
	}
}
