package portico

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/errtext"
)

// Class says what an error means for the layers above it: whether trying again
// can help, whether it says anything about the route's health, and whose fault it
// is. Every layer acts on the Class, never on message text: errors are
// classified once, before anything acts on them.
type Class uint8

// The error classes. The zero Class, OK, is the class of a nil error.
const (
	// OK is the class of a nil error.
	OK Class = iota
	// Permanent: the request is wrong on every route: Portico's own
	// validation refused it ([Request.Validate], a request no adapter can
	// encode), or no provider accepts its shape. Routing layers stop at
	// once; it never counts against a route's health. A provider's own
	// refusal (a 400) is Incompatible: another provider may accept it.
	Permanent
	// Transient: the route failed this time (500, 502, 503, 504, connection refused
	// before the request was sent). Trying again may succeed.
	Transient
	// RateLimited: the provider or a limiter refused for now (429). [Error.RetryAfter]
	// carries the hint when there is one.
	RateLimited
	// Incompatible: this route cannot serve this request (context too long, tools
	// or modality unsupported, a 400 or 422 of its provider, a provider's
	// x-should-retry: false). Never retry the same route; a capable one may
	// work. It never counts against the route's health.
	Incompatible
	// InvalidResponse: an answer came back but breaks the contract (truncated,
	// schema violation, unknown tool, malformed envelope). HTTP 200 is not success.
	InvalidResponse
	// Ambiguous: the request was sent and its outcome is unknown (a timeout after
	// the request was written). It may have been executed and billed.
	Ambiguous
	// Canceled: the caller's own context was canceled. Never a route's fault.
	Canceled
	// Deadline: the time budget ran out, or what remains cannot fit another attempt.
	Deadline
	// Rejected: refused locally without calling the model (load shed, breaker open,
	// limit reached in reject mode). From a layer wrapping several calls,
	// the last of them was refused so, and NotSent false says an earlier
	// one may have been sent ([NothingSent] reads both).
	Rejected
	// Unusable: this route cannot serve any request now, whatever the request
	// (401 or 403: its credentials; 404: its model or deployment is missing; a
	// spent quota). Never retried on the same route; another
	// route may serve the request, and the failure counts against this route's
	// health. Permanent, by contrast, says no route can serve the request.
	Unusable
)

var classNames = [...]string{
	OK:              "ok",
	Permanent:       "permanent",
	Transient:       "transient",
	RateLimited:     "rate_limited",
	Incompatible:    "incompatible",
	InvalidResponse: "invalid_response",
	Ambiguous:       "ambiguous",
	Canceled:        "canceled",
	Deadline:        "deadline",
	Rejected:        "rejected",
	Unusable:        "unusable",
}

// String returns the class's snake_case name ("rate_limited"), used in logs,
// metrics and span attributes.
func (c Class) String() string { return enum.Name(classNames[:], c, "Class") }

// Retryable reports whether trying the same route again may succeed: true for
// Transient and RateLimited, false for the rest. Ambiguous is retried too
// unless the request forbids it (see [Request.NoAmbiguousRetry]).
func (c Class) Retryable() bool { return c == Transient || c == RateLimited }

// RouteFault reports whether an error of this class says something about the
// route's health and so may count against a breaker: Transient, RateLimited,
// Ambiguous, InvalidResponse and Unusable. Permanent client errors, Incompatible
// requests, the caller's cancellation, deadlines and local rejections never do.
func (c Class) RouteFault() bool {
	switch c {
	case Transient, RateLimited, Ambiguous, InvalidResponse, Unusable:
		return true
	}
	return false
}

// classError is the type of the class sentinels: errors.Is(err, ErrTransient)
// holds for any *Error of class Transient.
type classError Class

func (e classError) Error() string { return "portico: " + Class(e).String() }

