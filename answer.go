package portico

// Answer returns resp and err as a layer passes them on, with the one repair
// every layer makes to a [Model] that broke its contract: neither a Response
// nor an error becomes (nil, [ErrNilResponse]), class InvalidResponse, a
// fault of the route. Anything else, even both a Response and an error, is
// returned unchanged. It composes with Generate:
//
//	resp, err := portico.Answer(next.Generate(ctx, req))
func Answer(resp *Response, err error) (*Response, error) {
	if resp == nil && err == nil {
		return nil, ErrNilResponse
	}
	return resp, err
}
