// Package rank is the routing vocabulary that package fallback and package
// route share: one [Candidate] (a route that passed the filter, with what
// the layer learnt about it), one [Policy] shape (a score, lowest first), one
// set of policies ([ByCost], [ByLatency], [ByHealth], [Weighted]) and one
// [Table] of per-route statistics that fills a Candidate the same way in
// every layer.
//
// A routing layer filters first, with [portico.Capabilities.Fits] and
// [portico.Route.Available] (a route whose breaker is open is not a
// candidate), and ranks what remains: a [route.Router] calls the candidate
// with the lowest score, a [fallback.Group] tries its candidates in score
// order (the order of its routes among equals) and falls back down that
// list. So a policy written once orders both, and a Candidate field means
// the same in both: the Table measures latency and TTFT as exponentially
// weighted moving averages (the smoothed round-trip time of RFC 6298, whose
// gain 1/8 is [DefaultAlpha]), the share of calls that failed by the route's
// fault (the rank column of [portico.FaultOf]), how long ago the last such failure
// was, and the calls in flight.
//
// The package sits below both layers and imports only the root package, so
// neither routing package imports the other. Policies must not block: they
// run for every candidate of every request, as grpc-go's balancer.Picker
// does.
//
// [route.Router]: https://pkg.go.dev/github.com/portico-llm/portico/route#Router
// [fallback.Group]: https://pkg.go.dev/github.com/portico-llm/portico/fallback#Group
package rank
