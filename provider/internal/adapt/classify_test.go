package adapt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

var testRules = Rules{
	Name: "test",
	StatusClass: func(status int, h http.Header, cause error) (portico.Class, string, error) {
		c, reason := portico.Transient, "status "+http.StatusText(status)
		if h.Get("X-Should-Retry") == "false" {
			return NoRetry(c, reason, cause)
		}
		return c, reason, cause
	},
	NotBuilt:       portico.Unusable,
	NotBuiltReason: "not built",
}

// exchange returns an Exchange in the state a call left it in.
func exchange(reached, wrote bool, status int, readErr error) *Exchange {
	x := &Exchange{TooLarge: errTooLarge, Reached: reached, Status: status, ReadErr: readErr, Header: http.Header{}}
	x.wrote.Store(wrote)
	return x
}

// Stopped classifies a done context before anything else, whatever the
// exchange saw, and says whether the request may have been acted on.
func TestStoppedContext(t *testing.T) {
	layerCause := portico.Join(portico.ErrLayerTimeout, errors.New("attempt timeout"))
	shareCause := portico.NewLayerTimeout("fallback: share timeout")
	for _, c := range []struct {
		name    string
		cancel  func() context.Context
		wrote   bool
		class   portico.Class
		reason  string
		notSent bool
	}{
		{"canceled before writing", canceled(nil), false, portico.Canceled, "", true},
		{"canceled after writing", canceled(nil), true, portico.Canceled, "", false},
		{"deadline after writing", expired, true, portico.Deadline, "", false},
		{"layer timeout before writing", canceled(layerCause), false, portico.Transient, "timeout before the request was sent", true},
		{"layer timeout after writing", canceled(layerCause), true, portico.Ambiguous, "timeout after the request was sent", false},
		// Not every layer timeout is an attempt's: a fallback group's share
		// (the reason is all a stopped group's error keeps of it).
		{"share timeout after writing", canceled(shareCause), true, portico.Ambiguous, "timeout after the request was sent", false},
	} {
		ctx := c.cancel()
		x := exchange(true, c.wrote, 200, errTooLarge) // the context still comes first
		e := x.NewError("m", errors.New("sdk"))
		if !x.Stopped(ctx, e, &testRules) {
			t.Fatalf("%s: Stopped = false, want true", c.name)
		}
		if e.Class != c.class || e.Reason != c.reason || e.NotSent != c.notSent || !errors.Is(e.Err, ctx.Err()) || e.Model != "m" || e.Status != 200 {
			t.Errorf("%s: error = %+v, want %v %q NotSent %v wrapping %v", c.name, e, c.class, c.reason, c.notSent, ctx.Err())
		}
		if c.reason != "" && !errors.Is(e.Err, portico.ErrLayerTimeout) {
			t.Errorf("%s: error %v does not keep the layer's cause", c.name, e.Err)
		}
	}
}

func canceled(cause error) func() context.Context {
	return func() context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
}

func expired() context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	cancel()
	return ctx
}

// A body past the limit is InvalidResponse wrapping TooLarge, or the class
// of its HTTP error status; any other read error is not Stopped's.
func TestStoppedTooLarge(t *testing.T) {
	ctx := context.Background()
	x := exchange(true, true, 200, errTooLarge)
	e := x.NewError("m", errors.New("sdk"))
	if !x.Stopped(ctx, e, &testRules) || e.Class != portico.InvalidResponse || e.Reason != "response too large" || e.Err != errTooLarge {
		t.Errorf("200 too large: %+v, want invalid_response \"response too large\" wrapping TooLarge", e)
	}
	x = exchange(true, true, 503, errTooLarge)
	x.Header.Set("X-Should-Retry", "false")
	e = x.NewError("m", nil)
	if !x.Stopped(ctx, e, &testRules) || e.Class != portico.Incompatible || e.Reason != "status Service Unavailable (x-should-retry: false) (error body too large)" ||
		!errors.Is(e.Err, errTooLarge) || !portico.IsUnanswered(e.Class, e) {
		t.Errorf("503 too large: %+v, want the status's class, marked as x-should-retry: false says, \"(error body too large)\"", e)
	}
	x = exchange(true, true, 503, errTooLarge)
	e = x.NewError("m", nil)
	if !x.Stopped(ctx, e, &testRules) || e.Class != portico.Transient || e.Reason != "status Service Unavailable (error body too large)" || e.Err != errTooLarge {
		t.Errorf("503 too large: %+v, want the status's class, \"(error body too large)\", wrapping TooLarge", e)
	}
	for _, readErr := range []error{nil, io.ErrUnexpectedEOF} {
		x = exchange(true, true, 200, readErr)
		if e := x.NewError("m", nil); x.Stopped(ctx, e, &testRules) {
			t.Errorf("ReadErr %v: Stopped = true (%+v), want false", readErr, e)
		}
	}
}

