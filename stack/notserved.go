package stack

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// How long, and for how many models, a route without a ModelName remembers
// the models it answered 404 for (see notServed).
const (
	// notServedFor is how long a route is not called again for a model it
	// answered 404 for: a deployment added meanwhile is used after it.
	notServedFor = 5 * time.Minute
	// notServedModels bounds the models a route remembers; the one that
	// expires first makes room for a new one.
	notServedModels = 256
	// notServedName bounds the length of a model name remembered: the
	// name is the request's, whatever its size.
	notServedName = 256
)

// notServed is what a route without a ModelName knows of the models it
// does not serve. Its learn middleware, inside every judging layer of the
// route (its throttle, retry and breaker; only ModelMiddleware is inside
// it), makes a 404 for a model the request named a fault of the pair, not
// of the route: the Unusable error becomes Incompatible ("model not served
// by this route"), which the group moves on from, the breaker does not
// count and a throttle counts as accepted. A route that sends whatever
// model the caller names cannot tell a model it does not serve (another
// provider's name, a typo) from a missing deployment; taking it out of
// rotation for every tenant because one request named a model it lacks
// would be worse than one 404 per such request. And not even one per
// request: learn remembers the model for notServedFor (at most
// notServedModels of them, names up to notServedName bytes), and its skip
// middleware, outermost but for Route.Middleware, refuses a request for a
// remembered model with that error, NotSent, before anything is spent or
// sent. Safe for concurrent use; the zero value remembers nothing yet.
type notServed struct {
	n     atomic.Int32 // len(known), read without the lock
	mu    sync.RWMutex
	known map[string]notServedEntry // by Request.Model
	last  time.Time                 // the latest entry's until: all expired past it
}

// notServedEntry is what a route keeps of a 404: when it expires, and the
// content-free fields of the error, never its cause (a provider's message,
// an SDK's request), which was one tenant's and is not handed to another.
type notServedEntry struct {
	until        time.Time
	status       int
	code, reason string
}

// skip refuses, without calling next, a request for a model the route
// answered 404 for less than notServedFor ago.
func (m *notServed) skip(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if req.Model != "" && m.n.Load() != 0 {
			if err := m.refused(req.Model, time.Now()); err != nil {
				return nil, err
			}
		}
		return next.Generate(ctx, req)
	})
}

// refused returns the error remembered for model, NotSent, or nil when
// there is none at now.
func (m *notServed) refused(model string, now time.Time) error {
	m.mu.RLock()
	e, ok := m.known[model]
	stale, expired := !now.Before(m.last), ok && !now.Before(e.until)
	m.mu.RUnlock()
	if stale || expired {
		m.forget(model, now)
		return nil
	}
	if !ok {
		return nil
	}
	return &portico.Error{Class: portico.Incompatible, Status: e.status, Code: e.code, Model: model,
		Reason: e.reason, NotSent: true}
}

// forget drops what expired at now: every entry once the latest has, so
// that the route's requests skip the lock again (n is 0), else model's.
func (m *notServed) forget(model string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !now.Before(m.last) {
		clear(m.known)
	} else if e, ok := m.known[model]; ok && !now.Before(e.until) {
		delete(m.known, model)
	}
	m.n.Store(int32(len(m.known)))
}

// learn turns a 404 for the model the request named into Incompatible,
// and remembers it.
func (m *notServed) learn(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		resp, err := next.Generate(ctx, req)
		if err == nil || req.Model == "" {
			return resp, err // before errors.As, whose target escapes: no allocation on an answer
		}
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Unusable || pe.Status != http.StatusNotFound {
			return resp, err
		}
		out := *pe
		out.Class = portico.Incompatible
		out.Reason = "model not served by this route"
		if pe.Reason != "" {
			out.Reason += " (" + pe.Reason + ")"
		}
		m.remember(req.Model, &out, time.Now())
		return resp, &out
	})
}

// remember keeps err's status, code and reason for model until now +
// notServedFor, making room by dropping the entry that expires first.
func (m *notServed) remember(model string, err *portico.Error, now time.Time) {
	if len(model) > notServedName {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known == nil {
		m.known = make(map[string]notServedEntry)
	}
	if _, ok := m.known[model]; !ok && len(m.known) >= notServedModels {
		delete(m.known, m.expiresFirst())
	}
	until := now.Add(notServedFor)
	m.known[model] = notServedEntry{until: until, status: err.Status, code: err.Code,
		reason: err.Reason + ", remembered"}
	if until.After(m.last) {
		m.last = until
	}
	m.n.Store(int32(len(m.known)))
}

// expiresFirst returns the model whose entry expires first. m.mu is held.
func (m *notServed) expiresFirst() string {
	first := ""
	for k, e := range m.known {
		if first == "" || e.until.Before(m.known[first].until) {
			first = k
		}
	}
	return first
}
