package portico

import "time"

// Route is a named [Model] with its [Capabilities]: the unit that routers,
// cascades, balancers (package route) and fallback groups (package fallback)
// choose among. A Route is a plain value; copying it copies the handles, not
// the Model.
type Route struct {
	// Name identifies the route in Response.Route, Hops, logs and spans; it
	// should be unique within a group.
	Name string
	// Model answers the route's calls; usually a stack with the route's own rate
	// limit, breaker, retry and validation around a provider adapter.
	Model Model
	// Capabilities describe what the route can do and costs.
	Capabilities Capabilities
	// Health, when non-nil, says whether the route takes calls right now (a
	// breaker's state); nil means it always does.
	Health Health
	// ModelName, when non-empty, is the Request.Model this route's Model must be
	// called with (routes of one group often serve different models behind one
	// request). Routing layers pass the request through [Route.RequestFor].
	ModelName string
}

// RequestFor returns the request to send to r: req itself when r.ModelName is
// empty or already req.Model, req has no Prefix, and r reasons or req has
// no Reasoning setting; otherwise a clone with Model set to r.ModelName,
// without the Reasoning setting when r.Capabilities.Reasoning is false,
// and, when req continues an answer ([Request.Prefix]), Messages ending
// with the prefix in the form r.Capabilities.Continuation says (the
// instruction's for ContinueNone). The caller's req is never modified.
func (r *Route) RequestFor(req *Request) *Request {
	req = r.reasoned(req) // a clone of a clone below: rare, and clear
	if req.Prefix != "" {
		c := continuationFor(req, r.Capabilities.Continuation)
		if r.ModelName != "" {
			c.Model = r.ModelName
		}
		return c
	}
	if r.ModelName == "" || r.ModelName == req.Model {
		return req
	}
	c := req.Clone()
	c.Model = r.ModelName
	return c
}

// reasoned returns req, or a clone without its Reasoning setting when r
// does not reason.
func (r *Route) reasoned(req *Request) *Request {
	if req.Reasoning == nil || r.Capabilities.Reasoning {
		return req
	}
	c := req.Clone()
	c.Reasoning = nil
	return c
}

// Health is implemented by whatever knows whether a route can take a call now,
// such as package breaker's Breaker. Its methods must be safe for concurrent
// use and must not block. Available should cost no more than an atomic load:
// routers call it for every candidate of every request; RetryAfter is asked
// only of a route that is not Available.
type Health interface {
	// Available reports whether a call sent now would be attempted (true) or
	// rejected at once (false, e.g. a breaker that is open and not yet due for a
	// probe).
	Available() bool
	// RetryAfter reports how long until a call would be attempted again: 0
	// when Available, and when that time is unknown (a half-open breaker
	// whose probes are busy). Routing layers that find no available route
	// return the earliest as their error's RetryAfter.
	RetryAfter() time.Duration
}

// Available reports whether r can take a call now: true when r.Health is nil.
func (r *Route) Available() bool { return r.Health == nil || r.Health.Available() }

// RetryAfter reports how long until r takes calls again (see
// [Health].RetryAfter): 0 when r.Health is nil.
func (r *Route) RetryAfter() time.Duration {
	if r.Health == nil {
		return 0
	}
	return r.Health.RetryAfter()
}