// Sentinels, one per class, to branch on with errors.Is: errors.Is(err,
// portico.ErrRateLimited) holds when err is or wraps an [*Error] whose Class is
// RateLimited. A bare context.Canceled does not match ErrCanceled; use [ClassOf],
// which maps the context errors to their classes, or [FromContext].
var (
	ErrPermanent       error = classError(Permanent)
	ErrTransient       error = classError(Transient)
	ErrRateLimited     error = classError(RateLimited)
	ErrIncompatible    error = classError(Incompatible)
	ErrInvalidResponse error = classError(InvalidResponse)
	ErrAmbiguous       error = classError(Ambiguous)
	ErrCanceled        error = classError(Canceled)
	ErrDeadline        error = classError(Deadline)
	ErrRejected        error = classError(Rejected)
	ErrUnusable        error = classError(Unusable)
)

// Error is a classified failure of a call. Every field but Class is optional.
//
// Error messages never contain prompt or answer text: Reason and the provider's
// code are short identifiers, and adapters keep provider message bodies out of
// Err unless the user opts in.
type Error struct {
	// Class says what the failure means; see [Class].
	Class Class
	// Status is the HTTP status code, when the failure came over HTTP; 0 otherwise.
	Status int
	// Code is the provider's error code ("context_length_exceeded",
	// "rate_limit_exceeded"), when it sent one.
	Code string
	// Model names the model (or route) that failed, when known.
	Model string
	// Reason is a short, content-free explanation ("breaker open", "overloaded",
	// "retry budget exhausted").
	Reason string
	// RefusedBy names the layer of this process that refused the call
	// ([ClientLimit], [RouteLimit], [CircuitBreaker], [Cooldown],
	// [Throttle], [RetryBudget]); NotRefused, the zero value, when none did.
	RefusedBy Refuser
	// RetryAfter is how long to wait before the same call could succeed: the
	// provider's Retry-After hint, or a limiter's exact wait; 0 when unknown.
	RetryAfter time.Duration
	// RateLimit is the provider's view of its limits sent with the failure; nil if none.
	RateLimit *RateLimit
	// Usage, when non-nil, is what the provider billed for the failed call: an
	// answer that came back but was rejected (validation), or a stream cut after
	// the provider reported usage. Routing layers add its cost to
	// Response.Cost, and rate limiters refund against it exactly.
	Usage *Usage
	// NotSent says that no request of the failed call left the process: it
	// was refused, canceled or out of time before any adapter wrote it (a
	// limiter's wait that ended, no time for a first attempt, a fallback
	// that called no route, a context done before the request was written),
	// so no provider can count or bill it; rate limiters give its whole
	// reservation back. False means it may have been sent; [NothingSent]
	// is the rule every layer reads. A layer that wraps the errors of
	// several calls sets it only when none was sent, and keeps each in its
	// tree (errors.Is and errors.As reach them). When the call it stopped
	// at sent nothing (a refusal) after one that was sent, its class says
	// what the caller most needs to know: package retry and [AfterSent]
	// take the sent call's (it may have been billed), package fallback
	// ranks the routes' classes; the refusal stays in its tree.
	NotSent bool
	// Err is the underlying cause; nil when there is none.
	Err error
}

// Error formats the error as "portico: class[ by R][ status N][ code C][
// model M][ retry-after D][: reason][: cause]", each part present only
// when its field is set. D is rounded to the millisecond (to the
// microsecond below one). Each thing is said once: the reason is left out
// when the class and fields, or the cause, say it already; a cause's
// leading "portico: " is dropped, and so is its class when it is e's, and
// each part of the cause (its parts are separated by ": " and "; ") that
// the message said already, a part that only names a package ("ratelimit:
// ") going with the part it introduces.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("portico: ")
	e.writeFields(&b)
	fields, cause := e.causeParts()
	if !errtext.Said(b.String(), fields) {
		b.WriteString(fields)
	}
	if e.Reason != "" && !errtext.Said(b.String(), e.Reason) && !errtext.Said(cause, e.Reason) {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	writeUnsaid(&b, cause)
	return b.String()
}

