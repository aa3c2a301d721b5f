package validate

import (
	"context"
	"strings"
	"unicode"

	"github.com/portico-llm/portico"
)

// Wrap returns next wrapped in the acceptance pipeline; the method value
// v.Wrap is a portico.Middleware. Wrap panics if next is nil, a typed nil included (portico.IsNil).
//
// The wrapped Model compiles the request's schemas first ([Validator.Prepare]:
// a Permanent error wrapping [ErrSchema], or [portico.ErrNilRequest], before
// next is called), returns next's error unchanged, and runs [Validator.Check]
// on next's answer: a rejected answer is a *portico.Error (class as Check says)
// wrapping a [*Rejection], whose Usage is a copy of the answer's (it was
// billed); an accepted one is returned, its text trimmed under
// Config.TrimSpace, its tool calls' arguments as their object's text when
// they came in another shape (see Tool calls in the package
// documentation). Each verdict is reported as a portico.EventValidation
// ("accepted" or "rejected"). A streamed answer is buffered until accepted
// unless Config.PassThroughChunks is set; an error from the caller's OnChunk
// is returned as a Canceled *portico.Error wrapping it. A continuation (a
// request with a Prefix) is judged whole, joined to the Prefix by a
// portico.Seam whose refusal is returned as it is (see Streaming in the
// package documentation).
func (v *Validator) Wrap(next portico.Model) portico.Model {
	portico.PanicIfNil(next, "validate: Wrap of a nil Model")
	return &model{v: v, next: next}
}

type model struct {
	v    *Validator
	next portico.Model
}

func (m *model) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	v := m.v
	sch, err := v.prepare(req)
	if err != nil {
		return nil, err
	}
	call, buffered := v.watched(ctx, req)
	resp, err := m.next.Generate(ctx, call)
	if err != nil {
		return nil, err
	}
	judged, err := whole(req, resp)
	if err != nil {
		return nil, err
	}
	p := pipeline{v: v}
	p.run(req, judged, sch)
	if len(p.out) > 0 {
		err := p.reject(req, resp)
		observe(ctx, resp, err)
		return nil, err
	}
	return m.accept(ctx, req, resp, &p, buffered)
}

// buffers reports whether the chunks of req's stream are held back until
// its answer is accepted: it streams, Config.PassThroughChunks is not set,
// and the pipeline inspects the text (a Schema, Config.JSON, or checks).
func (v *Validator) buffers(req *portico.Request) bool {
	return req.OnChunk != nil && !v.cfg.PassThroughChunks && (req.Schema != nil || v.decode)
}

// watched returns the request to pass on, and whether its chunks are held
// back (buffers): then req watched by a held, else req itself.
func (v *Validator) watched(ctx context.Context, req *portico.Request) (*portico.Request, bool) {
	if !v.buffers(req) {
		return req, false
	}
	h := &held{ctx: ctx}
	return h.Watch(req, h), true
}

// observe reports the verdict on resp, rejected with err or accepted (nil),
// as a portico.EventValidation.
func observe(ctx context.Context, resp *portico.Response, err error) {
	ev := portico.Event{Kind: portico.EventValidation, Class: portico.ClassOf(err), Reason: "accepted"}
	if err != nil {
		ev.Reason = "rejected"
	}
	if resp != nil {
		ev.Route = resp.Route
	}
	portico.Observe(ctx, ev)
}

// whole returns the answer to judge: resp, or for a continuation the whole
// answer, the prefix the caller has joined to the rest as the routing layer
// joins them.
func whole(req *portico.Request, resp *portico.Response) (*portico.Response, error) {
	if req.Prefix == "" || resp == nil {
		return resp, nil
	}
	rest, err := portico.Seam{Delivered: req.Prefix}.Rest(resp.Text)
	if err != nil {
		return nil, err
	}
	w := *resp
	w.Text = req.Prefix + rest
	return &w, nil
}

// accept hands an accepted answer on: its tool calls' arguments in one
// shape, its text trimmed with TrimSpace, and the text as one chunk when
// the call's chunks were held back (buffered).
func (m *model) accept(ctx context.Context, req *portico.Request, resp *portico.Response, p *pipeline, buffered bool) (*portico.Response, error) {
	if len(p.norms) > 0 {
		resp.ToolCalls = p.normalized(resp)
	}
	if m.v.cfg.TrimSpace {
		resp.Text = trimmed(req, resp.Text)
	}
	observe(ctx, resp, nil)
	if buffered {
		return deliver(req, resp)
	}
	return resp, nil
}

// deliver hands resp's text, held back, to req's OnChunk as one chunk
// (none when it is empty), and returns resp, or a Canceled *portico.Error
// wrapping OnChunk's error.
func deliver(req *portico.Request, resp *portico.Response) (*portico.Response, error) {
	if resp.Text == "" {
		return resp, nil
	}
	if err := req.OnChunk(portico.Chunk{Text: resp.Text}); err != nil {
		return nil, &portico.Error{Class: portico.Canceled, Model: resp.Model, Reason: "chunk callback failed", Err: err}
	}
	return resp, nil
}

// trimmed returns text, the answer to req, trimmed of its white space; a
// continuation's at its end only, its start having gone to the caller
// with the prefix.
func trimmed(req *portico.Request, text string) string {
	if req.Prefix != "" {
		return strings.TrimRightFunc(text, unicode.IsSpace)
	}
	return trimSpace(text)
}

// held watches a buffered call: it holds each chunk back, but tells the
// layers outside (a retry's first-chunk and gap timeouts) that the stream is
// alive.
type held struct {
	portico.StreamWatch
	ctx context.Context
}

// GateChunk reports progress and holds the chunk back.
func (h *held) GateChunk(c portico.Chunk, _ bool) (bool, error) {
	portico.Progress(h.ctx, c)
	return false, nil
}
