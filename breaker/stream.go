package breaker

import "github.com/portico-llm/portico"

// callerFault stands, when counting outcomes, for a call that the caller's own
// Request.OnChunk ended by panicking or returning an error: the caller's fault,
// not the route's, so it is counted like a cancellation, neither failure nor
// success.
var callerFault = &portico.Error{Class: portico.Canceled, Reason: "caller's OnChunk failed"}

// stream is a streaming call's [portico.StreamWatch]: a copy of the request
// whose OnChunk notes whether the caller's panicked or returned an error.
// One allocation holds both, and a second the watch's OnChunk; a request
// that does not stream is passed on as is and costs nothing.
type stream struct{ portico.StreamWatch }

// guardStream returns the request to pass on: req itself when it does not
// stream (and a nil *stream), else a copy whose OnChunk reports the caller's
// faults to the returned *stream. The caller's req is never modified.
func guardStream(req *portico.Request) (*portico.Request, *stream) {
	if req.OnChunk == nil {
		return req, nil
	}
	s := new(stream)
	return s.Watch(req, nil), s
}

// counted returns the error to count for a call that ended with err: err, or
// callerFault when the caller's OnChunk failed during the call (s is nil when
// the call does not stream).
func (s *stream) counted(err error) error {
	if s != nil && s.CallerFailed() {
		return callerFault
	}
	return err
}
