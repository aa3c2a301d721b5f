package portico

import (
	"context"
	"errors"
	"testing"
)

// TestUnstarted: a nil request is ErrNilRequest whatever the context (the
// request is checked first), a done context with a request is Gone's
// error, and a live one with a request is nil.
func TestUnstarted(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	req := &Request{}
	for _, c := range []struct {
		name string
		ctx  context.Context
		req  *Request
		want error // matched with errors.Is; nil for nil
	}{
		{"nil request, live", context.Background(), nil, ErrNilRequest},
		{"nil request, done", done, nil, ErrNilRequest},
		{"done", done, req, ErrCanceled},
		{"live", context.Background(), req, nil},
	} {
		err := Unstarted(c.ctx, c.req)
		if (c.want == nil) != (err == nil) || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("Unstarted(%s) = %v, want %v", c.name, err, c.want)
		}
	}
	if err := Unstarted(done, nil); err != ErrNilRequest {
		t.Errorf("Unstarted(done, nil) = %v, want ErrNilRequest itself", err)
	}
}

// TestMust: Must returns the value when err is nil, and panics with err
// itself otherwise.
func TestMust(t *testing.T) {
	if got := Must(7, nil); got != 7 {
		t.Errorf("Must(7, nil) = %d, want 7", got)
	}
	bad := errors.New("bad config")
	defer func() {
		if r := recover(); r != bad {
			t.Errorf("Must(_, bad) panicked with %v, want the error itself", r)
		}
	}()
	Must(0, bad)
	t.Error("Must(_, bad) returned")
}

// TestPanicIfNil: a nil Model, or a typed nil in the interface, panics with
// the message given; a Model does not.
func TestPanicIfNil(t *testing.T) {
	PanicIfNil(ModelFunc(func(context.Context, *Request) (*Response, error) { return nil, nil }), "x")
	for _, m := range []Model{nil, ModelFunc(nil)} {
		func() {
			defer func() {
				if r := recover(); r != "layer: Wrap of a nil Model" {
					t.Errorf("PanicIfNil(%#v) panicked with %v, want the message", m, r)
				}
			}()
			PanicIfNil(m, "layer: Wrap of a nil Model")
			t.Errorf("PanicIfNil(%#v) returned", m)
		}()
	}
}