// writeFields writes the class and each field of e that is set.
func (e *Error) writeFields(b *strings.Builder) {
	b.WriteString(e.Class.String())
	if e.RefusedBy != NotRefused {
		writeField(b, " by ", e.RefusedBy.String())
	}
	if e.Status != 0 {
		writeField(b, " status ", strconv.Itoa(e.Status))
	}
	if e.Code != "" {
		writeField(b, " code ", e.Code)
	}
	if e.Model != "" {
		writeField(b, " model ", e.Model)
	}
	if e.RetryAfter > 0 {
		writeField(b, " retry-after ", RoundDuration(e.RetryAfter).String())
	}
}

func writeField(b *strings.Builder, name, value string) {
	b.WriteString(name)
	b.WriteString(value)
}

// causeParts returns the message of e's cause without its "portico: ". A
// cause of e's class would say it twice, so it keeps what follows the
// class: its fields (" model m"), which go after e's own when e has no
// reason (less a RefusedBy e says), and its reason (": ...").
func (e *Error) causeParts() (fields, cause string) {
	if e.Err == nil {
		return "", ""
	}
	fields, cause = e.unclassed(strings.TrimPrefix(e.Err.Error(), "portico: "))
	if e.RefusedBy != NotRefused {
		fields = strings.TrimPrefix(fields, " by "+e.RefusedBy.String())
	}
	return fields, cause
}

// unclassed splits cause, a message of e's cause, when it starts with e's
// class: into its fields, when e has no reason, and what follows them.
func (e *Error) unclassed(cause string) (fields, rest string) {
	rest, ok := strings.CutPrefix(cause, e.Class.String())
	switch {
	case !ok:
		return "", cause
	case rest == "":
		return "", ""
	case rest[0] == ' ' && e.Reason == "":
		fields, rest, _ = strings.Cut(rest, ": ")
		return fields, rest
	case rest[0] == ' ' || rest[0] == ':':
		return "", strings.TrimLeft(rest, ": ")
	}
	return "", cause
}

// writeUnsaid writes to b the parts of cause that b does not say yet (see
// [Error.Error]): the first after ": ", each other after the separator
// that came before it in cause, or before the parts left out just before
// it.
func writeUnsaid(b *strings.Builder, cause string) {
	if cause == "" {
		return
	}
	w := unsaid{b: b}
	parts := errtext.Parts(cause)
	for i := 0; i < len(parts); i++ {
		sep := parts[i].Sep
		var name, text string
		i, name, text = namedPart(parts, i)
		w.add(sep, name, text)
	}
}

// namedPart returns the text of parts[i] and, when parts[i] is a
// package's name introducing the next part, that name and the next part
// (i moved to it); a name that says all its part says comes back as the
// text alone.
func namedPart(parts []errtext.Part, i int) (next int, name, text string) {
	text = parts[i].Text
	if i+1 == len(parts) || parts[i+1].Sep != ": " || !errtext.IsName(text) {
		return i, "", text
	}
	name, text = text, parts[i+1].Text
	if strings.TrimSpace(text) == "" || errtext.Said(name, text) {
		return i + 1, "", name
	}
	return i + 1, name, text
}

// unsaid is writeUnsaid's writer: whether it wrote a part yet, and the
// separator of the parts left out since the last one written.
type unsaid struct {
	b       *strings.Builder
	printed bool
	carry   string
}

// add writes "name: text" (or text) after sep unless it says nothing new.
func (w *unsaid) add(sep, name, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	if errtext.Said(w.b.String(), text) {
		if w.carry == "" {
			w.carry = sep
		}
		return
	}
	w.b.WriteString(w.separator(sep))
	if name != "" {
		w.b.WriteString(name)
		w.b.WriteString(": ")
	}
	w.b.WriteString(text)
	w.printed, w.carry = true, ""
}

// separator returns what goes before the next part written, sep in cause:
// ": " before the first, else the separator of the parts left out before it.
func (w *unsaid) separator(sep string) string {
	switch {
	case !w.printed:
		return ": "
	case w.carry != "":
		return w.carry
	}
	return sep
}

