package modeltest

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// DefaultRecordLimit is how many calls a [Fake] records when its RecordLimit is 0.
const DefaultRecordLimit = 10000

// Fake is a scripted [portico.Model]: call n (counting from 0) plays the
// [Outcome] that Func returns for it, or else Outcomes[n] (the last Outcome
// repeating once the list runs out), or else answers "ok" at once.
//
// Fake records every call it receives, up to RecordLimit, with a copy of the
// request and what the context said (attempt, deadline), and counts every call
// atomically. It is safe for concurrent use; set its fields before the first call
// and do not change them afterwards. The zero Fake is ready to use and answers
// "ok".
//
// Its overhead is small so that other packages can benchmark their middleware
// over it: a call that answers a fixed Response without delays costs one
// allocation (the caller's copy of the Response) once RecordLimit calls have
// been recorded, and a lock plus amortised growth of the record before that.
type Fake struct {
	// Outcomes is the script: call n plays Outcomes[min(n, len-1)]. Ignored when
	// Func is set.
	Outcomes []Outcome
	// Func, when non-nil, chooses the Outcome of call n for request req. It is
	// called on the caller's goroutine and must be safe for concurrent use; it
	// must not modify req.
	Func func(n int, req *portico.Request) Outcome
	// RecordLimit is how many calls are recorded for [Fake.Calls]; later calls
	// are only counted. 0 means [DefaultRecordLimit]; negative records none.
	RecordLimit int

	n     atomic.Int64
	mu    sync.Mutex
	calls []Call
	full  atomic.Bool
}

// Call is one call a [Fake] received.
type Call struct {
	// N is the call's index, counting from 0 in the order calls arrived.
	N int
	// Request is a shallow copy of the request: its own fields are safe to read
	// after the call, while its slices and maps are the caller's, which the Model
	// contract forbids anyone to modify.
	Request portico.Request
	// Attempt is the attempt a retry layer announced in the context
	// ([portico.AttemptFromContext]).
	Attempt portico.Attempt
	// Deadline is the context's deadline; zero when it had none.
	Deadline time.Time
	// Time is when the call arrived (virtual time inside a synctest bubble).
	Time time.Time
}

// NewFake returns a Fake that plays outcomes in order, repeating the last one;
// with no outcomes it answers "ok".
func NewFake(outcomes ...Outcome) *Fake { return &Fake{Outcomes: outcomes} }

// NewFakeFunc returns a Fake whose call n plays fn(n, req).
func NewFakeFunc(fn func(n int, req *portico.Request) Outcome) *Fake { return &Fake{Func: fn} }

var okOutcome = Answer("ok")

var errNilRequest error = &portico.Error{Class: portico.Permanent, Reason: "nil request"}

// Generate records and counts the call, then plays its Outcome (see [Outcome]
// for the schedule). It returns at once with [portico.FromContext]'s error when
// ctx is already done, and with the error of req.OnChunk, unchanged, when the
// callback fails. A nil req is counted and recorded (as a zero Request) and
// fails at once with a [portico.Permanent] error, Reason "nil request", as
// Portico's layers answer one, so a middleware that loses the request shows
// up as an error, not a panic.
func (f *Fake) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	n := int(f.n.Add(1) - 1)
	if !f.full.Load() {
		f.record(ctx, n, req)
	}
	if req == nil {
		return nil, errNilRequest
	}
	if ctx.Err() != nil {
		return nil, portico.FromContext(ctx)
	}
	var o Outcome
	switch {
	case f.Func != nil:
		o = f.Func(n, req)
	case len(f.Outcomes) > 0:
		o = f.Outcomes[min(n, len(f.Outcomes)-1)]
	default:
		o = okOutcome
	}
	return o.play(ctx, req)
}

func (f *Fake) record(ctx context.Context, n int, req *portico.Request) {
	limit := cmp.Or(f.RecordLimit, DefaultRecordLimit)
	c := Call{N: n, Attempt: portico.AttemptFromContext(ctx), Time: time.Now()}
	if req != nil {
		c.Request = *req
	}
	c.Deadline, _ = ctx.Deadline()
	f.mu.Lock()
	if len(f.calls) < limit {
		f.calls = append(f.calls, c)
	}
	if len(f.calls) >= limit {
		f.full.Store(true)
	}
	f.mu.Unlock()
}

// Count returns how many calls Generate has received, recorded or not.
func (f *Fake) Count() int { return int(f.n.Load()) }

// Calls returns a copy of the recorded calls, in the order they were recorded
// (under concurrency, not necessarily the order of their N).
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Requests returns pointers to copies of the recorded requests, in the order of
// [Fake.Calls].
func (f *Fake) Requests() []*portico.Request {
	calls := f.Calls()
	out := make([]*portico.Request, len(calls))
	for i := range calls {
		out[i] = &calls[i].Request
	}
	return out
}
