package adapt

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/protect"
)

// trackBody is a body that records its Close.
type trackBody struct {
	io.Reader
	closed bool
}

func (b *trackBody) Close() error { b.closed = true; return nil }

// guardReq is a JSON POST of body.
func guardReq(t *testing.T, body string) *http.Request {
	r, err := http.NewRequest("POST", "http://x/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	return r
}

// TestGuardLayerAnswersItself: a layer that answers without calling the
// provider (a cache hit) is a classified error, not a panic: the SDK needs
// the provider's bytes.
func TestGuardLayerAnswersItself(t *testing.T) {
	answer := func(portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			return &portico.Response{FinishReason: portico.FinishStop}, nil // a cache hit
		})
	}
	g := mustGuard(t, []portico.Middleware{answer})
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("Do with a layer that answers itself panicked: %v", p)
		}
	}()
	res, err := g.Do(guardReq(t, `{"model":"m"}`), func(*http.Request) (*http.Response, error) {
		t.Fatal("next called")
		return nil, nil
	})
	if res != nil || portico.ClassOf(err) != portico.Permanent {
		t.Fatalf("Do = %v, %v; want a Permanent error", res, err)
	}
}

// TestGuardClosesStreamsNotReturned: a layer that turns a stream's answer
// into an error leaves no body open: Do closes every stream it does not
// return.
func TestGuardClosesStreamsNotReturned(t *testing.T) {
	reject := func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			_, err := next.Generate(ctx, req)
			if err != nil {
				return nil, err
			}
			return nil, &portico.Error{Class: portico.InvalidResponse, Reason: "empty"} // e.g. validate
		})
	}
	g := mustGuard(t, []portico.Middleware{reject})
	var bodies []*trackBody
	_, err := g.Do(guardReq(t, `{"model":"m","stream":true}`), func(r *http.Request) (*http.Response, error) {
		b := &trackBody{Reader: strings.NewReader("data: {}\n\ndata: [DONE]\n\n")}
		bodies = append(bodies, b)
		h := http.Header{}
		h.Set("Content-Type", "text/event-stream")
		return &http.Response{StatusCode: 200, Header: h, Body: b, Request: r}, nil
	})
	var pe *portico.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v", err)
	}
	for i, b := range bodies {
		if !b.closed {
			t.Errorf("stream body %d of %d never closed after Do returned %v", i, len(bodies), err)
		}
	}
}

// mustGuard is a Guard of no dialect over mws.
func mustGuard(t *testing.T, mws []portico.Middleware) *Guard {
	return MustGuard(Dialect{Rules: &Rules{}}, protect.Config{Layers: mws})
}

// TestGuardRequestFromContext: the request the layers see carries the
// tenant and the priority of the SDK call's context.
func TestGuardRequestFromContext(t *testing.T) {
	g := mustGuard(t, nil)
	ctx := portico.WithPriority(portico.WithIdentity(context.Background(), portico.Identity{ClientKey: "t"}), portico.Critical)
	req := g.request(guardReq(t, `{"model":"m"}`).WithContext(ctx), []byte(`{"model":"m"}`))
	if req.Identity.ClientKey != "t" || req.Priority != portico.Critical {
		t.Errorf("request(ctx) = identity %+v, priority %v; want t, critical", req.Identity, req.Priority)
	}
	if req := g.request(guardReq(t, `{}`), []byte(`{}`)); req.Priority != portico.Default {
		t.Errorf("request without a priority = %v, want default", req.Priority)
	}
}
