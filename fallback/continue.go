package fallback

import (
	"context"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/due"
)

// continuation is the state of a request that may continue a broken stream
// (Request.ContinueOnBreak): the text the caller has, and the breaks so far.
// Only such requests allocate it; the others take none of these paths.
type continuation struct {
	text   strings.Builder // the text of every chunk delivered, in order
	tools  bool            // a chunk without text (a tool call's) was delivered
	failed bool            // the caller's OnChunk failed
	breaks int             // attempts that delivered chunks, then failed

	// The last attempt: what it delivered, and the usage it billed when it
	// broke (its error's, else estimated).
	chunks, bytes int
	usage         portico.Usage

	billed portico.Usage  // summed over the breaks
	last   *portico.Route // the route of the last break, until it is tried again
	lastIx int            // its index in Config.Routes
}

// begin prepares an attempt of a request that may continue: w keeps the
// delivered text, and when the request continues an answer (its Prefix is
// set since a break) the request sent is rt's form of it and w joins the
// continuation to the text the caller has.
func (r *request) begin(ctx context.Context, w *watch, rt *portico.Route) *portico.Request {
	c := r.cont
	w.c = c
	c.chunks, c.bytes, c.usage = 0, 0, portico.Usage{}
	if r.req.Prefix == "" {
		return r.req
	}
	w.seam = &portico.Seam{Delivered: r.req.Prefix}
	portico.Observe(ctx, portico.Event{Kind: portico.EventContinue, Route: rt.Name, Attempt: c.breaks,
		Reason: rt.Capabilities.Continuation.String()})
	return rt.RequestFor(r.req)
}

// keep is the gate of an attempt that may continue: it notes each chunk
// delivered and, when the attempt continues an answer, delivers what the
// Seam keeps of it instead.
func (w *watch) keep(c portico.Chunk) (bool, error) {
	if c.Text == "" { // a tool call's progress: no text to join
		w.c.tools = true
		return true, nil
	}
	if w.seam == nil {
		w.note(c.Text)
		return true, nil
	}
	out, err := w.seam.Next(c.Text)
	if err != nil || out == "" {
		return false, err
	}
	w.note(out)
	return false, w.Deliver(portico.Chunk{Text: out})
}

// note records text delivered to the caller.
func (w *watch) note(text string) {
	w.chunks++
	w.bytes += len(text)
	w.c.text.WriteString(text)
}

// end completes an attempt of a request that may continue: a continuation
// that answered flushes its Seam; one that delivered chunks and failed is a
// break.
func (r *request) end(w *watch, req *portico.Request, resp *portico.Response, err error) (*portico.Response, error) {
	c := r.cont
	c.chunks, c.bytes = w.chunks, w.bytes
	c.failed = c.failed || w.CallerFailed()
	if err != nil {
		if w.chunks > 0 {
			r.broken(w, req, err)
		}
		return resp, err
	}
	if resp != nil && w.seam != nil {
		if serr := r.flushSeam(w); serr != nil {
			return nil, refused(serr, resp)
		}
	}
	return resp, nil
}

// flushSeam delivers what w's Seam still holds once the continuation
// answered, or returns the Seam's refusal.
func (r *request) flushSeam(w *watch) error {
	out, err := w.seam.End()
	if err != nil || out == "" {
		return err
	}
	w.note(out)
	r.cont.chunks, r.cont.bytes = w.chunks, w.bytes
	return w.Deliver(portico.Chunk{Text: out})
}

// broken records a break, the attempt w that delivered chunks and failed
// with err: its usage, and the request that continues from the text the
// caller has.
func (r *request) broken(w *watch, req *portico.Request, err error) {
	c := r.cont
	c.breaks++
	if u := portico.UsageOf(err); u != nil {
		c.usage = *u
	} else { // a broken stream reports no usage: what it was billed, estimated
		c.usage = portico.Usage{InputTokens: r.g.cfg.Estimator.EstimateInputTokens(req), OutputTokens: max(1, w.bytes/4)}
	}
	next := r.req.Clone()
	next.Prefix = c.text.String()
	if n := r.req.MaxOutputTokens; n > 0 {
		next.MaxOutputTokens = max(1, n-w.bytes/4)
	}
	r.req = next
	r.fit = 0 // Fits passed on the request before the break, not on this one
}

// refused is the error of a continuation whose answer the Seam refused: its
// own class and cause, with the answer's usage, which was billed.
func refused(err error, resp *portico.Response) error {
	out := &portico.Error{Class: portico.ClassOf(err), Reason: "continuation refused", Model: resp.Model, Err: err}
	u := resp.Usage
	out.Usage = &u
	return out
}

// broke reports whether the last attempt delivered chunks and then failed.
func (r *request) broke() bool { return r.cont != nil && r.cont.chunks > 0 }

// continues reports whether the request may go on after its last attempt
// although chunks reached the caller.
func (r *request) continues() bool {
	c := r.cont
	return c != nil && !c.failed && !c.tools && c.breaks <= r.g.cfg.Continuations
}

// chargeBreak accounts for a broken attempt on rt that the request leaves:
// its usage goes to the answer's Usage, Cost and budget; rt is kept to
// continue the answer itself when no other can (see again).
func (r *request) chargeBreak(rt *portico.Route) {
	c := r.cont
	r.bill(rt.Capabilities.Cost(c.usage))
	c.billed = c.billed.Add(c.usage)
	c.last = rt
	for i := range r.g.cfg.Routes {
		if &r.g.cfg.Routes[i] == rt {
			c.lastIx = i
		}
	}
}

// again tries the route that broke last, once per break, at position pos
// (the last), when the candidates after it could not carry the answer on;
// done reports whether the request ended here.
func (r *request) again(ctx context.Context, pos int) (resp *portico.Response, done bool, err error) {
	for c := r.cont; c.last != nil && due.Err(ctx) == nil; {
		rt, idx := c.last, c.lastIx
		c.last = nil // a skip ends the loop; a break sets it again
		if resp, done, err := r.tryOrSkip(ctx, rt, idx, pos, r.skip(rt, idx)); done {
			return resp, true, err
		}
	}
	return nil, false, nil
}

// answer stamps rt's answer; a continuation's becomes the whole: the text
// the caller had joined to its own, the broken attempts' usage added.
func (r *request) answer(rt *portico.Route, resp *portico.Response) *portico.Response {
	resp = rt.Stamp(resp, r.hops, r.billed)
	if r.cont == nil || r.req.Prefix == "" {
		return resp
	}
	seam := portico.Seam{Delivered: r.req.Prefix}
	rest, _ := seam.Rest(resp.Text) // the stream passed the same rules
	resp.Text = r.req.Prefix + rest
	resp.Usage = resp.Usage.Add(r.cont.billed)
	return resp
}
