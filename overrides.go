package portico

import "time"

// Overrides are one request's own settings of the retry layer of the route
// that serves it (Request.Overrides): a reasoning request that needs a
// longer first-chunk timeout than the route's other traffic, a request
// that will take one attempt only. The route bounds each
// (retry.Config.Bounds): a value outside its bounds is clamped into them,
// and a route that sets no bounds keeps its own values, so a request can
// never set what the route does not allow. A zero or negative field keeps
// the route's own value. Overrides are read, never modified, by the
// layers; share one between requests freely.
type Overrides struct {
	// FirstChunk is the time a streamed attempt may take to its first
	// chunk (retry.Timeouts.FirstChunk).
	FirstChunk time.Duration
	// Attempt is the time one attempt may take (retry.Timeouts.Attempt).
	Attempt time.Duration
	// MaxAttempts is the most attempts of the call, the first included
	// (retry.Config.MaxAttempts).
	MaxAttempts int
}
