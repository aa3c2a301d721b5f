package route

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// switchHealth is a Health whose availability, and time until it comes
// back when down, the test sets.
type switchHealth struct {
	down atomic.Bool
	wait atomic.Int64 // time.Duration
}

func (h *switchHealth) Available() bool { return !h.down.Load() }

func (h *switchHealth) RetryAfter() time.Duration {
	if !h.down.Load() {
		return 0
	}
	return time.Duration(h.wait.Load())
}

// answer returns a Model that answers text with usage u, counting its calls.
func answer(text string, u portico.Usage, calls *atomic.Int64) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if calls != nil {
			calls.Add(1)
		}
		if err := portico.FromContext(ctx); err != nil {
			return nil, err
		}
		if req.OnChunk != nil {
			if err := req.OnChunk(portico.Chunk{Text: text}); err != nil {
				return nil, err
			}
		}
		return &portico.Response{Text: text, FinishReason: portico.FinishStop, Usage: u, Model: text}, nil
	})
}

// failWith returns a Model that fails with class c.
func failWith(c portico.Class, calls *atomic.Int64) portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		if calls != nil {
			calls.Add(1)
		}
		return nil, &portico.Error{Class: c, Reason: "fake"}
	})
}

func userReq(text string) *portico.Request {
	return &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

// setInFlight sets r's calls in flight to n, keeping its pick count; for tests
// that start from a given load.
func (r *Replica) setInFlight(n int) {
	c := r.count.Load()
	r.count.Store(c&^inFlightMask | uint64(n))
}

// len returns how many sessions the picker remembers.
func (p *affinityPicker) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}
