package portico

// Stamp sets the routing fields of resp, the answer route r gave to a routing
// layer (a fallback group, a router, a cascade, a balancer) after the layer
// left the routes of hops, in order, whose failed calls were billed billed
// (in the price unit of [Capabilities]). The one rule every routing layer
// follows:
//
//   - Route is r.Name;
//   - Hops is hops followed by resp.Hops, so the hops of a routing layer
//     inside r follow those of the layer outside;
//   - Cost is resp.Cost when a layer inside r priced the answer, else
//     r.Capabilities.Cost(resp.Usage), plus billed.
//
// hops becomes the start of resp.Hops: the caller must not reuse it. Stamp
// returns resp; it does not allocate when hops or resp.Hops is empty.
func (r *Route) Stamp(resp *Response, hops []Hop, billed float64) *Response {
	resp.Route = r.Name
	if len(hops) > 0 {
		resp.Hops = append(hops, resp.Hops...)
	}
	if resp.Cost == 0 {
		resp.Cost = r.Capabilities.Cost(resp.Usage)
	}
	resp.Cost += billed
	return resp
}
