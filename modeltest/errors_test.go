package modeltest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/portico-llm/portico"
)

func TestStatusError(t *testing.T) {
	for _, c := range []struct {
		status int
		want   portico.Class
	}{
		{400, portico.Incompatible}, {401, portico.Unusable}, {402, portico.Unusable}, {403, portico.Unusable},
		{404, portico.Unusable}, {408, portico.Transient}, {409, portico.Transient}, {413, portico.Incompatible},
		{418, portico.Incompatible}, {422, portico.Incompatible}, {424, portico.Transient}, {429, portico.RateLimited},
		{500, portico.Transient}, {502, portico.Transient}, {503, portico.Transient}, {504, portico.Transient},
		{599, portico.Transient},
	} {
		err := StatusError(c.status)
		if got := portico.ClassOf(err); got != c.want || err.Status != c.status {
			t.Errorf("StatusError(%d) = class %v status %d, want class %v status %d", c.status, got, err.Status, c.want, c.status)
		}
		if !errors.Is(err, ErrInjected) {
			t.Errorf("errors.Is(StatusError(%d), ErrInjected) = false, want true", c.status)
		}
	}
}

func TestErrConstructors(t *testing.T) {
	for _, c := range []struct {
		name       string
		err        *portico.Error
		sentinel   error
		status     int
		code       string
		retryAfter time.Duration
	}{
		{"RateLimitError(3s)", RateLimitError(3 * time.Second), portico.ErrRateLimited, 429, "rate_limit_exceeded", 3 * time.Second},
		{"RateLimitError(0)", RateLimitError(0), portico.ErrRateLimited, 429, "rate_limit_exceeded", 0},
		{"StatusError(500)", StatusError(500), portico.ErrTransient, 500, "", 0},
		{"StatusError(502)", StatusError(502), portico.ErrTransient, 502, "", 0},
		{"StatusError(503)", StatusError(503), portico.ErrTransient, 503, "", 0},
		{"ConnRefusedError", ConnRefusedError(), portico.ErrTransient, 0, "", 0},
		{"TimeoutError", TimeoutError(), portico.ErrAmbiguous, 0, "", 0},
		{"ContextOverflowError", ContextOverflowError(), portico.ErrIncompatible, 400, "context_length_exceeded", 0},
	} {
		var err error = c.err
		if !errors.Is(err, c.sentinel) || !errors.Is(err, ErrInjected) {
			t.Errorf("%s = %v, want errors.Is %v and ErrInjected", c.name, err, c.sentinel)
		}
		if c.err.Status != c.status || c.err.Code != c.code || portico.RetryAfterOf(err) != c.retryAfter {
			t.Errorf("%s = status %d code %q retry-after %v, want %d %q %v", c.name,
				c.err.Status, c.err.Code, portico.RetryAfterOf(err), c.status, c.code, c.retryAfter)
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Errorf("%s matches a context error, want it not to", c.name)
		}
	}
	if a, b := StatusError(503), StatusError(503); a == b {
		t.Error("StatusError(503) returned the same *Error twice, want a new one per call")
	}
}
