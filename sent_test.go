package portico_test

import (
	"errors"
	"testing"

	"github.com/portico-llm/portico"
)

// NothingSent: NotSent decides; Rejected says nothing was sent unless it
// wraps a call that was; anything else may have been sent.
func TestNothingSent(t *testing.T) {
	sent := &portico.Error{Class: portico.Ambiguous}
	unsent := &portico.Error{Class: portico.Transient, NotSent: true}
	refused := &portico.Error{Class: portico.Rejected, NotSent: true}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not a *portico.Error", errors.New("x"), false},
		{"NotSent", unsent, true},
		{"NotSent wins over a sent cause", &portico.Error{Class: portico.Canceled, NotSent: true, Err: sent}, true},
		{"Rejected", &portico.Error{Class: portico.Rejected}, true},
		{"Rejected with a status", &portico.Error{Class: portico.Rejected, Status: 503}, true},
		{"transient without a status or NotSent", &portico.Error{Class: portico.Transient}, false},
		{"503", &portico.Error{Class: portico.Transient, Status: 503}, false},
		{"ambiguous", sent, false},
		{"canceled, not known to be unsent", &portico.Error{Class: portico.Canceled}, false},
		{"wrapped", errors.Join(errors.New("ctx"), unsent), true},
		{"Rejected over a sent call", &portico.Error{Class: portico.Rejected, Err: portico.Join(refused, sent)}, false},
		{"Rejected over unsent calls", &portico.Error{Class: portico.Rejected, Err: portico.Join(refused, unsent)}, true},
		{"Rejected over a refusal over a sent call", &portico.Error{Class: portico.Rejected,
			Err: &portico.Error{Class: portico.Rejected, Err: sent}}, false},
	} {
		if got := portico.NothingSent(c.err); got != c.want {
			t.Errorf("%s: NothingSent(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// SentIn finds a call that may have been sent anywhere in a tree.
func TestSentIn(t *testing.T) {
	sent := &portico.Error{Class: portico.Ambiguous}
	unsent := &portico.Error{Class: portico.Transient, NotSent: true}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"no *portico.Error", errors.New("x"), false},
		{"unsent calls", portico.Join(unsent, &portico.Error{Class: portico.Rejected}), false},
		{"one sent among them", portico.Join(unsent, errors.Join(errors.New("x"), sent)), true},
	} {
		if got := portico.SentIn(c.err); got != c.want {
			t.Errorf("%s: SentIn(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// AfterSent: a refusal after a sent call speaks for the sent call, both
// reachable; any other error, or a refusal with no sent call, is kept.
func TestAfterSent(t *testing.T) {
	sent := &portico.Error{Class: portico.Transient, Status: 503, Code: "overloaded"}
	refused := &portico.Error{Class: portico.RateLimited, RetryAfter: 2e9, NotSent: true}
	err := portico.AfterSent(refused, sent)
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class != portico.Transient || pe.Status != 503 || pe.Code != "overloaded" || pe.NotSent || pe.RetryAfter != 2e9 {
		t.Errorf("AfterSent(refused, 503) = %#v, want transient 503 overloaded, retry-after 2s, not NotSent", err)
	}
	if !errors.Is(err, sent) || !errors.Is(err, refused) || portico.NothingSent(err) {
		t.Errorf("AfterSent(refused, 503) = %v: reaches sent %v, refused %v, NothingSent %v; want true, true, false",
			err, errors.Is(err, sent), errors.Is(err, refused), portico.NothingSent(err))
	}
	stop := &portico.Error{Class: portico.Permanent, Reason: "not encodable", NotSent: true}
	err = portico.AfterSent(stop, sent)
	if !errors.As(err, &pe) || pe.Class != portico.Permanent || pe.NotSent || !errors.Is(err, sent) || !errors.Is(err, stop) {
		t.Errorf("AfterSent(permanent, 503) = %v, want permanent, not NotSent, reaching both", err)
	}
	if got := portico.AfterSent(refused, nil); got != error(refused) {
		t.Errorf("AfterSent(refused, nil) = %v, want refused itself", got)
	}
	if got := portico.AfterSent(sent, refused); got != error(sent) {
		t.Errorf("AfterSent(sent, refused) = %v, want sent itself", got)
	}
}
