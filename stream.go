package portico

import "sync/atomic"

// StreamWatch watches the chunks of one streamed call on their way to the
// caller's [Request.OnChunk]: whether one reached the caller, and whether the
// caller's OnChunk failed. It is the one mechanism by which a layer learns
// this (retry, breaker, fallback, the routers, trace); a [ChunkGate] lets the
// layer act on each chunk first (time it, refuse it, hold it back).
//
// The zero value is ready; [StreamWatch.Watch] starts it, once per call. Its
// reports are atomic: OnChunk is called from one goroutine at a time, but a
// layer may read them from another (a timer's, or after an inner layer gave
// up on a goroutine that still streams). A layer usually embeds a StreamWatch
// in the per-call state it already allocates; the watch then costs one
// allocation (its OnChunk method value) and saves the request's clone.
type StreamWatch struct {
	req    Request
	caller func(Chunk) error
	gate   ChunkGate
	flags  atomic.Uint32
}

// The bits of StreamWatch.flags.
const (
	watchDelivered uint32 = 1 << iota // a chunk was handed to the caller's OnChunk
	watchFailed                       // the caller's OnChunk returned an error or panicked
	watchUngated                      // the gate asked not to be called again (Ungate)
)

// ChunkGate decides, for a [StreamWatch], what becomes of each chunk before
// it reaches the caller. Layers implement it on their per-call state, so
// that a gate costs no allocation.
type ChunkGate interface {
	// GateChunk is called for every chunk, in order, from the goroutine that
	// sends it; delivered reports whether an earlier chunk reached the
	// caller. pass true hands c to the caller's OnChunk; pass false holds it
	// back (the sender gets nil, nothing counts as delivered). A non-nil err
	// refuses c: it is returned to the sender as is.
	GateChunk(c Chunk, delivered bool) (pass bool, err error)
}

// Watch starts w on req and returns the request to pass on: when req streams,
// w's own copy of req (the caller may set its other fields, such as Model)
// whose OnChunk runs gate (nil passes every chunk) and then req.OnChunk;
// otherwise req itself, and w stays idle. req is never modified.
func (w *StreamWatch) Watch(req *Request, gate ChunkGate) *Request {
	if req.OnChunk == nil {
		return req
	}
	w.req = *req
	w.caller = req.OnChunk
	w.gate = gate
	if gate == nil {
		w.req.OnChunk = w.Deliver // nothing to gate: one call less a chunk
	} else {
		w.req.OnChunk = w.onChunk
	}
	return &w.req
}

// onChunk is the OnChunk of a watch with a gate (Watch).
func (w *StreamWatch) onChunk(c Chunk) error {
	if f := w.flags.Load(); f&watchUngated == 0 {
		pass, err := w.gate.GateChunk(c, f&watchDelivered != 0)
		if err != nil || !pass {
			return err
		}
	}
	return w.Deliver(c)
}

// Deliver hands c to the caller's OnChunk as if the gate had passed it: w
// then reports it delivered, and a failure of the caller's OnChunk as
// CallerFailed. A gate calls it to release, later or rewritten, text it held
// back (package fallback joining a continuation to the text the caller
// has). It must be called from the goroutine that sends the chunks, after
// [StreamWatch.Watch] started w on a streamed request.
func (w *StreamWatch) Deliver(c Chunk) error {
	if w.flags.Load()&watchDelivered == 0 {
		w.flags.Or(watchDelivered)
	}
	ok := false
	defer func() {
		if !ok { // the caller's OnChunk panicked: its fault; the panic goes on
			w.flags.Or(watchFailed)
		}
	}()
	err := w.caller(c)
	ok = true
	if err != nil {
		w.flags.Or(watchFailed)
	}
	return err
}

// Ungate stops the watch from calling its gate for the chunks after the
// one being judged. A gate that needs only the first chunk (to time it)
// calls it from GateChunk, so the rest of the stream costs it nothing.
func (w *StreamWatch) Ungate() { w.flags.Or(watchUngated) }

// Delivered reports whether a chunk was handed to the caller's OnChunk (after
// which no layer may retry or fall back: the caller may have shown it).
func (w *StreamWatch) Delivered() bool { return w.flags.Load()&watchDelivered != 0 }

// CallerFailed reports whether the caller's OnChunk returned an error or
// panicked: the caller's fault, which says nothing about the route.
func (w *StreamWatch) CallerFailed() bool { return w.flags.Load()&watchFailed != 0 }