// RoundDuration rounds d for a message: to the millisecond, to the
// microsecond when d is shorter than a millisecond, and not at all when it
// is shorter than a microsecond, so that "1.5s" and "250ms" read as such
// rather than "1.500213s", and a wait of 300ns does not read "0s".
func RoundDuration(d time.Duration) time.Duration {
	switch {
	case d > -time.Microsecond && d < time.Microsecond:
		return d
	case d > -time.Millisecond && d < time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// Unwrap returns the cause, so errors.Is and errors.As reach it.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's class (see [ErrTransient] and
// its siblings).
func (e *Error) Is(target error) bool {
	c, ok := target.(classError)
	return ok && Class(c) == e.Class
}

// ClassOf classifies any error. The rule, in order:
//
//   - nil is [OK];
//   - the first [*Error] in err's tree (errors.As) gives its Class;
//   - [context.Canceled] is [Canceled], [context.DeadlineExceeded] is [Deadline];
//   - anything else is [Permanent].
//
// Unknown errors are Permanent so that nothing is retried, and no route is
// blamed, on a guess: an adapter that knows an error is transient (a refused
// connection, say) must wrap it in an *Error that says so.
func ClassOf(err error) Class {
	if err == nil {
		return OK
	}
	if e := first(err); e != nil {
		return e.Class
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return Deadline
	}
	return Permanent
}

// RetryAfterOf returns the Retry-After hint of the first [*Error] in err's tree,
// or 0 when there is none.
func RetryAfterOf(err error) time.Duration {
	if e := first(err); e != nil {
		return e.RetryAfter
	}
	return 0
}

// first returns the first [*Error] in err's tree (errors.As), or nil: the
// lookup ClassOf, RetryAfterOf, RefuserOf and NothingSent share. The common
// case, err itself an *Error, costs no errors.As and no allocation.
func first(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// UsageOf returns the Usage of the first [*Error] in err's tree, depth first,
// that carries one (an outer layer's error may wrap the one that does), or nil:
// what the provider billed for a failed call. It does not allocate.
func UsageOf(err error) *Usage {
	if e, ok := err.(*Error); ok && e.Usage != nil {
		return e.Usage
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return UsageOf(u.Unwrap())
	case interface{ Unwrap() []error }:
		return usageIn(u.Unwrap())
	}
	return nil
}

// usageIn returns the first Usage UsageOf finds in the trees of errs, or nil.
func usageIn(errs []error) *Usage {
	for _, e := range errs {
		if got := UsageOf(e); got != nil {
			return got
		}
	}
	return nil
}

// FromContext returns the classified error for a done context: an [Ambiguous]
// *Error when a layer ended it for its own timeout (a cause matching
// [ErrLayerTimeout]: the work had started, its outcome is unknown), a
// [Canceled] one wrapping ctx.Err() when the caller canceled, a [Deadline] one
// when the caller's deadline passed, and nil while ctx is not done. The cause (context.Cause) is
// kept, so errors.Is(err, context.Canceled) and errors.Is(err, cause) both hold.
func FromContext(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	class, cause := ended(ctx, err)
	if errors.Is(cause, ErrLayerTimeout) {
		// A layer's own timeout, not the caller's: the work had started and
		// its outcome is unknown.
		class = Ambiguous
	}
	return &Error{Class: class, Err: cause}
}

// ended returns Deadline or Canceled by err, the error ctx ended with, and
// its cause: err, joined with context.Cause(ctx) when that differs.
func ended(ctx context.Context, err error) (Class, error) {
	cause := context.Cause(ctx)
	switch {
	case cause == nil:
		cause = err
	case cause != err:
		cause = Join(err, cause)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Deadline, cause
	}
	return Canceled, cause
}

// Gone returns, once ctx is done, the error of a call that a layer ends
// before spending or sending anything for it, and nil while ctx is not done.
// Every layer that spends (a limiter's token or slot, a breaker's probe, a
// retry budget, a route's call) asks it first, so that a request whose
// caller has gone costs nothing. The error is of class [Canceled] when ctx
// was canceled and [Deadline] when its deadline passed (a layer's own
// timeout included: nothing was sent, so no breaker counts it), wraps
// ctx.Err() and its cause (context.Cause), and has NotSent set.
func Gone(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	class, cause := ended(ctx, err)
	return &Error{Class: class, NotSent: true, Err: cause}
}

// Join returns an error wrapping errs (nil ones dropped), like [errors.Join],
// but formatted on one line, the messages separated by "; ", so that it reads
// well inside other messages and logs. It returns nil when every err is nil, and
// the error itself when only one is not.
func Join(errs ...error) error {
	n, last := 0, error(nil)
	for _, e := range errs {
		if e != nil {
			n, last = n+1, e
		}
	}
	if n < 2 {
		return last
	}
	return &joined{errs: slices.DeleteFunc(slices.Clone(errs), func(e error) bool { return e == nil })}
}

type joined struct{ errs []error }

func (j *joined) Error() string {
	var b strings.Builder
	for i, e := range j.errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

func (j *joined) Unwrap() []error { return j.errs }

// ErrLayerTimeout marks a context that a layer ended for a timeout of its own
// (a retry layer's attempt, first-chunk or chunk-gap timeout), given as the
// cause to context.WithTimeoutCause or a CancelCauseFunc (or wrapped by that
// cause, errors.Is). An adapter that sees its context end with such a cause
// reports the attempt as [Transient] when the request was not yet sent and
// [Ambiguous] when it was, rather than as the caller's [Canceled] or [Deadline].
var ErrLayerTimeout = errors.New("portico: layer timeout")

// NewLayerTimeout returns a sentinel for one layer's own timeout: an error whose
// message is msg, equal only to itself, that also matches [ErrLayerTimeout]
// under errors.Is. Layers give it as the cause when they end a context for
// their own timeout (retry's attempt timeouts, fallback's share timeout).
func NewLayerTimeout(msg string) error { return &layerTimeout{msg} }

type layerTimeout struct{ msg string }

func (e *layerTimeout) Error() string { return e.msg }

func (e *layerTimeout) Is(target error) bool { return target == ErrLayerTimeout }

// ErrDeadlineCut marks a layer timeout that only divides the caller's own
// deadline, and too short a part of it to say anything of the route's health
// (a fallback group's share of a short deadline, see fallback.Config.FaultAfter).
// The attempt is reported as any layer timeout's ([Ambiguous] once sent,
// [Transient] before), but a breaker does not count it: one tenant's short
// deadlines cannot open a healthy route's breaker for every tenant. A layer
// gives it wrapped in, or matched by, its own timeout's cause.
var ErrDeadlineCut = errors.New("portico: deadline cut")

// ErrAnswerRefused marks an answer that an acceptance check refused for what
// the request asked of it (package validate's Rejection of a schema, a
// check, a tool's arguments matches it; a blank answer does not). Its class
// says whether a retry
// or another route may fix it, but what one request asks of an answer (its
// schema, its checks) says nothing of the route's health: breakers do not
// count it, and throttles count it as the call the destination accepted it
// was, so that one tenant's unsatisfiable schema cannot open a route's
// breaker for every tenant.
var ErrAnswerRefused = errors.New("portico: answer refused")

// DeadlineCut returns timeout (a layer's own timeout cause, such as one
// [NewLayerTimeout] made) marked as a cut of the caller's deadline: it has
// timeout's message, matches what timeout matches, and matches
// [ErrDeadlineCut] too. A layer gives it as the cause of a timeout that only
// divided a short deadline of the caller's.
func DeadlineCut(timeout error) error { return deadlineCut{timeout} }

type deadlineCut struct{ timeout error }

func (e deadlineCut) Error() string        { return e.timeout.Error() }
func (e deadlineCut) Is(target error) bool { return target == ErrDeadlineCut }
func (e deadlineCut) Unwrap() error        { return e.timeout }

// ErrUnanswered marks a failure that alone is one request's, but a run of
// which, with no answer between, is a route that serves no one. Two kinds
// match it:
//
//   - an unanswered cut ([Unanswered], which matches [ErrDeadlineCut] too):
//     a cut of the caller's deadline that ended a call with no answer at
//     the end of the share of the deadline a routing layer gave it while
//     another route stood ready to follow (package fallback's share
//     shorter than Config.FaultAfter), or once a stream fell silent that
//     long. Alone it is only the caller's short deadline; a run is a route
//     hung or far too slow for every caller.
//   - a refusal not to be retried ([UnansweredRefusal]): a failure of a
//     class that would be retried (a 5xx, a 429) that the provider advised
//     not to retry (x-should-retry: false), which the adapter makes
//     [Incompatible] (not retried, the request moves on). Alone it is
//     advice about the request; a run is a route that refuses every
//     request so (a gateway in front of a dead backend, a blocked account).
//
// [IsUnanswered] tells them; [FaultOf] says how each layer reads them (a
// breaker's run of consecutive failures only, so any answer ends the run).
var ErrUnanswered = errors.New("portico: unanswered")

// Unanswered returns timeout (a layer's own timeout cause) marked as an
// unanswered cut, [ErrUnanswered], and so as a [DeadlineCut] too: a layer
// gives it as the cause of a share that ran out while another route stood
// ready.
func Unanswered(timeout error) error { return unanswered{deadlineCut{timeout}} }

type unanswered struct{ cut deadlineCut }

func (e unanswered) Error() string        { return e.cut.Error() }
func (e unanswered) Is(target error) bool { return target == ErrUnanswered }
func (e unanswered) Unwrap() error        { return e.cut }

// UnansweredRefusal returns cause (a provider's error) marked as a refusal
// not to be retried, [ErrUnanswered], but not as a cut of any deadline: it
// has cause's message and matches what cause matches. An adapter gives it
// as the Err of the [Incompatible] error it makes of a retryable failure
// (a 5xx, a 429) that the provider advised not to retry. A nil cause gives
// ErrUnanswered itself.
func UnansweredRefusal(cause error) error {
	if cause == nil {
		return ErrUnanswered
	}
	return refusal{cause}
}

type refusal struct{ cause error }

func (e refusal) Error() string        { return e.cause.Error() }
func (e refusal) Is(target error) bool { return target == ErrUnanswered }
func (e refusal) Unwrap() error        { return e.cause }

// IsUnanswered reports whether err, of class c (its [ClassOf]), is an
// unanswered failure, [ErrUnanswered]'s: an unanswered cut (Ambiguous or
// Transient) or a refusal not to be retried (Incompatible), matching it.
// Breakers count it in their run of consecutive failures only; throttles
// and adaptive limits ignore it.
func IsUnanswered(c Class, err error) bool {
	return (c == Ambiguous || c == Transient || c == Incompatible) && errors.Is(err, ErrUnanswered)
}

// IsDeadlineCut reports whether err, of class c (its [ClassOf]), is a cut of
// the caller's own deadline, [ErrDeadlineCut]'s: Ambiguous or Transient, and
// matching it. Breakers, throttles and adaptive limits do not count it as
// the route's fault.
func IsDeadlineCut(c Class, err error) bool {
	return (c == Ambiguous || c == Transient) && errors.Is(err, ErrDeadlineCut)
}

// The errors layers return for a broken [Model] contract, shared values that
// must not be modified: [ErrNilRequest] (class Permanent) when Generate is given
// a nil *Request, [ErrNilResponse] (class InvalidResponse) when a Model returns
// neither a Response nor an error.
var (
	ErrNilRequest  error = &Error{Class: Permanent, Reason: "nil request"}
	ErrNilResponse error = &Error{Class: InvalidResponse, Reason: "nil response without an error"}
)

// ErrMalformed is the cause that every adapter wraps in an [InvalidResponse]
// error for an answer that arrived but cannot be read as one: a body that is
// not valid JSON or not of the provider's shape, an answer without content or
// choices, a stream that ended without a finish reason. Match it with
// errors.Is; adapters may wrap it with their own detail.
var ErrMalformed = errors.New("portico: malformed response")