// Failed classifies what no error object explains, by how far the call got.
func TestFailed(t *testing.T) {
	sdkErr := errors.New("sdk: cannot decode SECRET")
	for _, c := range []struct {
		name           string
		x              *Exchange
		class          portico.Class
		reason         string
		notSent, cause bool
	}{
		{"not built", exchange(false, false, 0, nil), portico.Unusable, "not built", true, true},
		{"not written", exchange(true, false, 0, nil), portico.Transient, "transport failed before the request was sent", true, true},
		{"written", exchange(true, true, 0, nil), portico.Ambiguous, "transport failed after the request was sent", false, true},
		{"cut off", exchange(true, true, 200, io.ErrUnexpectedEOF), portico.Ambiguous, "response body cut off", false, false},
		{"malformed", exchange(true, true, 200, nil), portico.InvalidResponse, "malformed response", false, true},
	} {
		e := c.x.Failed(c.x.NewError("m", sdkErr), &testRules)
		if e.Class != c.class || e.Reason != c.reason || e.NotSent != c.notSent || errors.Is(e.Err, sdkErr) != c.cause {
			t.Errorf("%s: %+v, want %v %q NotSent %v, wraps the SDK's error %v", c.name, e, c.class, c.reason, c.notSent, c.cause)
		}
		if part := modeltest.Repeated(e); part != "" { // it said "malformed response: malformed response"
			t.Errorf("%s: %q says %q twice", c.name, e, part)
		}
		if c.name == "cut off" && e.Err != io.ErrUnexpectedEOF {
			t.Errorf("cut off: Err = %v, want the read error", e.Err)
		}
		if (c.name == "malformed") != errors.Is(e, portico.ErrMalformed) {
			t.Errorf("%s: wraps ErrMalformed = %v", c.name, errors.Is(e, portico.ErrMalformed))
		}
		if msg := e.Error(); (c.name == "malformed" || c.name == "not built") && (strings.Contains(msg, "SECRET") || !strings.Contains(msg, "test: SDK error (text withheld)")) {
			t.Errorf("%s: error %q quotes the SDK's error", c.name, e.Error())
		}
	}
}

func TestMalformed(t *testing.T) {
	x := exchange(true, true, 200, nil)
	rl := &portico.RateLimit{Requests: portico.Quota{Known: true, Remaining: 3}}
	e := x.Malformed("m", "no choices", rl)
	if e.Class != portico.InvalidResponse || e.Reason != "no choices" || e.Status != 200 || e.Model != "m" || e.RateLimit != rl || !errors.Is(e, portico.ErrMalformed) {
		t.Errorf("Malformed = %+v, want invalid_response, the reason, status, model, rate limits, ErrMalformed", e)
	}
}

func TestWithhold(t *testing.T) {
	if Withhold("x", nil) != nil {
		t.Errorf("Withhold(nil) != nil")
	}
	inner := &portico.Error{Class: portico.Transient}
	err := Withhold("openai", inner)
	var pe *portico.Error
	if err.Error() != "openai: SDK error (text withheld)" || !errors.As(err, &pe) || pe != inner {
		t.Errorf("Withhold = %q, As %v; want the fixed text, reaching the error", err, pe)
	}
}

func TestChunkError(t *testing.T) {
	pe := &portico.Error{Class: portico.RateLimited}
	if got := ChunkError(pe, "m"); got != pe {
		t.Errorf("ChunkError(*portico.Error) = %v, want it as is", got)
	}
	stop := errors.New("stop")
	got := ChunkError(stop, "m")
	if portico.ClassOf(got) != portico.Canceled || !errors.Is(got, stop) {
		t.Errorf("ChunkError(stop) = %v, want canceled wrapping stop", got)
	}
}

func TestErrorText(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{ErrorText("openai", false, 429, "", " type ", "rate_limit", " code ", ""), "openai: error status 429 type rate_limit"},
		{ErrorText("anthropic", true, 200, "Overloaded", " type ", "overloaded_error", " code ", "c"), "anthropic: stream error status 200 type overloaded_error code c: Overloaded"},
		{ErrorText("gemini", false, 503, "", " ", "UNAVAILABLE", " reason ", ""), "gemini: error status 503 UNAVAILABLE"},
		{ErrorText("x", false, 500, ""), "x: error status 500"},
	} {
		if c.got != c.want {
			t.Errorf("ErrorText = %q, want %q", c.got, c.want)
		}
	}
}

// TestBilled: a *portico.Error without usage gets the stream's; one with
// usage of its own, and an error of another type, are left as they are.
func TestBilled(t *testing.T) {
	u := portico.Usage{InputTokens: 18, CachedInputTokens: 5, OutputTokens: 1}
	bare := &portico.Error{Class: portico.Transient}
	if err := Billed(fmt.Errorf("stream: %w", bare), u); portico.UsageOf(err) == nil || *portico.UsageOf(err) != u {
		t.Errorf("Billed on an error without usage: UsageOf = %+v, want %+v", portico.UsageOf(err), u)
	}
	own := portico.Usage{InputTokens: 3}
	had := &portico.Error{Class: portico.Transient, Usage: &own}
	if Billed(had, u); *had.Usage != own {
		t.Errorf("Billed replaced the error's own usage: %+v, want %+v", *had.Usage, own)
	}
	plain := errors.New("not classified")
	if err := Billed(plain, u); err != plain || portico.UsageOf(err) != nil {
		t.Errorf("Billed(plain) = %v with usage %+v, want it unchanged", err, portico.UsageOf(err))
	}
}
