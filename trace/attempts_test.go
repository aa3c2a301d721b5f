package trace

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/retry"
)

// portico.attempts with no attempt layer below the request's: an error that
// says no request left the process (NotSent, a local Rejected) made no
// attempt; any other outcome made one.
func TestAttemptsWithoutAttemptLayer(t *testing.T) {
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp})
	req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"answer", nil, "1"},
		{"503", &portico.Error{Class: portico.Transient, Status: 503}, "1"},
		{"not sent", &portico.Error{Class: portico.Deadline, NotSent: true}, "0"},
		{"rejected", &portico.Error{Class: portico.Rejected, Reason: "breaker open"}, "0"},
		{"refused by Request.Validate", (&portico.Request{}).Validate(), "0"},
	} {
		m := tr.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			if c.err != nil {
				return nil, c.err
			}
			return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
		}))
		m.Generate(context.Background(), req)
		spans := s.rec.Ended()
		if got := attrs(spans[len(spans)-1].Attributes())[string(KeyAttempts)]; got != c.want {
			t.Errorf("%s: portico.attempts = %q, want %q", c.name, got, c.want)
		}
	}
}

// portico.attempts over a retry layer (no attempt layer below) counts the
// calls made when one was sent, whatever ended the request: an attempt
// sent (Ambiguous), then one refused below the retry layer (a throttle's
// Rejected, NotSent) is two calls, not 0.
func TestAttemptsAfterSentThenRefused(t *testing.T) {
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp})
	req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
	refused := &portico.Error{Class: portico.Rejected, Reason: "throttled", NotSent: true}
	for _, c := range []struct {
		name string
		errs []error // call n fails with errs[n], the last repeating
		want string
	}{
		{"sent, then refused", []error{&portico.Error{Class: portico.Ambiguous}, refused}, "2"},
		{"refused at once", []error{refused}, "0"},
	} {
		n := 0
		inner := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			n++
			return nil, c.errs[min(n, len(c.errs))-1]
		})
		rt := retry.MustNew(retry.Config{Backoff: retry.Backoff{Schedule: retry.Immediate}})
		tr.Wrap(rt.Wrap(inner)).Generate(context.Background(), req)
		spans := s.rec.Ended()
		if got := attrs(spans[len(spans)-1].Attributes())[string(KeyAttempts)]; got != c.want {
			t.Errorf("%s: portico.attempts = %q after %d calls, want %q", c.name, got, n, c.want)
		}
	}
}
