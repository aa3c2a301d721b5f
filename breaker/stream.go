package breaker

import (
	"sync/atomic"

	"github.com/portico-llm/portico"
)

// callerFault stands, when counting outcomes, for a call that the caller's own
// Request.OnChunk ended by panicking or returning an error: the caller's fault,
// not the route's, so it is counted like a cancellation, neither failure nor
// success.
var callerFault = &portico.Error{Class: portico.Canceled, Reason: "caller's OnChunk failed"}

// stream is a streaming call's copy of the request, whose OnChunk is the
// caller's wrapped to note whether it panicked or returned an error. One
// allocation holds both, and a second the method value; a request that does
// not stream is passed on as is and costs nothing.
type stream struct {
	req     portico.Request
	onChunk func(portico.Chunk) error // the caller's
	// faulted is set once the caller's OnChunk panicked or returned an error.
	// Atomic because an adapter may call OnChunk from a goroutine of its own.
	faulted atomic.Bool
}

// guardStream returns the request to pass on: req itself when it does not
// stream (and a nil *stream), else a copy whose OnChunk reports the caller's
// faults to the returned *stream. The caller's req is never modified.
func guardStream(req *portico.Request) (*portico.Request, *stream) {
	if req.OnChunk == nil {
		return req, nil
	}
	s := &stream{req: *req, onChunk: req.OnChunk}
	s.req.OnChunk = s.chunk
	return &s.req, s
}

// chunk calls the caller's OnChunk and notes a panic or an error. The panic
// goes on, and the error is returned as is.
func (s *stream) chunk(c portico.Chunk) error {
	done := false
	defer func() {
		if !done {
			s.faulted.Store(true)
		}
	}()
	err := s.onChunk(c)
	done = true
	if err != nil {
		s.faulted.Store(true)
	}
	return err
}

// counted returns the error to count for a call that ended with err: err, or
// callerFault when the caller's OnChunk failed during the call (s is nil when
// the call does not stream).
func (s *stream) counted(err error) error {
	if s != nil && s.faulted.Load() {
		return callerFault
	}
	return err
}
